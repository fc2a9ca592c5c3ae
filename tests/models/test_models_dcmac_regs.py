"""The DCMAC register/GT model used by the bring-up test, checked on its own."""

from __future__ import annotations

import pytest

from verification.models import dcmac_regs as dm


def _release_rx(regs: dm.DcmacRegs) -> None:
    for addr, data in dm.BringupValues().full_run_writes():
        regs.write(addr, data)


def _run(regs: dm.DcmacRegs, cycles: int, rx_reset: bool = False) -> None:
    n = regs.gt.lanes
    for _ in range(cycles):
        regs.gt.tick([False] * n, [rx_reset] * n)
        regs.tick()


def test_gt_lanes_finish_after_delay_and_not_without_refclk() -> None:
    gt = dm.GtLanes(lanes=2, done_delay=3)
    gt.tick([True, True], [True, True])
    assert gt.tx_resets == 1 and gt.rx_resets == 1 and not gt.tx_ready
    for _ in range(3):
        gt.tick([False, False], [False, False])
    assert not gt.tx_ready
    gt.tick([False, False], [False, False])
    assert gt.tx_ready and gt.rx_ready
    gt.tick([False, False], [True, True])  # an RX-only reset leaves TX ready
    assert gt.tx_ready and not gt.rx_ready and gt.rx_resets == 2
    gt.refclk_ok = False
    for _ in range(20):
        gt.tick([False, False], [False, False])
    assert not gt.rx_ready


def test_gt_lanes_reject_bad_arguments() -> None:
    with pytest.raises(ValueError, match="lanes must be at least 1, not 0"):
        dm.GtLanes(lanes=0)
    with pytest.raises(ValueError, match="expected 4 reset bits"):
        dm.GtLanes().tick([False], [False])


def test_status_latches_low_until_cleared() -> None:
    regs = dm.DcmacRegs(dm.GtLanes(done_delay=0), align_delay=5)
    _run(regs, 2)
    _release_rx(regs)
    regs.write(dm.C0_STAT_PORT_RX_PHY_STATUS, 0xFFFF_FFFF)
    _run(regs, 10)
    assert regs.aligned()
    value, resp = regs.read(dm.C0_STAT_PORT_RX_PHY_STATUS)
    # Cleared while not yet aligned: the latch-low bits stay low until the next clear.
    assert resp == dm.RESP_OKAY and value & dm.ALIGNED_MASK == 0
    regs.write(dm.C0_STAT_PORT_RX_PHY_STATUS, 0xFFFF_FFFF)
    value, _ = regs.read(dm.C0_STAT_PORT_RX_PHY_STATUS)
    assert value & dm.ALIGNED_MASK == dm.ALIGNED_MASK
    regs.lose_partner()
    _run(regs, 1)
    regs.restore_partner()
    _run(regs, 20)
    value, _ = regs.read(dm.C0_STAT_PORT_RX_PHY_STATUS)
    assert value & dm.ALIGNED_MASK == 0 and not regs.aligned()  # needs a fresh RX reset
    mac, _ = regs.read(dm.C0_STAT_CHAN_RX_MAC_STATUS)
    assert mac & dm.MAC_LOCAL_FAULT


def test_configuration_outside_reset_is_a_violation() -> None:
    regs = dm.DcmacRegs(dm.GtLanes())
    regs.write(dm.GLOBAL_MODE, 0x0733_0000)
    assert (
        regs.violations
        and "GLOBAL_MODE written while the DCMAC is not held" in (regs.violations[0])
    )
    regs = dm.DcmacRegs(dm.GtLanes())
    _release_rx(regs)
    assert regs.violations == []
    assert regs.write(0x2222, 1) == dm.RESP_SLVERR
    assert "unknown register 0x2222" in regs.violations[-1]


def test_bringup_values_follow_the_register_map() -> None:
    v = dm.BringupValues()
    assert v.rx_chan_cfg == 0x2580_0042  # 9600-byte frames in bits 29:16
    assert v.config_writes()[-1] == (dm.C0_CHANNEL_CONFIGURATION_RX, 0x2580_0042)
    assert v.tx_chan_cfg & 1  # FCS insertion on
    with pytest.raises(ValueError, match=r"max_frame_len 20000 is outside 64\.\.16383"):
        dm.BringupValues(max_frame_len=20000)
