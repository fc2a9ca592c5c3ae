"""Yosys resource estimate (mlib_devel_400g.synth): the real flow on a small module."""

from __future__ import annotations

from typing import Any

import pytest

from casper400g_dev import cli
from mlib_devel_400g import synth

# fhg_tx_csum_tree registers, from its RTL: 16 first-level sums of four 16-bit words
# (18 bits each: 4 * 0xffff needs all 18), 4 second-level sums of four of those (20 bits),
# the 22-bit total, and three 3-stage sideband chains (valid, sof, eof).
CSUM_SUM_BITS = 16 * 18 + 4 * 20 + 22
CSUM_SIDEBAND_BITS = 3 * 3


@pytest.fixture(scope="module")
def yosys() -> list[str]:
    try:
        cmd = synth.find_yosys()
        # The first start of the WebAssembly build compiles it (cached afterwards).
        synth.yosys_version(cmd)
    except synth.SynthError as exc:
        pytest.skip(f"Yosys unavailable: {exc}")
    return cmd


@pytest.fixture(scope="module")
def csum(yosys: list[str]) -> dict[str, Any]:
    return synth.run("fhg_tx_csum_tree", yosys=yosys, progress=None)


def test_csum_tree_registers_all_survive(csum: dict[str, Any]) -> None:
    total = csum["total"]
    # The adder-tree registers feed the output and cannot be shift registers; the sideband
    # chains may become SRLs (each holds at most 16 stages). No register is duplicated.
    assert CSUM_SUM_BITS <= total["ff"] <= CSUM_SUM_BITS + CSUM_SIDEBAND_BITS
    assert total["ff"] + 16 * total["srl"] >= CSUM_SUM_BITS + CSUM_SIDEBAND_BITS


def test_csum_tree_logic_is_mapped(csum: dict[str, Any]) -> None:
    total = csum["total"]
    # Every one of the 1024 data bits meets another operand bit in an XOR (the propagate
    # term of a carry chain or a compressor), which only a LUT provides: at least
    # 1024 / 6 six-input LUTs.
    assert total["lut"] >= 1024 // 6
    assert total["lut"] == sum(total["lut_by_size"].values())
    assert total["carry"] > 0
    assert total["bram18"] == total["bram36"] == total["uram"] == total["dsp"] == 0
    cells = csum["cells"]
    assert total["ff"] == sum(n for c, n in cells.items() if c.startswith("FD"))
    assert set(csum["modules"]) == {"fhg_tx_csum_tree"}
    assert csum["modules"]["fhg_tx_csum_tree"]["instances"] == 1
    assert csum["yosys_version"].startswith("Yosys ")


def test_missing_module_is_a_clear_error() -> None:
    with pytest.raises(synth.SynthError, match=r"module fhg_no_such_module not found"):
        synth.run("fhg_no_such_module", progress=None)


def test_cli_reports_a_missing_module(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["synth", "--top", "fhg_no_such_module"]) == 1
    assert "fhg_no_such_module not found" in capsys.readouterr().err


def test_yosys_failure_names_the_step(yosys: list[str]) -> None:
    with pytest.raises(synth.SynthError) as exc:
        synth.run("fhg_tx_csum_tree", params={"NO_SUCH_PARAM": 1}, yosys=yosys, progress=None)
    msg = str(exc.value)
    assert "step `elaborate`" in msg
    assert "NO_SUCH_PARAM" in msg  # from the tail of Yosys's own log


def test_sources_outside_the_yosys_subset_are_refused_by_line() -> None:
    ok = (
        "function automatic logic [7:0] f(input logic [7:0] a);\n"
        "    // a return in a comment is fine\n"
        "    f = a + 8'd1;\n"
        "endfunction\n"
    )
    synth.check_yosys_subset(ok, "ok.sv")
    bad = "function automatic logic g(input logic a);\n  return a;\nendfunction\n"
    with pytest.raises(synth.SynthError, match=r"x\.sv:2: Yosys cannot read `return`"):
        synth.check_yosys_subset(bad, "x.sv")


def test_project_rtl_is_in_the_yosys_subset() -> None:
    from mlib_devel_400g import paths

    for src in paths.core_sources():
        if src.parent == paths.REGS_DIR:
            continue  # PeakRDL's output, read by Vivado and Verilator only
        synth.check_yosys_subset(src.read_text(), src.name)


def test_hierarchy_totals_multiply_instances() -> None:
    local = {
        "\\top": {"FDRE": 1, "$paramod$abc\\leaf": 2, "LUT6": 1},
        "$paramod$abc\\leaf": {"FDRE": 3, "CARRY4": 1, "RAMB18E2": 1, "LUT2": 2, "INV": 1},
    }
    mods = synth.hierarchy_counts(local, "top")
    top = mods["__top__"]["total"]
    assert top["ff"] == 1 + 2 * 3
    assert top["lut"] == 1 + 2 * 3  # INV counts as a LUT1
    assert top["bram36_equiv"] == 1.0
    assert mods["leaf"]["instances"] == 2
    assert mods["leaf"]["total"]["carry4"] == 1


def test_text_stat_parser_reads_both_layouts() -> None:
    current = (
        "=== fhg_x ===\n\n        +----------Local Count, excluding submodules.\n"
        "        | \n     2138 wires\n     2685 cells\n        1   BUFG\n"
        "      106   CARRY4\n      390   FDRE\n        1 submodules\n        1   leaf\n"
        "\n=== design hierarchy ===\n     2685 fhg_x\n"
    )
    older = (
        "=== fhg_x ===\n\n   Number of wires:                 12\n"
        "   Number of cells:                 3\n     CARRY4                          1\n"
        "     FDRE                            2\n\n"
    )
    assert synth.parse_stat_text(current) == {
        "fhg_x": {"BUFG": 1, "CARRY4": 106, "FDRE": 390, "leaf": 1}
    }
    assert synth.parse_stat_text(older) == {"fhg_x": {"CARRY4": 1, "FDRE": 2}}


def test_json_stat_links_plain_and_derived_submodules() -> None:
    # As Yosys writes it: a plain module is `\name` in "modules" but `name` as a cell type.
    text = """{"modules": {
        "\\\\top": {"num_cells_by_type": {"plain": 2, "$paramod$ab\\\\leaf": 1, "FDRE": 1}},
        "\\\\plain": {"num_cells_by_type": {"LUT3": 2, "$scopeinfo": 1}},
        "$paramod$ab\\\\leaf": {"num_cells_by_type": {"FDSE": 4}}
    }}"""
    local = synth.parse_stat_json(text)
    mods = synth.hierarchy_counts(local, "top")
    assert mods["__top__"]["total"]["lut"] == 4
    assert mods["__top__"]["total"]["ff"] == 5
    assert mods["__top__"]["total"]["other"] == {}
    assert mods["plain"]["instances"] == 2
    assert mods["leaf"]["local"]["ff"] == 4
