"""cocotb tests of ``fhg_link_bringup`` against the DCMAC register/GT model.

The model (:mod:`verification.models.dcmac_regs`) answers the DUT's AXI4-Lite master with
random ready and response delays, holds the DCMAC registers and the latching status
registers, and plays the GT lanes and the link partner. Every register write the DUT makes is
compared with the model's list of what the bring-up has to write (written from the DCMAC
register map, not from the RTL), and the model and the AXI slave collect protocol and
ordering violations, which every test requires to be empty.

Timing parameters are small (see ``PARAMS`` in test_fhg_link_bringup.py, passed in
$LINK_BRINGUP_PARAMS) so each scenario runs in a few thousand cycles.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import Event, FallingEdge

from verification.models import dcmac_regs as dm

P: dict[str, int] = json.loads(os.environ.get("LINK_BRINGUP_PARAMS", "{}"))

IDLE, GT_RESET, DCMAC_RESET, CONFIGURE, WAIT_ALIGNED, UP, FAILED = range(7)


class Harness:
    """Clock, model and per-cycle bookkeeping around the DUT."""

    def __init__(self, dut, seed: int, **regs_kw: object) -> None:  # noqa: ANN001
        self.dut = dut
        self.rng = random.Random(seed)
        self.gt = dm.GtLanes(P["NUM_LANES"], done_delay=12)
        self.regs = dm.DcmacRegs(self.gt, **regs_kw)  # type: ignore[arg-type]
        self.axi = dm.AxiLiteSlave(dut, self.regs, self.rng)
        self.link_downs = 0
        self.states_seen: list[int] = []
        self.cycles = 0
        self._tick = Event()

    async def start(self, auto: bool = True, max_retries: int = 0) -> None:
        d = self.dut
        d.auto_bringup.value = int(auto)
        d.restart.value = 0
        d.max_retries.value = max_retries
        d.gt_loopback_in.value = 0
        d.gt_tx_reset_done.value = 0
        d.gt_rx_reset_done.value = 0
        d.rst.value = 1
        Clock(d.clk, 10, "ns").start()
        for _ in range(4):
            await FallingEdge(d.clk)
        d.rst.value = 0
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        d = self.dut
        while True:
            await FallingEdge(d.clk)
            self.cycles += 1
            dm.drive_gt_model(d, self.gt)
            self.regs.tick()
            self.axi.step()
            if int(d.link_down.value):
                self.link_downs += 1
            state = int(d.state.value)
            if not self.states_seen or self.states_seen[-1] != state:
                self.states_seen.append(state)
            # Waiters resume after this cycle's bookkeeping, on the same falling edge.
            tick, self._tick = self._tick, Event()
            tick.set()

    async def cycle(self) -> None:
        """Wait for the next falling edge, after the model has processed it."""
        await self._tick.wait()

    async def wait_for(self, what: str, cond: Callable[[], bool], limit: int = 5000) -> None:
        for _ in range(limit):
            if cond():
                return
            await self.cycle()
        raise AssertionError(
            f"timed out after {limit} cycles waiting for {what}; state "
            f"{int(self.dut.state.value)}, states seen {self.states_seen}, "
            f"retries {int(self.dut.retries.value)}"
        )

    async def cycles_(self, n: int) -> None:
        for _ in range(n):
            await self.cycle()

    async def restart(self) -> None:
        self.dut.restart.value = 1
        await self.cycle()
        self.dut.restart.value = 0

    def up(self) -> bool:
        return bool(int(self.dut.link_up.value))

    def state(self) -> int:
        return int(self.dut.state.value)

    def check_clean(self) -> None:
        assert not self.regs.violations, self.regs.violations
        assert not self.axi.violations, self.axi.violations


def split_attempts(writes: list[tuple[int, int]], values: dm.BringupValues) -> list[int]:
    """Writes after the full run -> polls per alignment attempt; fails on anything else."""
    rx_reset = values.rx_port_reset_writes()
    poll = values.poll_writes()
    attempts: list[int] = []
    i = 0
    while i < len(writes):
        if writes[i : i + 2] == rx_reset:
            attempts.append(0)
            i += 2
        elif writes[i : i + 2] == poll and attempts:
            attempts[-1] += 1
            i += 2
        else:
            raise AssertionError(f"unexpected write at {i}: {writes[i : i + 4]} in {writes}")
    return attempts


def check_full_run(h: Harness, since: int = 0) -> list[tuple[int, int]]:
    """The first writes since `since` are exactly one full bring-up run; returns the rest."""
    values = dm.BringupValues()
    full = values.full_run_writes()
    writes = h.regs.writes(since)
    got = writes[: len(full)]
    assert got == full, "full-run writes differ:\n" + "\n".join(
        f"  {dm.NAMES.get(a, hex(a))}: got 0x{d:08X}, want "
        + (f"{dm.NAMES.get(full[k][0])}=0x{full[k][1]:08X}" if k < len(full) else "nothing")
        for k, (a, d) in enumerate(got)
    )
    return writes[len(full) :]


@cocotb.test()
async def reaches_aligned(dut) -> None:  # noqa: ANN001
    h = Harness(dut, seed=1)
    await h.start()
    await h.wait_for("link up", h.up)
    assert h.state() == UP
    assert h.states_seen == [GT_RESET, DCMAC_RESET, CONFIGURE, WAIT_ALIGNED, UP]
    assert int(dut.retries.value) == 0
    assert int(dut.rx_aligned.value) == 1
    assert int(dut.rx_phy_status.value) & dm.ALIGNED_MASK == dm.ALIGNED_MASK
    assert int(dut.gt_tx_ready.value) == 1 and int(dut.gt_rx_ready.value) == 1
    assert int(dut.rx_local_fault.value) == 0 and int(dut.rx_remote_fault.value) == 0
    assert int(dut.mac_rst.value) == 0
    assert int(dut.dcmac_tx_core_reset.value) == 0 and int(dut.dcmac_rx_core_reset.value) == 0
    assert int(dut.dcmac_tx_serdes_reset.value) == 0 and int(dut.dcmac_rx_serdes_reset.value) == 0
    rest = check_full_run(h)
    attempts = split_attempts(rest, dm.BringupValues())
    assert len(attempts) == 1 and 1 <= attempts[0] <= P["ALIGN_POLLS"], attempts
    # Every poll reads the PHY status and then the MAC status, nothing else.
    reads = h.regs.reads()
    assert [a for a, _ in reads] == [
        dm.C0_STAT_PORT_RX_PHY_STATUS,
        dm.C0_STAT_CHAN_RX_MAC_STATUS,
    ] * attempts[0]
    assert int(dut.rx_phy_status.value) == reads[-2][1]
    assert h.gt.tx_resets == 1 and h.gt.rx_resets == 2  # initial pulse + alignment loop
    # The DCMAC configuration the model holds is what was asked for.
    values = dm.BringupValues()
    for addr, data in values.config_writes():
        assert h.regs.regs[addr] == data, dm.NAMES[addr]
    # Monitoring: a poll every MONITOR_CYCLES, link stays up, nothing else is written.
    n_writes = len(h.regs.writes())
    await h.cycles_(8 * P["MONITOR_CYCLES"])
    assert h.up() and h.state() == UP and h.link_downs == 0
    more = h.regs.writes(0)[n_writes:]
    assert len(more) >= 2 * 3 and len(more) % 2 == 0  # at least three polls
    assert all(w in values.poll_writes() for w in more), more
    # gt_loopback reaches the GT pins.
    dut.gt_loopback_in.value = 2
    await h.cycles_(2)
    assert int(dut.gt_loopback.value) == 2
    h.check_clean()


@cocotb.test()
async def retries_until_aligned(dut) -> None:  # noqa: ANN001
    # The link only locks after its fourth RX port reset (the full run's release is the
    # first): two failed alignment attempts, then up.
    h = Harness(dut, seed=2, resets_needed=4)
    await h.start()
    await h.wait_for("link up", h.up)
    assert int(dut.retries.value) == 2
    attempts = split_attempts(check_full_run(h), dm.BringupValues())
    assert len(attempts) == 3, attempts
    assert attempts[:2] == [P["ALIGN_POLLS"]] * 2, attempts
    assert 1 <= attempts[2] <= P["ALIGN_POLLS"]
    assert h.gt.tx_resets == 1 and h.gt.rx_resets == 1 + 3
    h.check_clean()


@cocotb.test()
async def retries_after_loss_of_alignment(dut) -> None:  # noqa: ANN001
    h = Harness(dut, seed=3)
    await h.start()
    await h.wait_for("link up", h.up)
    n_writes = len(h.regs.writes())
    rx_resets = h.gt.rx_resets
    h.regs.lose_partner()
    await h.wait_for("link down", lambda: not h.up(), limit=3 * P["MONITOR_CYCLES"])
    await h.cycles_(1)
    assert h.link_downs == 1
    assert h.state() == WAIT_ALIGNED
    assert int(dut.rx_aligned.value) == 0
    assert int(dut.rx_local_fault.value) == 1
    assert int(dut.rx_phy_status.value) & dm.ALIGNED_MASK != dm.ALIGNED_MASK
    # Partner back after a while; the bring-up's next RX reset lets it align again.
    await h.cycles_(300)
    h.regs.restore_partner()
    await h.wait_for("link up again", h.up)
    assert h.link_downs == 1
    assert h.gt.tx_resets == 1  # only the RX side was reset again
    assert h.gt.rx_resets > rx_resets + 1
    later = h.regs.writes()[n_writes:]
    # After the loss: polls, then attempts (RX port reset + polls) only, no reconfiguration.
    values = dm.BringupValues()
    first = next(i for i, w in enumerate(later) if w == values.rx_port_reset_writes()[0])
    assert all(w in values.poll_writes() for w in later[:first])
    attempts = split_attempts(later[first:], values)
    assert int(dut.retries.value) == len(attempts) - 1
    assert len(attempts) >= 2  # the partner stayed away for several attempts
    h.check_clean()


async def run_until_failed(dut, seed: int, max_retries: int) -> Harness:  # noqa: ANN001
    """A bring-up with no partner on the line: it stops in [6] after max_retries retries."""
    h = Harness(dut, seed=seed, partner=False)
    await h.start(max_retries=max_retries)
    await h.wait_for("failed", lambda: h.state() == FAILED, limit=20000)
    assert int(dut.retries.value) == max_retries
    return h


@cocotb.test()
async def gives_up_after_max_retries(dut) -> None:  # noqa: ANN001
    h = await run_until_failed(dut, seed=4, max_retries=3)
    assert not h.up() and int(dut.rx_aligned.value) == 0
    attempts = split_attempts(check_full_run(h), dm.BringupValues())
    assert attempts == [P["ALIGN_POLLS"]] * 4, attempts  # 1 + max_retries attempts
    assert h.gt.rx_resets == 1 + 4
    n_access = len(h.regs.log)
    await h.cycles_(3 * P["MONITOR_CYCLES"])
    assert h.state() == FAILED and len(h.regs.log) == n_access  # stays put, bus quiet
    h.check_clean()


@cocotb.test()
async def restart_recovers_from_failed(dut) -> None:  # noqa: ANN001
    h = await run_until_failed(dut, seed=5, max_retries=1)
    h.regs.restore_partner()
    since = len(h.regs.log)
    seen = len(h.states_seen)
    await h.restart()
    await h.wait_for("link up after restart", h.up)
    assert h.states_seen[seen : seen + 5] == [GT_RESET, DCMAC_RESET, CONFIGURE, WAIT_ALIGNED, UP]
    assert int(dut.retries.value) == 0
    assert h.gt.tx_resets == 2  # the restart re-ran the GT resets
    attempts = split_attempts(check_full_run(h, since), dm.BringupValues())
    assert len(attempts) == 1
    h.check_clean()


@cocotb.test()
async def auto_off_waits_for_restart(dut) -> None:  # noqa: ANN001
    h = Harness(dut, seed=6)
    await h.start(auto=False)
    await h.cycles_(300)
    assert h.state() == IDLE and not h.regs.log
    assert int(dut.gt_reset_tx_datapath.value) == 0xF and int(dut.mac_rst.value) == 1
    await h.restart()
    await h.wait_for("link up after restart", h.up)
    check_full_run(h)
    # Without auto_bringup a link loss is reported and the sequencer stops.
    h.regs.lose_partner()
    await h.wait_for("link down", lambda: not h.up(), limit=3 * P["MONITOR_CYCLES"])
    await h.cycles_(2)
    assert h.link_downs == 1 and h.state() == IDLE
    n_access = len(h.regs.log)
    await h.cycles_(2 * P["MONITOR_CYCLES"])
    assert len(h.regs.log) == n_access
    h.check_clean()


@cocotb.test()
async def gt_without_refclk_fails_before_touching_dcmac(dut) -> None:  # noqa: ANN001
    h = Harness(dut, seed=7)
    h.gt.refclk_ok = False
    await h.start(max_retries=2)
    await h.wait_for("failed", lambda: h.state() == FAILED, limit=20000)
    assert int(dut.retries.value) == 2
    assert h.gt.tx_resets == 3  # every attempt restarted from the GT resets
    assert not h.regs.log  # the DCMAC was never touched
    assert int(dut.gt_tx_ready.value) == 0 and int(dut.mac_rst.value) == 1
    assert h.states_seen == [GT_RESET, FAILED]
    h.check_clean()


@cocotb.test()
async def bus_errors_and_stalls_are_reported(dut) -> None:  # noqa: ANN001
    h = Harness(dut, seed=8, error_addrs=frozenset({dm.GLOBAL_MODE}))
    await h.start()
    await h.wait_for("link up", h.up)
    assert int(dut.axi_error.value) == 1 and int(dut.axi_stall.value) == 0
    # A DCMAC that stops answering: the monitoring poll stalls, and says so.
    h.axi.hang = True
    await h.wait_for("axi_stall", lambda: bool(int(dut.axi_stall.value)), limit=400)
    # A restart requested meanwhile waits for the transaction to end.
    await h.restart()
    await h.cycles_(20)
    assert int(dut.axi_stall.value) == 1
    h.axi.hang = False
    h.regs.error_addrs = frozenset()
    await h.wait_for("restart taken", lambda: h.state() == GT_RESET, limit=50)
    assert not h.up() and int(dut.rx_aligned.value) == 0
    await h.wait_for("link up after restart", h.up)
    assert int(dut.axi_error.value) == 0 and int(dut.axi_stall.value) == 0
    h.check_clean()


@cocotb.test()
async def lowering_max_retries_stops_a_running_bringup(dut) -> None:  # noqa: ANN001
    h = Harness(dut, seed=9, partner=False)
    await h.start(max_retries=0)  # retry forever
    await h.wait_for("three retries", lambda: int(dut.retries.value) >= 3, limit=20000)
    dut.max_retries.value = 2  # now below the count: the next failed attempt is the last
    await h.wait_for("failed", lambda: h.state() == FAILED, limit=5000)
    assert int(dut.retries.value) == 3  # no further attempt once over the limit
    h.check_clean()
