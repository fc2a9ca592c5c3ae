"""Logic-level counting (mlib_devel_400g.timing) on hand-built netlists, whose depths are
known by construction, and the `python -m casper400g_dev synth --timing` command line."""

from __future__ import annotations

from typing import Any

import pytest

from casper400g_dev import cli
from mlib_devel_400g import timing

_DIRS = {
    "FDRE": {"C": "input", "CE": "input", "R": "input", "D": "input", "Q": "output"},
    "INV": {"I": "input", "O": "output"},
    "MUXF7": {"I0": "input", "I1": "input", "S": "input", "O": "output"},
    "CARRY4": {
        "CI": "input",
        "CYINIT": "input",
        "DI": "input",
        "S": "input",
        "O": "output",
        "CO": "output",
    },
}


class Net:
    """A tiny netlist builder: bits are numbered from 10 (0/1 are constants in Yosys)."""

    def __init__(self) -> None:
        self.cells: dict[str, Any] = {}
        self.names: dict[str, Any] = {}
        self.ports: dict[str, Any] = {}
        self.next = 10

    def bit(self) -> int:
        self.next += 1
        return self.next

    def cell(self, ctype: str, conns: dict[str, list[int]], src: str = "fhg_x.sv:1") -> None:
        if ctype.startswith("LUT"):
            k = int(ctype[3:])
            dirs = {f"I{i}": "input" for i in range(k)} | {"O": "output"}
        else:
            dirs = _DIRS[ctype]
        self.cells[f"c{len(self.cells)}"] = {
            "type": ctype,
            "connections": conns,
            "port_directions": dirs,
            "attributes": {"src": f"/x/{src}.1-1.5"},
        }

    def ff(self, d: int, name: str, src: str = "fhg_x.sv:1") -> int:
        q = self.bit()
        self.cell("FDRE", {"C": [2], "CE": ["1"], "R": ["0"], "D": [d], "Q": [q]}, src)
        self.names[name] = {"bits": [q], "hide_name": 0}
        return q

    def lut_chain(self, start: int, n: int) -> int:
        b = start
        for _ in range(n):
            o = self.bit()
            self.cell("LUT2", {"I0": [b], "I1": ["0"], "O": [o]})
            b = o
        return b

    def netlist(self) -> dict[str, Any]:
        return {
            "modules": {
                "top": {
                    "attributes": {"top": "00000000000000000000000000000001"},
                    "ports": self.ports,
                    "cells": self.cells,
                    "netnames": self.names,
                }
            }
        }


def two_paths(depth_a: int, depth_b: int) -> Net:
    n = Net()
    seed = n.bit()
    q0 = n.ff(seed, "src_q")
    n.ff(n.lut_chain(q0, depth_a), "deep_q", "fhg_deep.sv:7")
    n.ff(n.lut_chain(q0, depth_b), "shallow_q", "fhg_shallow.sv:9")
    return n


def test_lut_levels_are_counted_between_registers() -> None:
    rep = timing.analyse(two_paths(7, 3).netlist(), limit=6)
    assert rep["max_levels"] == 7
    worst = rep["worst"][0]
    assert (worst["endpoint"], worst["levels"], worst["lut"]) == ("deep_q", 7, 7)
    assert worst["start"] == "src_q" and worst["src"] == "fhg_deep.sv:7"
    assert [p["endpoint"] for p in rep["over_limit"]] == ["deep_q"]
    assert rep["per_module"]["fhg_deep"]["max_levels"] == 7
    assert rep["per_module"]["fhg_shallow"] == {"endpoints": 1, "max_levels": 3, "over_limit": 0}


def test_within_the_limit_nothing_is_reported() -> None:
    rep = timing.analyse(two_paths(6, 2).netlist(), limit=6)
    assert rep["max_levels"] == 6 and rep["over_limit"] == []


def test_inverters_are_free_and_wide_muxes_count() -> None:
    n = Net()
    q = n.ff(n.bit(), "a_q")
    inv = n.bit()
    n.cell("INV", {"I": [q], "O": [inv]})
    l1 = n.lut_chain(inv, 2)
    m = n.bit()
    n.cell("MUXF7", {"I0": [l1], "I1": [q], "S": [q], "O": [m]})
    n.ff(m, "b_q")
    w = timing.analyse(n.netlist())["worst"][0]
    assert (w["levels"], w["lut"], w["muxf"]) == (3, 2, 1)
    assert w["cells"] == ["INV", "LUT2", "LUT2", "MUXF7"]


def test_carry_chains_count_by_length() -> None:
    """Four CARRY4 in a chain (16 bits) are two 8-bit carry blocks: two levels."""
    n = Net()
    q = n.ff(n.bit(), "a_q")
    ci = q
    for _ in range(4):
        o = [n.bit() for _ in range(4)]
        co = [n.bit() for _ in range(4)]
        n.cell(
            "CARRY4",
            {"CI": [ci], "CYINIT": ["0"], "DI": [q] * 4, "S": [q] * 4, "O": o, "CO": co},
        )
        ci = co[3]
    n.ff(ci, "sum_q")
    rep = timing.analyse(n.netlist())
    w = rep["worst"][0]
    assert (w["levels"], w["carry_blocks"]) == (2, 2.0)
    assert rep["carry_chains"]["by_bits"] == {16: 1}
    assert rep["carry_chains"]["longest_bits"] == 16


def test_a_combinational_loop_is_an_error() -> None:
    n = Net()
    a, b = n.bit(), n.bit()
    n.cell("LUT1", {"I0": [b], "O": [a]})
    n.cell("LUT1", {"I0": [a], "O": [b]})
    n.ff(a, "q")
    with pytest.raises(timing.TimingError, match="combinational loop"):
        timing.analyse(n.netlist())


def test_hierarchical_netlists_are_refused() -> None:
    net = two_paths(1, 1).netlist()
    net["modules"]["sub"] = {"cells": {}, "ports": {}, "netnames": {}}
    net["modules"]["top"]["cells"]["u_sub"] = {"type": "sub", "connections": {}}
    with pytest.raises(timing.TimingError, match="flattened"):
        timing.analyse(net, top="top")


def test_cli_timing_reports_a_missing_module(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["synth", "--timing", "--top", "fhg_no_such_module"]) == 1
    assert "fhg_no_such_module not found" in capsys.readouterr().err


def test_a_path_counts_only_the_carry_it_runs_along() -> None:
    """An adder's top bit feeding a second adder's top bit: the second chain adds one bit
    of carry, not its whole length (8 bits into the first chain, 1 into the second)."""
    n = Net()
    q = n.ff(n.bit(), "a_q")
    o1 = [n.bit() for _ in range(4)]
    co1 = [n.bit() for _ in range(4)]
    n.cell(
        "CARRY4", {"CI": ["0"], "CYINIT": ["0"], "DI": [q] * 4, "S": [q] * 4, "O": o1, "CO": co1}
    )
    o2 = [n.bit() for _ in range(4)]
    co2 = [n.bit() for _ in range(4)]
    n.cell(
        "CARRY4",
        {"CI": [co1[3]], "CYINIT": ["0"], "DI": [q] * 4, "S": [q] * 4, "O": o2, "CO": co2},
    )
    top = o2[3]  # bit 7 of the first 8-bit sum
    o3 = [n.bit() for _ in range(4)]
    co3 = [n.bit() for _ in range(4)]
    n.cell(
        "CARRY4",
        {
            "CI": ["0"],
            "CYINIT": ["0"],
            "DI": ["0"] * 4,
            "S": ["0", "0", "0", top],
            "O": o3,
            "CO": co3,
        },
    )
    n.ff(o3[3], "sum2_q")
    n.ff(o3[0], "low_q")
    rep = timing.analyse(n.netlist())
    paths = {p["endpoint"]: p for p in rep["worst"]}
    assert paths["sum2_q"]["carry_blocks"] == pytest.approx(9 / 8)
    assert paths["sum2_q"]["levels"] == 2
    assert paths["low_q"]["carry_blocks"] == 0.0  # bit 0 of the second adder: no carry in


def test_lutram_outputs_depend_on_their_own_address() -> None:
    """RAM32M16: DOA follows ADDRA (here a register), not the write address ADDRH (here
    three LUTs deep); the write port itself is an end point."""
    n = Net()
    ra = n.ff(n.bit(), "raddr_q")
    wa = n.lut_chain(n.ff(n.bit(), "waddr_q"), 3)
    doa = n.bit()
    dirs = {
        "ADDRA": "input",
        "ADDRH": "input",
        "DIA": "input",
        "WE": "input",
        "WCLK": "input",
        "DOA": "output",
    }
    n.cells["ram"] = {
        "type": "RAM32M16",
        "connections": {
            "ADDRA": [ra],
            "ADDRH": [wa],
            "DIA": [ra],
            "WE": ["1"],
            "WCLK": [2],
            "DOA": [doa],
        },
        "port_directions": dirs,
        "attributes": {"src": "/x/fhg_x.sv:3.1-3.5", "hdlname": "u_f bank0.0.0"},
    }
    n.ff(doa, "rd_q")
    rep = timing.analyse(n.netlist())
    paths = {p["endpoint"]: p for p in rep["worst"]}
    assert paths["rd_q"]["levels"] == 1
    assert paths["u_f.bank0 (LUT-RAM write)"]["levels"] == 3


def test_a_slower_clock_has_its_own_limit() -> None:
    """End points clocked from a port named in clock_limits may have more levels."""
    n = Net()
    n.ports["axil_clk"] = {"direction": "input", "bits": [3]}
    q = n.ff(n.bit(), "src_q")
    d = n.lut_chain(q, 8)
    qq = n.bit()
    n.cells["slow_ff"] = {
        "type": "FDRE",
        "connections": {"C": [3], "CE": ["1"], "R": ["0"], "D": [d], "Q": [qq]},
        "port_directions": _DIRS["FDRE"],
        "attributes": {"src": "/x/fhg_slow.sv:2.1-2.5"},
    }
    n.names["slow_q"] = {"bits": [qq], "hide_name": 0}
    n.ff(n.lut_chain(q, 7), "fast_q")
    rep = timing.analyse(n.netlist(), limit=6, clock_limits={"axil_clk": 9})
    assert [p["endpoint"] for p in rep["over_limit"]] == ["fast_q"]
    slow = next(p for p in rep["worst"] if p["endpoint"] == "slow_q")
    assert (slow["clock"], slow["limit"], slow["levels"]) == ("axil_clk", 9, 8)
    assert timing.clock_limits("fhg_stats_rx") == {"axil_clk": 9}


def test_registers_are_attributed_to_their_instance() -> None:
    """After `flatten`, $scopeinfo cells map instance paths to modules."""
    net = two_paths(7, 3).netlist()
    cells = net["modules"]["top"]["cells"]
    cells["u_lane"] = {
        "type": "$scopeinfo",
        "connections": {},
        "attributes": {"module_hdlname": "fhg_lane"},
    }
    # rename the deep register's cell into the instance
    deep = next(
        k
        for k, c in cells.items()
        if c["type"] == "FDRE"
        and c["connections"]["Q"] == net["modules"]["top"]["netnames"]["deep_q"]["bits"]
    )
    cells["$flatten\\u_lane.$auto$ff"] = cells.pop(deep)
    rep = timing.analyse(net, limit=6)
    assert rep["per_module"]["fhg_lane"]["max_levels"] == 7
    assert rep["per_module"]["fhg_shallow"]["max_levels"] == 3  # no scope: its source file
