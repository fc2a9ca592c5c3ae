"""Logic levels between registers in a Yosys `synth_xilinx` netlist (`casper400g synth --timing`).

No vendor timing engine is available, so the timing estimate counts what dominates a path's
delay in the fabric: the LUTs, wide-mux stages and carry blocks between two sequential
elements. At the core's clocks (391.03 MHz MAC, 390.625 MHz user: a 2.56 ns period) a path
of more than about six such levels is at risk once routing is added.

Counting rules (documented in docs/resources.md):

* Start points: flip-flop, block RAM, shift-register and LUT-RAM outputs, and the top's
  input ports. End points: their data, enable and reset inputs, and the top's outputs.
* A LUT (LUT1..LUT6) is one level; an `INV` is none (Vivado folds it into a neighbouring
  LUT); a MUXF7/MUXF8 stage is one level.
* Carry chains count by their length: every 8 bits of carry (one UltraScale+/Versal carry
  block, two of Yosys's CARRY4) a path runs through are one level.
* A LUT-RAM's read (address to data) is one level; a shift register's tap address is
  treated as constant (the core uses them as fixed delays).

Each path is named by its end point's register (net name) and attributed to the source
file and line of that register, so per-module figures come out of a flattened netlist.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Levels a cell adds between one of its inputs and its outputs.
_LUT = {f"LUT{k}": 1.0 for k in range(1, 7)}
_MUXF = {"MUXF7": 1.0, "MUXF8": 1.0, "MUXF9": 1.0}
_CARRY = {"CARRY4": 0.5, "CARRY8": 1.0}  # per 8 bits of carry: one level
_FREE = {"INV": 0.0, "BUF": 0.0}
_LUTRAM_READ = re.compile(r"^RAM\d+(X\d+[SD]|M\d*|X\d+DR8|X\d+SW)$")
_SEQUENTIAL = re.compile(r"^(FD[A-Z]*|RAMB\d+E\d|URAM\d+|SRLC?\d+E|DSP\w*)$")
_IO = ("IBUF", "OBUF", "IOBUF", "OBUFT", "BUFG", "BUFGCE", "BUFG_GT")

LIMIT = 6  # logic levels a path may have at 2.56 ns (docs/resources.md)


class TimingError(RuntimeError):
    """The netlist could not be analysed."""


@dataclass(frozen=True)
class Level:
    """What lies on the worst path into one point: LUTs, wide muxes, carry blocks."""

    lut: int = 0
    muxf: int = 0
    carry: float = 0.0  # carry blocks of 8 bits (a CARRY4 is half of one)

    @property
    def levels(self) -> int:
        return self.lut + self.muxf + int(-(-self.carry // 1))

    def key(self) -> tuple[float, int]:
        return (self.lut + self.muxf + self.carry, self.lut)

    def plus(self, cell_type: str) -> Level:
        if cell_type in _LUT:
            return Level(self.lut + 1, self.muxf, self.carry)
        if cell_type in _MUXF:
            return Level(self.lut, self.muxf + 1, self.carry)
        if cell_type in _CARRY:
            return Level(self.lut, self.muxf, self.carry + _CARRY[cell_type])
        if _LUTRAM_READ.match(cell_type):
            return Level(self.lut + 1, self.muxf, self.carry)
        return self


@dataclass
class Path_:
    """The worst path into one end point (a register bus, bits merged)."""

    endpoint: str
    src: str
    level: Level
    start: str
    cells: list[str] = field(default_factory=list)
    bits: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "src": self.src,
            "levels": self.level.levels,
            "lut": self.level.lut,
            "muxf": self.level.muxf,
            "carry_blocks": self.level.carry,
            "start": self.start,
            "cells": self.cells,
            "bits": self.bits,
        }


def _is_box(module: Mapping[str, Any]) -> bool:
    attrs = module.get("attributes", {})
    return any(int(str(attrs.get(a, "0")) or "0", 2) for a in ("blackbox", "whitebox"))


def _is_seq(cell_type: str) -> bool:
    return bool(_SEQUENTIAL.match(cell_type))


def _bus_name(name: str) -> str:
    """`u_lane.s2_hf [17]` / `s2_hf[17]` -> the bus name without the bit index."""
    return re.sub(r"\s*\[\d+\]$", "", name)


def _module_of(src: str) -> str:
    m = re.search(r"(fhg_\w+)\.s?v", src)
    return m.group(1) if m else "?"


def _first_src(attrs: Mapping[str, Any]) -> str:
    src = str(attrs.get("src", ""))
    first = src.split("|")[0]
    # `path/fhg_x.sv:12.3-12.40` -> `fhg_x.sv:12`
    m = re.search(r"([\w.]+\.s?v):(\d+)", first)
    return f"{m.group(1)}:{m.group(2)}" if m else first


def _net_srcs(module: Mapping[str, Any]) -> dict[int, str]:
    """Where each bit's public net is declared (file:line), for cells mapped without one."""
    srcs: dict[int, str] = {}
    for name, net in module.get("netnames", {}).items():
        if int(net.get("hide_name", 0)) or name.startswith("$"):
            continue
        src = _first_src(net.get("attributes", {}))
        if re.search(r"fhg_\w+\.s?v", src):
            for b in net["bits"]:
                if isinstance(b, int):
                    srcs.setdefault(b, src)
    return srcs


def _net_names(module: Mapping[str, Any]) -> dict[int, str]:
    """A readable name per bit: public names first, then the deepest in the hierarchy
    (where the register is declared, not a port it drives), then the shortest."""
    names: dict[int, tuple[tuple[int, int, int], str]] = {}
    for name, net in module.get("netnames", {}).items():
        hidden = int(net.get("hide_name", 0)) or name.startswith("$")
        bits = net["bits"]
        for i, b in enumerate(bits):
            if not isinstance(b, int):
                continue
            label = name if len(bits) == 1 else f"{name}[{i}]"
            rank = (int(hidden), -label.count("."), len(label))
            cur = names.get(b)
            if cur is None or rank < cur[0]:
                names[b] = (rank, label)
    return {b: v[1] for b, v in names.items()}


def analyse(netlist: Mapping[str, Any], top: str | None = None, limit: int = LIMIT) -> dict:
    """Worst logic levels of every end point of the (flattened) top module."""
    mods = netlist["modules"]
    if top is None:
        tops = [n for n, m in mods.items() if int(m.get("attributes", {}).get("top", 0) or 0)]
        top = tops[0] if tops else next(iter(mods))
    if top not in mods:
        raise TimingError(f"netlist has no module {top} (modules: {', '.join(mods)})")
    mod = mods[top]
    cells: dict[str, Any] = mod["cells"]
    # Primitives (LUT6, FDRE, ...) come with their library definitions: boxes, not logic.
    submods = [
        c["type"] for c in cells.values() if c["type"] in mods and not _is_box(mods[c["type"]])
    ]
    if submods:
        raise TimingError(
            f"{top} instantiates {', '.join(sorted(set(submods)))}: analyse a flattened netlist"
        )
    names = _net_names(mod)
    net_src = _net_srcs(mod)

    # Driver of every bit, and which inputs each combinational output depends on.
    driver: dict[int, str] = {}
    for cname, c in cells.items():
        dirs = c.get("port_directions", {})
        for port, bits in c["connections"].items():
            if dirs.get(port) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = cname
    comb_inputs: dict[str, list[int]] = {}
    seq: set[str] = set()
    for cname, c in cells.items():
        t = c["type"]
        dirs = c.get("port_directions", {})
        if t in _IO:
            raise TimingError(f"I/O buffer {t} in the netlist: synthesise with -noiopad")
        if _is_seq(t):
            seq.add(cname)
            continue
        ins: list[int] = []
        for port, bits in c["connections"].items():
            if dirs.get(port) != "input":
                continue
            if _LUTRAM_READ.match(t) and not port.startswith(("ADDR", "A", "DPRA")):
                continue  # write data/enable: an end point, not part of the read path
            ins.extend(b for b in bits if isinstance(b, int))
        comb_inputs[cname] = ins
    lutram_cells = {n for n, c in cells.items() if _LUTRAM_READ.match(c["type"])}

    # Arrival: worst Level at every bit, with the predecessor bit for the path trace.
    arrival: dict[int, Level] = {}
    pred: dict[int, int | None] = {}
    state: dict[str, int] = {}  # 1: visiting, 2: done

    def visit(bit: int) -> Level:
        # Iterative DFS over driving cells (netlists are deep: no recursion).
        if bit in arrival:
            return arrival[bit]
        stack: list[tuple[int, int]] = [(bit, 0)]
        while stack:
            b, phase = stack.pop()
            if b in arrival:
                continue
            cname = driver.get(b)
            if cname is None or cname in seq:
                arrival[b] = Level()
                pred[b] = None
                continue
            ins = comb_inputs[cname]
            if phase == 0:
                if state.get(cname) == 1:
                    raise TimingError(f"combinational loop through {cname}")
                state[cname] = 1
                stack.append((b, 1))
                stack.extend((i, 0) for i in ins if i not in arrival)
                continue
            best, best_in = Level(), None
            for i in ins:
                lv = arrival[i]
                if best_in is None or lv.key() > best.key():
                    best, best_in = lv, i
            t = cells[cname]["type"]
            arrival[b] = best.plus(t)
            pred[b] = best_in
            state[cname] = 2
            # Every output of this cell shares the arrival (conservative for carries).
            dirs = cells[cname].get("port_directions", {})
            for port, bits in cells[cname]["connections"].items():
                if dirs.get(port) == "output":
                    for ob in bits:
                        if isinstance(ob, int) and ob not in arrival:
                            arrival[ob] = arrival[b]
                            pred[ob] = best_in
        return arrival[bit]

    def trace(bit: int) -> tuple[str, list[str]]:
        chain: list[str] = []
        b: int | None = bit
        start = names.get(bit, str(bit))
        guard = 0
        while b is not None and guard < 10000:
            guard += 1
            cname = driver.get(b)
            if cname is None or cname in seq:
                start = names.get(b, f"<{cells[cname]['type'] if cname else 'input'}>")
                break
            chain.append(cells[cname]["type"])
            b = pred.get(b)
        return start, list(reversed(chain))

    # End points: inputs of sequential cells and LUT-RAM write ports, and output ports.
    ends: list[tuple[str, str, int]] = []  # (label, src, bit)
    for cname, c in cells.items():
        t = c["type"]
        if cname not in seq and cname not in lutram_cells:
            continue
        dirs = c.get("port_directions", {})
        q = None
        for port, bits in c["connections"].items():
            if dirs.get(port) == "output":
                q = next((b for b in bits if isinstance(b, int)), None)
                break
        reg = names.get(q, cname) if q is not None else cname
        src = _first_src(c.get("attributes", {}))
        if not re.search(r"fhg_\w+\.s?v", src) and q is not None:
            src = net_src.get(q, src)
        for port, bits in c["connections"].items():
            if dirs.get(port) != "input" or port in ("C", "CLK", "CLKARDCLK", "CLKBWRCLK", "WCLK"):
                continue
            if cname in lutram_cells and port.startswith(("ADDR", "DPRA")) and t != "RAM32M16":
                continue
            for b in bits:
                if isinstance(b, int):
                    label = _bus_name(reg) if port in ("D",) else f"{_bus_name(reg)} ({port})"
                    ends.append((label, src, b))
    for pname, p in mod.get("ports", {}).items():
        if p["direction"] == "output":
            for b in p["bits"]:
                if isinstance(b, int):
                    ends.append((f"output {pname}", "port", b))

    worst: dict[str, Path_] = {}
    for label, src, b in ends:
        lv = visit(b)
        cur = worst.get(label)
        if cur is None:
            start, chain = trace(b)
            worst[label] = Path_(label, src, lv, _bus_name(start), chain)
        else:
            cur.bits += 1
            if lv.key() > cur.level.key():
                start, chain = trace(b)
                cur.level, cur.start, cur.cells = lv, _bus_name(start), chain

    paths = sorted(worst.values(), key=lambda p: p.level.key(), reverse=True)
    per_module: dict[str, dict[str, Any]] = {}
    for p in paths:
        m = _module_of(p.src) if p.src != "port" else "(top outputs)"
        m = "(registers without a source name)" if m == "?" else m
        e = per_module.setdefault(m, {"endpoints": 0, "max_levels": 0, "over_limit": 0})
        e["endpoints"] += 1
        e["max_levels"] = max(e["max_levels"], p.level.levels)
        e["over_limit"] += int(p.level.levels > limit)
    histogram: dict[int, int] = {}
    for p in paths:
        histogram[p.level.levels] = histogram.get(p.level.levels, 0) + 1
    return {
        "top": top,
        "limit": limit,
        "endpoints": len(paths),
        "max_levels": paths[0].level.levels if paths else 0,
        "over_limit": [p.as_dict() for p in paths if p.level.levels > limit],
        "worst": [p.as_dict() for p in paths[:20]],
        "per_module": dict(sorted(per_module.items())),
        "levels_histogram": dict(sorted(histogram.items())),
        "carry_chains": carry_chains(cells),
    }


def carry_chains(cells: Mapping[str, Any]) -> dict[str, Any]:
    """Carry chains (CARRY4 cells linked CO[3] -> CI) by length in bits."""
    carries = {n: c for n, c in cells.items() if c["type"] in _CARRY}
    by_ci: dict[int, str] = {}
    for n, c in carries.items():
        ci = c["connections"].get("CI", [])
        if ci and isinstance(ci[0], int):
            by_ci[ci[0]] = n
    linked: set[str] = set()
    nxt: dict[str, str] = {}
    for n, c in carries.items():
        co = c["connections"].get("CO", [])
        if co and isinstance(co[-1], int) and co[-1] in by_ci:
            nxt[n] = by_ci[co[-1]]
            linked.add(by_ci[co[-1]])
    lengths: dict[int, int] = {}
    longest: tuple[int, str] = (0, "")
    for n, c in carries.items():
        if n in linked:
            continue
        k, cur = 0, n
        while cur is not None and k < 10000:
            k += 1
            cur = nxt.get(cur)
        width = 4 * k if c["type"] == "CARRY4" else 8 * k
        lengths[width] = lengths.get(width, 0) + 1
        if width > longest[0]:
            longest = (width, _first_src(c.get("attributes", {})))
    return {
        "chains": sum(lengths.values()),
        "by_bits": dict(sorted(lengths.items())),
        "longest_bits": longest[0],
        "longest_src": longest[1],
    }


def analyse_file(path: Path, top: str | None = None, limit: int = LIMIT) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise TimingError(f"cannot read the netlist {path}: {exc}") from exc
    return analyse(data, top=top, limit=limit)


def print_report(report: Mapping[str, Any], out: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out or sys.stdout, width=160)
    t = Table(title=f"{report['top']}: worst paths (logic levels; limit {report['limit']})")
    for col in ("#", "levels", "LUT", "MUXF", "carry8", "end point", "source", "from"):
        t.add_column(col, justify="right" if col in ("#", "levels", "LUT", "MUXF") else "left")
    for i, p in enumerate(report["worst"], 1):
        t.add_row(
            str(i),
            str(p["levels"]),
            str(p["lut"]),
            str(p["muxf"]),
            f"{p['carry_blocks']:g}",
            p["endpoint"],
            p["src"],
            p["start"],
        )
    console.print(t)
    m = Table(title="per module (end points in the module's registers)")
    for col in ("module", "end points", "max levels", f"> {report['limit']}"):
        m.add_column(col, justify="left" if col == "module" else "right")
    for name, e in report["per_module"].items():
        m.add_row(name, str(e["endpoints"]), str(e["max_levels"]), str(e["over_limit"]))
    console.print(m)
    cc = report["carry_chains"]
    console.print(
        f"levels histogram (end points): {report['levels_histogram']}\n"
        f"carry chains: {cc['chains']}, by length in bits {cc['by_bits']}, "
        f"longest {cc['longest_bits']} bits at {cc['longest_src']}"
    )
    verdict = "within" if not report["over_limit"] else f"{len(report['over_limit'])} over"
    console.print(f"max {report['max_levels']} levels: {verdict} the limit of {report['limit']}")


def main(argv: Iterable[str] | None = None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    if not args:
        print("usage: python -m mlib_devel_400g.timing NETLIST.json [TOP]", file=sys.stderr)
        return 2
    rep = analyse_file(Path(args[0]), args[1] if len(args) > 1 else None)
    print_report(rep)
    return 0 if not rep["over_limit"] else 1


if __name__ == "__main__":
    sys.exit(main())
