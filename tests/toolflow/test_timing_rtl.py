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
import re
from typing import Any

import pytest
from conftest import REPO_ROOT

from mlib_devel_400g import synth, timing

CACHE = REPO_ROOT / ".cache" / "timing"
TOPS = list(synth.TIMING_TOPS)
# The deepest path each top may have: timing.LIMIT (6), the aim, unless a top is named here
# with its depth of the day (docs/resources.md would list its paths), so that no change can
# make it deeper while it waits to be pipelined. Every top is at the aim: none is named.
LIMITS: dict[str, int] = {}

# Tops with fewer end points than the generic floor below: the registers the estimate must
# see as end points, and the depth their logic has by construction.
SMALL_TOPS: dict[str, tuple[set[str], int]] = {
    # One 2:1 choice (gratuitous ARP or reply) in front of every frame bit: one level.
    "fhg_arp_responder": ({"arp_frame", "arp_valid", "garp_pend"}, 1),
    # The window counter and, per channel, the accumulator and the rate register.
    "fhg_stats_rate": ({"sec_cnt", "acc", "rate"}, 2),
}
_SEQ = re.compile(r"\balways_ff\b|\balways_latch\b|\balways\s*@\s*\(\s*(pos|neg)edge\b")


def registerless() -> set[str]:
    """Modules of the sources without a register of their own (wiring around the modules
    they instantiate, and combinational logic): no end point can be attributed to them."""
    return {
        name
        for name, path in synth.defined_modules(synth.source_files()).items()
        if not _SEQ.search(synth._mask_comments(path.read_text()))
    }


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
    # Register end points in every module of the top that has registers and a non-trivial
    # worst path: an empty or mis-read netlist cannot pass the limit test by having no paths.
    top = report["top"]
    assert sum(report["levels_histogram"].values()) == report["endpoints"]
    if top in SMALL_TOPS:
        registers, depth = SMALL_TOPS[top]
        # Few enough that the worst-20 list names every end point.
        assert report["endpoints"] <= len(report["worst"])
        named = {p["endpoint"] for p in report["worst"]}
        assert registers <= named, f"{top}: no end point {sorted(registers - named)}"
        assert report["max_levels"] >= depth
    else:
        assert report["endpoints"] >= 10
        assert report["max_levels"] >= 2
    seen = set(report["per_module"])
    missing = synth.instantiated(top) - registerless() - seen
    assert not missing, f"{top}: no end point attributed to {sorted(missing)}"


def test_registerless_modules_are_wiring_only() -> None:
    # The exemption above is exactly the modules without sequential logic: the wrappers
    # (fhg_cfg_sync around fhg_cdc_snapshot, fhg_stats_tx around fhg_cdc_delta) and the
    # pure combinational blocks; a module with a register is never among them.
    found = registerless()
    assert {"fhg_cfg_sync", "fhg_stats_tx"} <= found
    assert not found & {"fhg_cdc_snapshot", "fhg_cdc_delta", "fhg_stats_rx", "fhg_tx_packer"}


def test_the_tops_cover_every_module_of_the_core() -> None:
    assert synth.uncovered() == [], "modules of fhg_core.f no timing top reaches"
