"""Timing estimate of the core: no register-to-register path may have more logic levels than
its top's limit (Yosys `synth_xilinx`, each module mapped on its own, then flattened for the
analysis; docs/resources.md).

The tops of `synth.TIMING_TOPS` together cover every module of fhg_core.f that Yosys reads
(a test keeps it so). Each top is synthesised once per source state: the estimate is kept
in .cache/timing under a digest of the sources, the tool and the limit, so a rerun on
unchanged RTL costs nothing, and a clean checkout (CI) runs them all (a few minutes on two
cores). The test fails naming the paths over the limit, worst first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from mlib_devel_400g import synth, timing

CACHE = Path(__file__).resolve().parent.parent / ".cache" / "timing"
TOPS = list(synth.TIMING_TOPS)
# The deepest path each top may have: timing.LIMIT (6) is the aim; a top above it names
# today's depth (docs/resources.md lists its paths), so no change can make it deeper.
LIMITS: dict[str, int] = {}


@pytest.fixture(scope="module", params=TOPS)
def report(request: pytest.FixtureRequest) -> Any:
    try:
        cmd = synth.find_yosys()
        synth.yosys_version(cmd)
    except synth.SynthError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"Yosys unavailable: {exc}")
    top = request.param
    limit = LIMITS.get(top, timing.LIMIT)
    return timing.estimate(top, limit=limit, cache_dir=CACHE, yosys=cmd, progress=None)["timing"]


def test_no_path_exceeds_the_logic_level_limit(report: dict[str, Any]) -> None:
    over = report["over_limit"]
    detail = "; ".join(
        f"{p['endpoint']} ({p.get('module', p['src'])}, from {p['start']}): {p['levels']} levels"
        for p in over[:10]
    )
    assert not over, f"{report['top']}: {len(over)} paths above {report['limit']}: {detail}"


def test_the_analysis_saw_the_whole_design(report: dict[str, Any]) -> None:
    # Register end points in every module of the top and a non-trivial worst path: an empty
    # or mis-read netlist cannot pass the limit test by having no paths.
    assert report["endpoints"] >= 10
    assert report["max_levels"] >= 2
    assert sum(report["levels_histogram"].values()) == report["endpoints"]
    seen = set(report["per_module"])
    missing = synth.instantiated(report["top"]) - seen
    assert not missing, f"{report['top']}: no end point attributed to {sorted(missing)}"


def test_the_tops_cover_every_module_of_the_core() -> None:
    assert synth.uncovered() == [], "modules of fhg_core.f no timing top reaches"
