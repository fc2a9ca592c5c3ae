"""Timing estimate of the core's datapaths: no register-to-register path may have more
logic levels than the limit (Yosys `synth_xilinx`, flattened; docs/resources.md).

Each top is synthesised once (a few minutes on two cores); the test fails naming the
paths over the limit, worst first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from mlib_devel_400g import synth, timing

TOPS = ["fhg_tx_path"]
# The deepest path each top may have. The aim is timing.LIMIT (6) everywhere; these are the
# depths of today's RTL (docs/resources.md lists the paths above 6), so a change that makes
# any path deeper fails here, and each pipelining step lowers its top's figure.
LIMITS = {"fhg_tx_path": 13}


@pytest.fixture(scope="module", params=TOPS)
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    try:
        cmd = synth.find_yosys()
        synth.yosys_version(cmd)
    except synth.SynthError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"Yosys unavailable: {exc}")
    net: Path = tmp_path_factory.mktemp("timing") / f"{request.param}.json"
    synth.run(request.param, flatten=True, yosys=cmd, progress=None, netlist_out=net)
    return timing.analyse_file(net, limit=LIMITS[request.param])


def test_no_path_exceeds_the_logic_level_limit(report: dict[str, Any]) -> None:
    over = report["over_limit"]
    detail = "; ".join(
        f"{p['endpoint']} ({p['src']}, from {p['start']}): {p['levels']} levels" for p in over[:10]
    )
    assert not over, f"{report['top']}: {len(over)} paths above {report['limit']}: {detail}"


def test_the_analysis_saw_the_whole_design(report: dict[str, Any]) -> None:
    # Thousands of register end points and a non-trivial worst path: an empty or
    # mis-read netlist cannot pass the limit test by having no paths.
    assert report["endpoints"] > 1000
    assert report["max_levels"] >= 3
    assert sum(report["levels_histogram"].values()) == report["endpoints"]
