"""The cocotb/pytest bridge reports failures (a broken test must not pass silently)."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO_ROOT

from casper400g_dev import sim

FAILING_MODULE = """
import cocotb
from cocotb.triggers import Timer


@cocotb.test()
async def passes(dut):
    await Timer(10, unit="ns")


@cocotb.test()
async def fails(dut):
    await Timer(10, unit="ns")
    assert int(dut.rst_n.value) == 42, "deliberate failure"
"""


def test_failures_are_reported(tmp_path: Path) -> None:
    module = tmp_path / "cocotb_bridge_probe.py"
    module.write_text(FAILING_MODULE)
    assert sim.cocotb_test_names(module) == ["passes", "fails"]
    outcomes = sim.run(sim.build_regs(), module.stem, tmp_path, work_dir=tmp_path / "run")
    assert outcomes["passes"].passed
    assert not outcomes["fails"].passed
    assert "deliberate failure" in outcomes["fails"].message


def test_a_build_another_process_runs_is_not_evicted(tmp_path: Path) -> None:
    """Checkouts sharing one cache (CASPER400G_SIM_CACHE) each keep the build they run: a
    new build of the same design removes only stale builds nobody holds."""
    import subprocess
    import sys

    held, stale, new = (tmp_path / f"fhg_x-{h}" for h in ("aaaa", "bbbb", "cccc"))
    for d in (held, stale, new):
        d.mkdir()
    (stale / sim.IN_USE).touch()  # held once, by a process that has ended
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from casper400g_dev import sim; "
            f"sim._hold(Path({str(held)!r})); print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert sim._in_use_elsewhere(held) and not sim._in_use_elsewhere(stale)
        assert sim.evict_stale(tmp_path, "fhg_x", keep=new) == [stale]
        assert held.is_dir() and new.is_dir() and not stale.exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert not sim._in_use_elsewhere(held)
    assert sim.evict_stale(tmp_path, "fhg_x", keep=new) == [held]
