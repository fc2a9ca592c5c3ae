"""fhg_core performance in simulated cycles: TX goodput per payload size (the TX benchmark's
own run, asserted), TX packing, RX at the line rate (cocotb_fhg_core_perf.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from casper400g_dev import bench_tx, sim

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_core_perf.py")
NAMES = sim.cocotb_test_names(COCOTB_MODULE)
SIZES = [64, 65, 128, 129, 256, 1024, 1472, 4096, 8192, 8972, 0]  # 0: a random mix
FRAMES = 100


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    return sim.run(sim.build_core(), COCOTB_MODULE.stem, COCOTB_MODULE.parent)


@pytest.mark.parametrize("name", NAMES)
def test_core_perf(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)


@pytest.fixture(scope="module")
def tx_bench() -> dict[int, dict[str, Any]]:
    data = sim.run_job(
        sim.build_core(),
        "verification.cocotb_bench_tx",
        {"CASPER400G_BENCH_SIZES": json.dumps(SIZES), "CASPER400G_BENCH_FRAMES": str(FRAMES)},
    )
    return {r["size"]: r for r in data["results"]}


@pytest.mark.parametrize("size", SIZES, ids=[str(s) if s else "mix" for s in SIZES])
def test_tx_goodput_reaches_the_ceiling(tx_bench: dict[int, dict[str, Any]], size: int) -> None:
    """Goodput measured on the MAC bus over the lower of line goodput and user-port ceiling."""
    r = tx_bench[size]
    ratio = r["goodput_bps"] / r["theory_bps"]
    assert ratio >= bench_tx.REQUIRED_RATIO, (
        f"{size or 'mix'} B: {r['goodput_bps'] / 1e9:.2f} Gb/s is {ratio:.4f} of the "
        f"{r['binds']} ceiling {r['theory_bps'] / 1e9:.2f} Gb/s"
    )
