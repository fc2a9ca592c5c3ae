"""Logic levels between registers in a Yosys `synth_xilinx` netlist (a checkout's
`python -m casper400g_dev synth --timing`).

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
  block, two of Yosys's CARRY4) a path runs along are one level, counted bit by bit from
  where the path enters the chain to where it leaves it, and rounded up once per path.
* A LUT-RAM's read (address to data) is one level; a shift register's tap address is
  treated as constant (the core uses them as fixed delays).

Each path is named by its end point's register (net name) and attributed to the module
instance that holds that register: Yosys's `$scopeinfo` cells (left by `flatten`) map an
instance path to its module, so a netlist mapped module by module and flattened afterwards
(`python -m casper400g_dev synth --timing`) gives per-module figures and still sees every
path across module boundaries whole. Without scope cells the register's source file names
the module.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Levels a cell adds between one of its inputs and its outputs.
_LUT = {f"LUT{k}": 1.0 for k in range(1, 7)}
_MUXF = {"MUXF7": 1.0, "MUXF8": 1.0, "MUXF9": 1.0}
_CARRY = {"CARRY4": 0.5, "CARRY8": 1.0}  # per 8 bits of carry: one level
_CARRY_BITS = {"CARRY4": 4, "CARRY8": 8}
_CARRY_IN = ("CI", "CYINIT", "CI_TOP")
_FREE = {"INV": 0.0, "BUF": 0.0}
_LUTRAM_READ = re.compile(r"^RAM\d+(X\d+[SD]|M\d*|X\d+DR8|X\d+SW)$")
_SEQUENTIAL = re.compile(r"^(FD[A-Z]*|RAMB\d+E\d|URAM\d+|SRLC?\d+E|DSP\w*)$")
_IO = ("IBUF", "OBUF", "IOBUF", "OBUFT", "BUFG", "BUFGCE", "BUFG_GT")

LIMIT = 6  # logic levels a path may have at 2.56 ns (docs/resources.md)
PERIOD_NS = 2.56  # the MAC (391.03 MHz) and user (390.625 MHz) clocks that LIMIT is for


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

    def through_carry(self, bits: int) -> Level:
        """This level after `bits` bits of a carry chain (8 bits: one level)."""
        return Level(self.lut, self.muxf, self.carry + bits / 8)

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
    module: str = "?"
    through: list[str] = field(default_factory=list)
    clock: str = ""
    limit: int = LIMIT

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
            "module": self.module,
            "through": self.through,
            "clock": self.clock,
            "limit": self.limit,
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


def _scopes(cells: Mapping[str, Any], top: str) -> dict[str, str]:
    """Instance path -> module name, from the `$scopeinfo` cells `flatten` leaves."""
    scopes = {"": top}
    for name, c in cells.items():
        if c["type"] != "$scopeinfo":
            continue
        attrs = c.get("attributes", {})
        mod = str(attrs.get("module_hdlname") or "")
        if not mod:
            raw = str(attrs.get("module", "")).lstrip("\\")
            mod = raw.split("\\")[1] if raw.startswith("$paramod") and "\\" in raw else raw
        scopes[name] = mod or "?"
    return scopes


def _plain(name: str) -> str:
    r"""`$flatten\u_a.\u_b.$auto$x` -> `u_a.u_b.$auto$x`: a flattened name without escapes."""
    if name.startswith("$flatten\\"):
        name = name[len("$flatten\\") :]
    return name.replace(".\\", ".").lstrip("\\")


def _scope_of(name: str, scopes: Mapping[str, str]) -> str:
    """The longest instance path in `scopes` that prefixes the flattened name `name`."""
    parts = _plain(name).split(".")
    for k in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:k])
        if prefix in scopes:
            return prefix
    return ""


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


_CLOCK_PINS = ("C", "CLK", "CLKARDCLK", "CLKBWRCLK", "WCLK")
# LUT-RAM write-address pins (end points); the other address pins are read addresses.
_LUTRAM_WRITE_ADDR = {"RAM32M16": "ADDRH", "RAM64M8": "ADDRH", "RAM32M": "ADDRD", "RAM64M": "ADDRD"}


def analyse(
    netlist: Mapping[str, Any],
    top: str | None = None,
    limit: int = LIMIT,
    clock_limits: Mapping[str, int] | None = None,
) -> dict:
    """Worst logic levels of every end point of the (flattened) top module.

    An end point clocked from a top input port named in `clock_limits` has that port's
    limit (a slower clock allows more levels); every other end point has `limit`.
    """
    clock_limits = dict(clock_limits or {})
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
    scopes = _scopes(cells, top)
    scoped = len(scopes) > 1

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
        if t == "$scopeinfo":
            continue
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

    def carry_arrivals(cname: str) -> None:
        # Bit by bit: output i of a carry cell is reached from carry-in through i+1 bits
        # of the chain and from the S/DI input of bit j <= i through i-j+1 bits, so a path
        # counts only the length of chain it really runs along (an adder tree's later
        # stages enter the chain where the earlier sum's bits arrive).
        conns = cells[cname]["connections"]
        width = _CARRY_BITS[cells[cname]["type"]]
        cin: tuple[Level, int | None] = (Level(), None)
        for port in _CARRY_IN:
            for i in conns.get(port, []):
                if isinstance(i, int) and (cin[1] is None or arrival[i].key() > cin[0].key()):
                    cin = (arrival[i], i)
        for k in range(width):
            # (a constant carry-in starts no path)
            best, best_in = (
                (cin[0].through_carry(k + 1), cin[1]) if cin[1] is not None else (Level(), None)
            )
            for port in ("S", "DI"):
                bits = conns.get(port, [])
                for j in range(min(k + 1, len(bits))):
                    i = bits[j]
                    if not isinstance(i, int):
                        continue
                    lv = arrival[i].through_carry(k - j + 1)
                    if best_in is None or lv.key() > best.key():
                        best, best_in = lv, i
            for port in ("O", "CO"):
                out = conns.get(port, [])
                if k < len(out) and isinstance(out[k], int):
                    arrival[out[k]] = best
                    pred[out[k]] = best_in

    def lutram_arrivals(cname: str) -> None:
        # A LUT-RAM read output depends on its own read address only: DOx on ADDRx
        # (RAM32M/RAM64M/RAM32M16), SPO on A (the write address), DPO on DPRA, O on A.
        conns = cells[cname]["connections"]
        dirs = cells[cname].get("port_directions", {})
        for port, bits in conns.items():
            if dirs.get(port) != "output":
                continue
            if port.startswith("DO") and len(port) == 3:
                addr = [f"ADDR{port[2]}"]
            elif port == "DPO":
                addr = [a for a in conns if a.startswith("DPRA")]
            else:
                addr = [a for a in conns if re.fullmatch(r"A\d*", a)]
            best, best_in = Level(), None
            for a in addr:
                for i in conns.get(a, []):
                    if isinstance(i, int) and (best_in is None or arrival[i].key() > best.key()):
                        best, best_in = arrival[i], i
            for ob in bits:
                if isinstance(ob, int):
                    arrival[ob] = Level(best.lut + 1, best.muxf, best.carry)
                    pred[ob] = best_in

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
            t = cells[cname]["type"]
            state[cname] = 2
            if t in _CARRY_BITS:
                carry_arrivals(cname)
                continue
            if cname in lutram_cells:
                lutram_arrivals(cname)
                continue
            best, best_in = Level(), None
            for i in ins:
                lv = arrival[i]
                if best_in is None or lv.key() > best.key():
                    best, best_in = lv, i
            arrival[b] = best.plus(t)
            pred[b] = best_in
            # Every output of this cell shares the arrival (conservative for carries).
            dirs = cells[cname].get("port_directions", {})
            for port, bits in cells[cname]["connections"].items():
                if dirs.get(port) == "output":
                    for ob in bits:
                        if isinstance(ob, int) and ob not in arrival:
                            arrival[ob] = arrival[b]
                            pred[ob] = best_in
        return arrival[bit]

    def trace(bit: int) -> tuple[str, list[str], list[str]]:
        chain: list[str] = []
        through: list[str] = []
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
            label = names.get(b, "")
            if b != bit and label and not label.startswith("$") and "$" not in label:
                bus = _bus_name(label)
                if not through or through[-1] != bus:
                    through.append(bus)
            b = pred.get(b)
        return start, list(reversed(chain)), list(reversed(through))

    in_port = {
        b: name
        for name, p in mod.get("ports", {}).items()
        if p["direction"] == "input"
        for b in p["bits"]
        if isinstance(b, int)
    }

    # End points: inputs of sequential cells and LUT-RAM write ports, and output ports.
    ends: list[tuple[str, str, int, str, str]] = []  # (label, src, bit, module, clock)
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
        lutram = cname in lutram_cells
        if lutram:
            # All cells of one LUT-RAM array are one end point: `u_x.mem.3.1` -> `u_x.mem`.
            hdl = str(c.get("attributes", {}).get("hdlname", "")).replace(" ", ".")
            reg = re.sub(r"(\.\d+)+$", "", hdl or _plain(cname))
        src = _first_src(c.get("attributes", {}))
        if not re.search(r"fhg_\w+\.s?v", src) and q is not None:
            src = net_src.get(q, src)
        scope = _scope_of(cname, scopes) if scoped else ""
        # A module flattened before mapping leaves no scope: its source file names it.
        owner = scopes[scope] if scope or _module_of(src) == "?" else _module_of(src)
        if not scoped and owner == top and _module_of(src) == "?":
            owner = "?"
        clock = next(
            (
                in_port.get(b, "")
                for pin in _CLOCK_PINS
                for b in c["connections"].get(pin, [])
                if isinstance(b, int)
            ),
            "",
        )
        for port, bits in c["connections"].items():
            if dirs.get(port) != "input" or port in _CLOCK_PINS:
                continue
            if lutram and port.startswith(("ADDR", "DPRA")) and port != _LUTRAM_WRITE_ADDR.get(t):
                continue  # a read address: its path goes on through the read
            for b in bits:
                if isinstance(b, int):
                    if lutram:
                        label = f"{reg} (LUT-RAM write)"
                    elif port == "D":
                        label = _bus_name(reg)
                    else:
                        label = f"{_bus_name(reg)} ({port})"
                    ends.append((label, src, b, owner, clock))
    for pname, p in mod.get("ports", {}).items():
        if p["direction"] == "output":
            for b in p["bits"]:
                if isinstance(b, int):
                    ends.append((f"output {pname}", "port", b, "(top outputs)", ""))

    worst: dict[str, Path_] = {}
    for label, src, b, owner, clock in ends:
        lv = visit(b)
        cur = worst.get(label)
        if cur is None:
            start, chain, through = trace(b)
            lim = clock_limits.get(clock, limit)
            worst[label] = Path_(
                label, src, lv, _bus_name(start), chain, 1, owner, through, clock, lim
            )
        else:
            cur.bits += 1
            if lv.key() > cur.level.key():
                start, chain, through = trace(b)
                cur.level, cur.start, cur.cells, cur.through = lv, _bus_name(start), chain, through

    paths = sorted(worst.values(), key=lambda p: p.level.key(), reverse=True)
    per_module: dict[str, dict[str, Any]] = {}
    for p in paths:
        m = "(registers without a source name)" if p.module == "?" else p.module
        e = per_module.setdefault(m, {"endpoints": 0, "max_levels": 0, "over_limit": 0})
        e["endpoints"] += 1
        e["max_levels"] = max(e["max_levels"], p.level.levels)
        e["over_limit"] += int(p.level.levels > p.limit)
    histogram: dict[int, int] = {}
    for p in paths:
        histogram[p.level.levels] = histogram.get(p.level.levels, 0) + 1
    return {
        "top": top,
        "limit": limit,
        "endpoints": len(paths),
        "max_levels": paths[0].level.levels if paths else 0,
        "clock_limits": clock_limits,
        "over_limit": [p.as_dict() for p in paths if p.level.levels > p.limit],
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


def estimate(
    top: str,
    limit: int = LIMIT,
    flatten: bool = False,
    cache_dir: Path | None = None,
    yosys: Sequence[str] | str | None = None,
    progress: Callable[[str], None] | None = print,
    src_dir: Path | None = None,
) -> dict[str, Any]:
    """Synthesise `top` and count its logic levels: {"synth": ..., "timing": ...}.

    The design is flattened before LUT mapping except the modules `synth.TIMING_KEEP`
    names for the top, which are mapped once each and flattened afterwards (with `flatten`,
    those are flattened too: hours for the receive path). With `cache_dir` the result is
    kept there under a digest of everything it depends on (sources, parameters, Yosys
    version, this tool's code, the limit), so an unchanged design is not synthesised again.
    `src_dir` reads the sources from another copy of the block's folder (e.g. an earlier
    commit's, for a comparison).
    """
    import hashlib
    import tempfile

    from . import synth

    cmd = synth.find_yosys(yosys)
    key = None
    if cache_dir is not None:
        digest = hashlib.sha256()
        parts: list[bytes] = [
            top.encode(),
            json.dumps(synth.CORE_PARAMS.get(top, {}), sort_keys=True).encode(),
            json.dumps(synth.TIMING_KEEP.get(top, ())).encode(),
            synth.yosys_version(cmd).encode(),
            f"flatten={flatten} limit={limit}".encode(),
            Path(synth.__file__).read_bytes(),
            Path(__file__).read_bytes(),
        ]
        for f in synth.source_files(src_dir):
            parts += [f.name.encode(), f.read_bytes()]
        for part in parts:
            digest.update(len(part).to_bytes(8, "little") + part)
        key = Path(cache_dir) / f"{top}-{digest.hexdigest()[:20]}.json"
        if key.is_file():
            if progress:
                progress(f"{top}: cached estimate {key.name}")
            return json.loads(key.read_text())
    with tempfile.TemporaryDirectory(prefix="casper400g-timing-") as tmp:
        net = Path(tmp) / "netlist.json"
        result = synth.run(
            top=top,
            flatten=flatten,
            yosys=cmd,
            progress=progress,
            netlist_out=net,
            src_dir=src_dir,
            keep=() if flatten else synth.TIMING_KEEP.get(top, ()),
        )
        report = analyse_file(net, top=None, limit=limit, clock_limits=clock_limits(top, limit))
    result.pop("stat", None)
    out = {"synth": result, "timing": report}
    if key is not None:
        key.parent.mkdir(parents=True, exist_ok=True)
        tmp_key = key.with_suffix(".tmp")
        tmp_key.write_text(json.dumps(out) + "\n")
        tmp_key.replace(key)
        # One estimate per top: drop those of earlier sources.
        for old in key.parent.glob(f"{top}-*.json"):
            if old != key:
                old.unlink(missing_ok=True)
    return out


def clock_limits(top: str, limit: int = LIMIT) -> dict[str, int]:
    """Limits of the top's slower clock ports (synth.TIMING_CLOCKS), scaled from `limit`
    at the MAC/user clock period by their period."""
    from . import synth

    return {
        port: int(limit * period / PERIOD_NS)
        for port, period in synth.TIMING_CLOCKS.get(top, {}).items()
    }


def analyse_file(
    path: Path,
    top: str | None = None,
    limit: int = LIMIT,
    clock_limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise TimingError(f"cannot read the netlist {path}: {exc}") from exc
    return analyse(data, top=top, limit=limit, clock_limits=clock_limits)


def print_report(report: Mapping[str, Any], out: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out or sys.stdout, width=160)
    lim = f"limit {report['limit']}" + "".join(
        f", {clk}: {n}" for clk, n in report.get("clock_limits", {}).items()
    )
    t = Table(title=f"{report['top']}: worst paths (logic levels; {lim})")
    for col in ("#", "levels", "LUT", "MUXF", "carry8", "end point", "module", "from"):
        t.add_column(col, justify="right" if col in ("#", "levels", "LUT", "MUXF") else "left")
    for i, p in enumerate(report["worst"], 1):
        t.add_row(
            str(i),
            str(p["levels"]),
            str(p["lut"]),
            str(p["muxf"]),
            f"{p['carry_blocks']:g}",
            p["endpoint"],
            p.get("module", p["src"]),
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
    console.print(f"max {report['max_levels']} levels: {verdict} the limit ({lim})")


def print_summary(reports: Mapping[str, Mapping[str, Any]], out: Any = None) -> None:
    """One table over several tops: the deepest path of every module, and the verdict."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out or sys.stdout, width=160)
    t = Table(title="timing estimate: deepest path per module (all tops)")
    for col in ("top", "module", "end points", "max levels", "over limit"):
        t.add_column(col, justify="left" if col in ("top", "module") else "right")
    for top, rep in reports.items():
        for name, e in rep["per_module"].items():
            t.add_row(top, name, str(e["endpoints"]), str(e["max_levels"]), str(e["over_limit"]))
    console.print(t)
    worst = max(reports.items(), key=lambda kv: kv[1]["max_levels"])
    over = sum(len(r["over_limit"]) for r in reports.values())
    console.print(
        f"deepest path of all tops: {worst[1]['max_levels']} levels ({worst[0]}); "
        + ("all within their limits" if not over else f"{over} end points over their limit")
        + f" ({worst[1]['limit']} at the MAC/user clocks)"
    )


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
