"""Boot image of the soft-RoCE test VM, built from Debian packages only.

The VM runs Debian's stock kernel (package ``linux-image-amd64``), whose ``rdma_rxe``
module is Linux's own RoCEv2 implementation. Its initramfs holds only Debian's static
busybox, the kernel modules the VM needs (virtio PCI/net, 9p, ``rdma_rxe`` and
``ib_uverbs`` with their dependencies) and a short ``/init``; every other program (``ip``,
``rdma``, libibverbs and its rxe provider, the verbs sink) comes from the host's own
filesystem, shared read-only into the VM over virtio-9p, so nothing is installed twice.

The packages are fetched with ``apt-get download`` and unpacked with ``dpkg-deb`` (no
root needed, the host's own kernel is untouched). The result is cached under
``.cache/softroce/<key>/`` where the key hashes the two package versions and this
module's init script, so a new Debian kernel or a changed init rebuilds it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_ROOT = REPO_ROOT / ".cache" / "softroce"

KERNEL_METAPACKAGE = "linux-image-amd64"
BUSYBOX_PACKAGE = "busybox-static"

# Modules loaded in the VM (their dependencies are added): the virtio NIC and 9p shares,
# the soft-RoCE device, the user verbs interface, and the crc32 shash rxe computes the
# ICRC with (the kernel cannot load it on demand: the initramfs has no modprobe).
ROOT_MODULES = (
    "virtio_pci",
    "virtio_net",
    "9pnet_virtio",
    "9p",
    "crc32_generic",
    "rdma_rxe",
    "ib_uverbs",
)

# The 9p tags the init script mounts: the host's root (read-only) and the exchange folder.
HOST_ROOT_TAG = "hostroot"
XCHG_TAG = "xchg"
# Where the exchange folder appears inside the VM (a tmpfs mount point in the chroot).
VM_XCHG_DIR = "/run/softroce"
# Run inside the host-root chroot once the VM is up; written by the caller into xchg.
RUN_SCRIPT = "run.sh"

INIT_SCRIPT = f"""#!/bin/busybox sh
# casper400g soft-RoCE VM init: load modules, mount the host's root read-only over 9p,
# chroot into it and run the exchange folder's {RUN_SCRIPT}, then power off.
/bin/busybox mkdir -p /bin /proc /sys /dev /host
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules.list); do
  insmod "/modules/$m.ko" || echo "softroce-init: insmod $m failed"
done
msize=512000
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=$msize \\
  {HOST_ROOT_TAG} /host || echo "softroce-init: mounting the host root failed"
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t devtmpfs devtmpfs /host/dev
mount -t tmpfs tmpfs /host/tmp
mount -t tmpfs tmpfs /host/run
mkdir -p /host{VM_XCHG_DIR}
mount -t 9p -o trans=virtio,version=9p2000.L,msize=$msize {XCHG_TAG} /host{VM_XCHG_DIR} \\
  || echo "softroce-init: mounting the exchange folder failed"
echo "softroce-init: up after $(cut -d' ' -f1 /proc/uptime) s"
chroot /host /bin/sh {VM_XCHG_DIR}/{RUN_SCRIPT}
echo "softroce-init: {RUN_SCRIPT} exited with $?"
sync
poweroff -f
"""


class ImageError(RuntimeError):
    """The VM image cannot be built (a package is unavailable or malformed)."""


@dataclass(frozen=True)
class Package:
    name: str
    version: str


@dataclass(frozen=True)
class VmImage:
    kernel: Path
    initramfs: Path
    kernel_release: str


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise ImageError(f"{cmd[0]} not found: the VM image needs Debian's apt tools") from exc
    if res.returncode != 0:
        raise ImageError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout


def _apt_show(*packages: str) -> dict[str, str]:
    """``apt-cache show`` of each package's candidate version (one call: it is slow).

    Refreshes the package lists once, as root, when apt does not know a package.
    """
    cmd = ["apt-cache", "show", "--no-all-versions", *packages]
    try:
        text = _run(cmd)
    except ImageError:
        if os.geteuid() != 0:
            raise
        _run(["apt-get", "update", "-qq"])
        text = _run(cmd)
    records = {}
    for record in text.split("\n\n"):
        m = re.search(r"^Package: (\S+)$", record, re.MULTILINE)
        if m:
            records[m.group(1)] = record
    missing = [p for p in packages if p not in records]
    if missing:
        raise ImageError(f"apt-cache show: no record for {', '.join(missing)}")
    return records


def _field(control: str, name: str, package: str) -> str:
    m = re.search(rf"^{name}: (.+)$", control, re.MULTILINE)
    if not m:
        raise ImageError(f"apt-cache show {package}: no {name} field")
    return m.group(1).strip()


def resolve_packages() -> tuple[Package, Package]:
    """The kernel image package ``linux-image-amd64`` points at, and busybox-static."""
    records = _apt_show(KERNEL_METAPACKAGE, BUSYBOX_PACKAGE)
    depends = _field(records[KERNEL_METAPACKAGE], "Depends", KERNEL_METAPACKAGE)
    m = re.search(r"(linux-image-[0-9][^\s(,]*)\s*\(=\s*([^)\s]+)\)", depends)
    if not m:
        raise ImageError(f"{KERNEL_METAPACKAGE} depends on no versioned kernel: {depends!r}")
    kernel = Package(m.group(1), m.group(2))
    version = _field(records[BUSYBOX_PACKAGE], "Version", BUSYBOX_PACKAGE)
    return kernel, Package(BUSYBOX_PACKAGE, version)


def cache_key(kernel: Package, busybox: Package) -> str:
    h = hashlib.sha256()
    for part in (kernel.name, kernel.version, busybox.version, INIT_SCRIPT, *ROOT_MODULES):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


_DEPENDS_RE = re.compile(rb"(?:^|\x00)depends=([^\x00]*)\x00")


def module_name(path: Path) -> str:
    return path.name.removesuffix(".ko").replace("-", "_")


def module_depends(ko: bytes) -> list[str]:
    """The ``depends=`` entry of a module's .modinfo (what ``modinfo -F depends`` prints)."""
    m = _DEPENDS_RE.search(ko)
    if m is None:
        return []
    return [d.replace("-", "_") for d in m.group(1).decode().split(",") if d]


def module_load_order(modules: dict[str, Path], roots: Iterable[str]) -> list[str]:
    """``roots`` and everything they depend on, each after its dependencies."""
    order: list[str] = []
    state: dict[str, bool] = {}  # False while visiting, True when placed

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if state.get(name) is True:
            return
        if state.get(name) is False:
            raise ImageError(f"module dependency cycle: {' -> '.join((*chain, name))}")
        if name not in modules:
            raise ImageError(f"module {name!r} (needed by {chain or 'the VM'}) is not shipped")
        state[name] = False
        for dep in module_depends(modules[name].read_bytes()):
            visit(dep, (*chain, name))
        state[name] = True
        order.append(name)

    for root in roots:
        visit(root.replace("-", "_"), ())
    return order


class CpioWriter:
    """A "newc" cpio archive, the format the kernel unpacks an initramfs from."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._ino = 1

    def _entry(
        self, name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0)
    ) -> None:
        fields = (
            self._ino, mode, 0, 0, 2 if stat.S_ISDIR(mode) else 1, 0, len(data),
            0, 0, rdev[0], rdev[1], len(name) + 1, 0,
        )  # fmt: skip
        self._ino += 1
        header = b"070701" + b"".join(f"{v:08X}".encode() for v in fields)
        blob = header + name.encode() + b"\0"
        blob += b"\0" * (-len(blob) % 4)
        blob += data + b"\0" * (-len(data) % 4)
        self._parts.append(blob)

    def directory(self, name: str) -> None:
        self._entry(name, stat.S_IFDIR | 0o755)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def char_device(self, name: str, major: int, minor: int) -> None:
        self._entry(name, stat.S_IFCHR | 0o600, rdev=(major, minor))

    def getvalue(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        return b"".join(self._parts)


def _download(packages: Iterable[Package], dest: Path) -> dict[str, Path]:
    packages = list(packages)
    cmd = ["apt-get", "download", *(f"{p.name}={p.version}" for p in packages)]
    try:
        _run(cmd, cwd=dest)
    except ImageError:
        # Stale package lists name versions the mirror no longer has: refresh once.
        if os.geteuid() != 0:
            raise
        _run(["apt-get", "update", "-qq"])
        _run(cmd, cwd=dest)
    debs: dict[str, Path] = {}
    for p in packages:
        found = sorted(dest.glob(f"{p.name}_*.deb"))
        if not found:
            raise ImageError(f"apt-get download {p.name}={p.version} left no .deb in {dest}")
        debs[p.name] = found[0]
    return debs


def build_initramfs(busybox: bytes, modules: dict[str, Path], order: list[str]) -> bytes:
    cpio = CpioWriter()
    for d in ("bin", "dev", "proc", "sys", "host", "modules"):
        cpio.directory(d)
    cpio.char_device("dev/console", 5, 1)
    cpio.file("bin/busybox", busybox, 0o755)
    cpio.symlink("bin/sh", "busybox")
    cpio.file("init", INIT_SCRIPT.encode(), 0o755)
    cpio.file("modules.list", ("\n".join(order) + "\n").encode())
    for name in order:
        cpio.file(f"modules/{name}.ko", modules[name].read_bytes())
    return cpio.getvalue()


def build_image(cache_root: Path = CACHE_ROOT) -> VmImage:
    """The cached kernel + initramfs for the current Debian packages (built if missing)."""
    kernel_pkg, busybox_pkg = resolve_packages()
    out = cache_root / cache_key(kernel_pkg, busybox_pkg)
    kernel, initramfs, release_file = out / "vmlinuz", out / "initramfs.cpio", out / "release"
    if kernel.is_file() and initramfs.is_file() and release_file.is_file():
        return VmImage(kernel, initramfs, release_file.read_text().strip())
    cache_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="build-", dir=cache_root) as tmp_name:
        tmp = Path(tmp_name)
        debs = _download((kernel_pkg, busybox_pkg), tmp)
        root = tmp / "root"
        for deb in debs.values():
            _run(["dpkg-deb", "-x", str(deb), str(root)])
        vmlinuz = sorted((root / "boot").glob("vmlinuz-*"))
        if len(vmlinuz) != 1:
            raise ImageError(f"{kernel_pkg.name}: expected one /boot/vmlinuz-*, got {vmlinuz}")
        release = vmlinuz[0].name.removeprefix("vmlinuz-")
        mod_dir = root / "lib" / "modules" / release / "kernel"
        modules = {module_name(p): p for p in mod_dir.rglob("*.ko")}
        order = module_load_order(modules, ROOT_MODULES)
        bb = root / "bin" / "busybox"
        if not bb.is_file():
            raise ImageError(f"{busybox_pkg.name} has no /bin/busybox")
        stage = tmp / "out"
        stage.mkdir()
        shutil.copyfile(vmlinuz[0], stage / "vmlinuz")
        (stage / "initramfs.cpio").write_bytes(build_initramfs(bb.read_bytes(), modules, order))
        (stage / "release").write_text(release + "\n")
        (stage / "packages").write_text(
            f"{kernel_pkg.name} {kernel_pkg.version}\n{busybox_pkg.name} {busybox_pkg.version}\n"
        )
        try:
            stage.rename(out)
        except OSError:
            if not (out / "release").is_file():  # else a concurrent build finished first
                raise
    return VmImage(kernel, initramfs, release)
