"""Shared pytest options, and the fixtures that install real external tools."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import ipaddress
import os
import re
import resource
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pytest

from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.fpg import FpgBlock, FpgDevice


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow", action="store_true", help="also run long soak/fuzz tests (marked slow)"
    )
    parser.addoption(
        "--long",
        action="store_true",
        help="RX accounting mix with 10^6 frames instead of 20 000 (hours of simulation)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


# ---------------------------------------------------------------- external tools
# Real tools (the reference casperfpga, pyenv's Pythons) are installed into venvs cached
# under .cache/, keyed by what they were built from. Outside CI a missing tool skips the
# test; under CI=true it fails it, since CI must run them.
REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE = REPO_ROOT / ".cache"
KATCP_PIN = "katcp==0.9.3"  # what casperfpga 0.7.2 requires (>=0.9.3,<1), and its pins


# What one libFuzzer target may use beyond the peak of the process that starts it.
FUZZ_RSS_BUDGET_MB = 2048


def fuzz_rss_limit() -> str:
    """libFuzzer's memory limit, counted from this process's peak: Linux hands a process's
    peak resident size on through fork and exec, and libFuzzer reads that peak, so a target
    started from a test worker that once held gigabytes would be out of memory at its first
    input under the default limit."""
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return f"-rss_limit_mb={peak_mb + FUZZ_RSS_BUDGET_MB}"


def need_tool(message: str) -> None:
    """Skip outside CI, fail under CI=true: the tool ``message`` names is missing."""
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI must run this test)")
    pytest.skip(message)


def ensure_qemu() -> None:
    """QEMU for the soft-RoCE VM tests: CI (as root) installs Debian's qemu-system-x86 when
    it is missing; otherwise need_tool."""
    from verification.softroce.vm import qemu_available

    if qemu_available():
        return
    if os.environ.get("CI") == "true" and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "qemu-system-x86"],
        ):
            subprocess.run(cmd, env=env, check=False, capture_output=True)
    if not qemu_available():
        need_tool("qemu-system-x86_64 not found (Debian package qemu-system-x86)")


def reference_tree(name: str) -> Path:
    """A tree of the shared reference copies (``shared/reference/<name>`` beside the
    checkout or one of its parents), or ``$CASPER400G_REFERENCE/<name>``."""
    roots = (
        [Path(os.environ["CASPER400G_REFERENCE"])] if "CASPER400G_REFERENCE" in os.environ else []
    )
    roots += [p / "shared" / "reference" for p in REPO_ROOT.parents]
    for root in roots:
        if (root / name).is_dir():
            return root / name
    need_tool(f"reference tree {name!r} not found (set CASPER400G_REFERENCE)")
    raise AssertionError("unreachable")


def reference_commit(tree: Path) -> str:
    """The commit ``SOURCES`` records for ``tree`` (falls back to a hash of its files)."""
    sources = tree.parent / "SOURCES"
    if sources.is_file():
        for line in sources.read_text().splitlines():
            words = line.split()
            if words and words[0] == tree.name and re.fullmatch(r"[0-9a-f]{40}", words[-1]):
                return words[-1]
    digest = hashlib.sha256()
    for f in sorted(p for p in tree.rglob("*") if p.is_file() and ".git" not in p.parts):
        digest.update(f.relative_to(tree).as_posix().encode() + f.read_bytes())
    return digest.hexdigest()[:40]


def cached_venv(
    name: str,
    python: str,
    packages: list[str],
    source: Path | None = None,
    version: str | None = None,
) -> Path:
    """``.cache/<name>/bin/python``: a venv of ``python`` with ``packages`` (and the
    project at ``source``, copied first: pip builds in the tree it installs from).

    ``version`` pins the version of a katversion project (casperfpga): without git in the
    copy katversion falls back to the current minute, and a build that crosses a minute
    boundary then fails pip's metadata check (its wheel's version differs)."""
    # Imported here: the tests of casperfpga_ext and the board server run in environments
    # without the toolflow's distribution too (tests/project/test_packaging.py).
    from casper400g_twin.cache import cache_lock

    venv = CACHE / name
    stamp = venv / ".installed"
    with cache_lock(CACHE / f"{name}.lock"):
        if not stamp.is_file():
            shutil.rmtree(venv, ignore_errors=True)
            run = functools.partial(subprocess.run, capture_output=True, text=True, timeout=900)
            made = run([python, "-m", "venv", str(venv)])
            if made.returncode:
                need_tool(f"{python} cannot make a venv: {made.stderr.strip()[-500:]}")
            args = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *packages]
            with tempfile.TemporaryDirectory(prefix=f"{name}-") as tmp:
                if source is not None:
                    copy = Path(tmp) / source.name
                    shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".git"))
                    for p in copy.rglob("*"):
                        p.chmod(p.stat().st_mode | stat.S_IWUSR)
                    if version is not None:
                        (copy / "___version___").write_text(version + "\n")
                    args.append(str(copy))
                installed = run(args)
            if installed.returncode:
                shutil.rmtree(venv, ignore_errors=True)
                need_tool(f"installing {packages} {source or ''} failed: {installed.stderr[-800:]}")
            stamp.write_text(" ".join(packages) + "\n")
    return venv / "bin" / "python"


@pytest.fixture(scope="session")
def casperfpga_python() -> str:
    """A Python with the real casperfpga (the reference tree) and katcp 0.9.3 from PyPI;
    casperfpga_ext comes from this checkout through PYTHONPATH (see ``casperfpga_env``)."""
    tree = reference_tree("casperfpga")
    commit = reference_commit(tree)[:12]
    python = "{}.{}".format(*sys.version_info[:2])
    release = re.search(r"^## \[(\d+\.\d+\.\d+)\]", (tree / "CHANGELOG.md").read_text(), re.M)
    return str(
        cached_venv(
            f"casperfpga-{commit}-py{python}",
            sys.executable,
            [KATCP_PIN],
            tree,
            version=release.group(1) if release else "0.0",
        )
    )


@pytest.fixture(scope="session")
def casperfpga_env() -> dict[str, str]:
    """The environment to run casperfpga scripts in: this checkout's packages importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    return env


def pyenv_pythons(minors: Iterable[str]) -> dict[str, str]:
    """The newest pyenv-installed interpreter of each ``3.x`` in ``minors``."""
    root = os.environ.get("PYENV_ROOT")
    if not root and shutil.which("pyenv"):
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    root = root or str(Path.home() / ".pyenv")
    found: dict[str, str] = {}
    for minor in minors:
        versions = sorted(
            (Path(root) / "versions").glob(f"{minor}.*"),
            key=lambda p: [int(x) if x.isdigit() else -1 for x in p.name.split(".")],
        )
        pythons = [v / "bin" / "python" for v in versions if (v / "bin" / "python").is_file()]
        if pythons:
            found[minor] = str(pythons[-1])
    return found


@contextlib.contextmanager
def board_server(
    fpg: Path,
    mem: Path,
    base: int,
    timeout: float,
    options: Sequence[str] = (),
    python: str = sys.executable,
    cwd: Path | None = None,
) -> Iterator[tuple[int, bytes]]:
    """``casper400g-board-server`` serving ``mem`` (the bus from ``base``) for ``fpg`` on an
    ephemeral port (its default address: localhost), as a user starts it, with ``options``
    (e.g. ``--allow-upload``), under ``python`` (in ``cwd``: a checkout's root runs its
    packages whatever ``python`` has installed): yields the port and what it printed before
    listening, and stops it afterwards."""
    argv = [python, "-m", "casper400g_board_server", "--fpg", str(fpg)]
    argv += ["--mem", str(mem), "--base", hex(base), "--port", "0", *options]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0, cwd=cwd
    )
    try:
        assert proc.stdout is not None
        out = b""
        deadline = time.monotonic() + timeout
        while b"listening on" not in out or not out.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0 and select.select([proc.stdout], [], [], left)[0], out
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, out
            out += chunk
        yield int(out.split(b"listening on 127.0.0.1:")[1].split()[0]), out
    finally:
        proc.terminate()
        proc.wait(timeout)
        if proc.stdout is not None:
            proc.stdout.close()


def tcp_listeners(port: int) -> set[str]:
    """The addresses TCP ``port`` listens on, as the kernel lists them (/proc/net/tcp and
    tcp6): independent of what the listening program reports."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, _, local_port = local.partition(":")
            if state != "0A" or int(local_port, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            # The kernel prints each 32-bit word of the address in host byte order.
            if sys.byteorder == "little":
                raw = b"".join(raw[k : k + 4][::-1] for k in range(0, len(raw), 4))
            found.add(str(ipaddress.ip_address(raw)))
    return found


# ---------------------------------------------------------------- a small .fpg design
# What the casperfpga_ext and board-server tests serve: a scratch register and one core.
GBE_BASE = 0x10000
FPG_DEVICES = [FpgDevice("sys_scratch", 0x0, 0x4), FpgDevice("gbe0", GBE_BASE, regmap.BLOCK_SIZE)]
GBE_BLOCK = FpgBlock(
    "gbe0",
    "xps:fourhundred_gbe",
    {"fab_ip": "10.0.0.10", "fab_mac": "02:00:0a:00:00:0a", "fab_udp": "7148"},
)


def fake_vivado(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """A ``vivado`` running the shell ``script`` (in the build's vivado/ folder), first on
    PATH for this test: what the toolflow's backend runs when Vivado is installed."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    fake = bindir / "vivado"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return fake
