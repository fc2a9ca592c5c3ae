"""Yosys synth_xilinx (xcup) of the example design's generated top, the core blackboxed
(Yosys cannot read PeakRDL's structs; `python -m casper400g_dev synth` estimates the core
itself) and the tone source too (a separate, minutes-long run: examples/pktgen_400g/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import toolflow_sim
from mlib_devel_400g import synth as yosys
from mlib_devel_400g.toolflow import synth


def test_generated_top_synthesises(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    build = toolflow_sim.build_example(tmp_path / "build")
    # The tone source (64 sample lanes, ~21k LUT) takes Yosys minutes: boxed here, its
    # figure measured once (examples/pktgen_400g/README.md).
    result = synth(build.build_dir, progress=None, blackboxes=("fhg_tone_gen",))
    with capsys.disabled():
        print()
        yosys.print_table(result)
    total = result["total"]
    # The core is a blackbox of its real port list; everything else is mapped to cells.
    assert total["other"] == {"fhg_core": 1, "fhg_tone_gen": 1}
    # Six From-Processor registers hold 32 bits each on both sides of their crossing.
    assert total["ff"] >= 6 * 2 * 32
    assert total["lut"] > 0
    assert (total["bram18"], total["bram36"], total["dsp"]) == (0, 0, 0)
    assert result["sources"][-1] == "top.v"


# Minutes of Yosys on CI's two cores for figures docs/resources.md records; the one-port
# top above keeps the synthesis path itself in every run.
@pytest.mark.slow
def test_two_port_top_synthesises(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """examples/pktgen2x400g: two cores and two generators on one bus. Each core is its own
    blackbox (the core's figure, twice, is in docs/resources.md); the rest, the bus and
    both generators with their register crossings, is mapped."""
    build = toolflow_sim.build_example(tmp_path / "build", design=toolflow_sim.TWO_PORT_DESIGN)
    result = synth(build.build_dir, progress=None, blackboxes=("fhg_tone_gen",))
    with capsys.disabled():
        print()
        yosys.print_table(result)
    total = result["total"]
    assert total["other"] == {"fhg_core": 2, "fhg_tone_gen": 2}
    # Each generator's six From-Processor registers, on both sides of their crossing.
    assert total["ff"] >= 2 * 6 * 2 * 32
    assert (total["bram18"], total["bram36"], total["dsp"]) == (0, 0, 0)
    assert result["sources"][-1] == "top.v"
