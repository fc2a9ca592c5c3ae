"""Behavioural model of the DCMAC register port and the GTM reset handshakes, for
``fhg_link_bringup``.

Pure-Python part:

* register offsets and the values the bring-up writes, from the DCMAC register map (PG369;
  AMD's published register tables and example software) - written here independently of
  the RTL, so a test compares the RTL against this list;
* :class:`GtLanes`: per-lane TX/RX datapath reset -> reset-done behaviour (a missing
  reference clock keeps every lane from finishing);
* :class:`DcmacRegs`: read/write registers, the soft-reset bits, the latching status
  registers ``C0_STAT_PORT_RX_PHY_STATUS`` (0x1C00) and ``C0_STAT_CHAN_RX_MAC_STATUS``
  (0x1140) and a link partner. Alignment needs the partner, every GT RX lane ready, the RX
  core and port out of reset for ``align_delay`` cycles, and a fresh RX reset after the
  partner came back (real links often need the GT RX datapath reset again, which is why the
  bring-up loops). Rule violations (configuration written while the DCMAC is not held in
  reset, accesses to unknown registers) are collected in ``violations``.

cocotb part: :class:`AxiLiteSlave` answers the DUT's AXI4-Lite master from a
:class:`DcmacRegs` with random ready/response delays, and :func:`drive_gt_model` connects
:class:`GtLanes` to the DUT's GT reset ports. Both sample on the falling edge (values the
DUT settled to after the rising edge) and drive what the next rising edge captures.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cocotb.handle import SimHandleBase

# ---------------------------------------------------------------- register map (PG369)
GLOBAL_MODE = 0x0004
GLOBAL_CONTROL_REG_RX = 0x00F0
GLOBAL_CONTROL_REG_TX = 0x00F8
C0_CHANNEL_CONFIGURATION_TX = 0x1000
C0_CHANNEL_CONFIGURATION_RX = 0x1004
C0_CHANNEL_CONTROL_REG_RX = 0x1030
C0_CHANNEL_CONTROL_REG_TX = 0x1038
C0_TX_MODE_REG = 0x1040
C0_RX_MODE_REG = 0x1044
C0_PORT_CONTROL_REG_RX = 0x10F0
C0_PORT_CONTROL_REG_TX = 0x10F8
C0_STAT_CHAN_RX_MAC_STATUS = 0x1140
C0_STAT_PORT_RX_PHY_STATUS = 0x1C00

NAMES: dict[int, str] = {
    GLOBAL_MODE: "GLOBAL_MODE",
    GLOBAL_CONTROL_REG_RX: "GLOBAL_CONTROL_REG_RX",
    GLOBAL_CONTROL_REG_TX: "GLOBAL_CONTROL_REG_TX",
    C0_CHANNEL_CONFIGURATION_TX: "C0_CHANNEL_CONFIGURATION_TX",
    C0_CHANNEL_CONFIGURATION_RX: "C0_CHANNEL_CONFIGURATION_RX",
    C0_CHANNEL_CONTROL_REG_RX: "C0_CHANNEL_CONTROL_REG_RX",
    C0_CHANNEL_CONTROL_REG_TX: "C0_CHANNEL_CONTROL_REG_TX",
    C0_TX_MODE_REG: "C0_TX_MODE_REG",
    C0_RX_MODE_REG: "C0_RX_MODE_REG",
    C0_PORT_CONTROL_REG_RX: "C0_PORT_CONTROL_REG_RX",
    C0_PORT_CONTROL_REG_TX: "C0_PORT_CONTROL_REG_TX",
    C0_STAT_CHAN_RX_MAC_STATUS: "C0_STAT_CHAN_RX_MAC_STATUS",
    C0_STAT_PORT_RX_PHY_STATUS: "C0_STAT_PORT_RX_PHY_STATUS",
}

# Soft-reset bits.
GLOBAL_CORE_RESET = 1 << 0  # soft_{tx,rx}_core_reset
PORT_SERDES_RESET = 1 << 1  # c0_soft_{tx,rx}_serdes_reset
CHANNEL_FLUSH = 1 << 0  # c0_soft_{tx,rx}_mac_channel_flush

# C0_STAT_PORT_RX_PHY_STATUS bits: stat_rx_status, block_lock, aligned latch low;
# misaligned latches high.
PHY_STATUS = 1 << 0
PHY_BLOCK_LOCK = 1 << 1
PHY_ALIGNED = 1 << 2
PHY_MISALIGNED = 1 << 3
PHY_LATCH_LOW = PHY_STATUS | PHY_BLOCK_LOCK | PHY_ALIGNED
ALIGNED_MASK = PHY_STATUS | PHY_ALIGNED  # aligned when (value & 5) == 5
# C0_STAT_CHAN_RX_MAC_STATUS bits (latch high).
MAC_REMOTE_FAULT = 1 << 0
MAC_LOCAL_FAULT = 1 << 1

RESP_OKAY = 0
RESP_SLVERR = 2


@dataclass(frozen=True)
class BringupValues:
    """What the bring-up writes (the RTL's parameter defaults).

    ``global_mode``, ``tx_mode`` and ``rx_mode`` are from AMD's example software for a
    static 400GE configuration, not confirmed from documentation.
    """

    global_mode: int = 0x0733_0000
    tx_mode: int = 0x0010_0412
    rx_mode: int = 0x0010_2802
    tx_chan_cfg: int = 0x0000_0C01  # FCS insertion, IPG 12
    rx_chan_flags: int = 0x0042  # delete FCS, ignore in-range length errors
    max_frame_len: int = 9600
    global_reset: int = 0x7
    port_reset: int = 0x3
    rx_port_reset: int = 0x2

    def __post_init__(self) -> None:
        if not 64 <= self.max_frame_len <= 0x3FFF:
            raise ValueError(f"max_frame_len {self.max_frame_len} is outside 64..16383")

    @property
    def rx_chan_cfg(self) -> int:
        return (self.max_frame_len << 16) | self.rx_chan_flags

    def reset_writes(self) -> list[tuple[int, int]]:
        """[2] DCMAC global, port and channel resets asserted."""
        return [
            (GLOBAL_CONTROL_REG_TX, self.global_reset),
            (GLOBAL_CONTROL_REG_RX, self.global_reset),
            (C0_PORT_CONTROL_REG_TX, self.port_reset),
            (C0_PORT_CONTROL_REG_RX, self.port_reset),
            (C0_CHANNEL_CONTROL_REG_TX, CHANNEL_FLUSH),
            (C0_CHANNEL_CONTROL_REG_RX, CHANNEL_FLUSH),
        ]

    def config_writes(self) -> list[tuple[int, int]]:
        """[3] port mode and frame configuration, written while in reset."""
        return [
            (GLOBAL_MODE, self.global_mode),
            (C0_TX_MODE_REG, self.tx_mode),
            (C0_RX_MODE_REG, self.rx_mode),
            (C0_CHANNEL_CONFIGURATION_TX, self.tx_chan_cfg),
            (C0_CHANNEL_CONFIGURATION_RX, self.rx_chan_cfg),
        ]

    @staticmethod
    def release_writes() -> list[tuple[int, int]]:
        """[3] every reset released, TX before RX, global before port before channel."""
        return [
            (GLOBAL_CONTROL_REG_TX, 0),
            (GLOBAL_CONTROL_REG_RX, 0),
            (C0_PORT_CONTROL_REG_TX, 0),
            (C0_PORT_CONTROL_REG_RX, 0),
            (C0_CHANNEL_CONTROL_REG_TX, 0),
            (C0_CHANNEL_CONTROL_REG_RX, 0),
        ]

    def full_run_writes(self) -> list[tuple[int, int]]:
        return self.reset_writes() + self.config_writes() + self.release_writes()

    def rx_port_reset_writes(self) -> list[tuple[int, int]]:
        """[4] the RX port reset of one alignment attempt."""
        return [(C0_PORT_CONTROL_REG_RX, self.rx_port_reset), (C0_PORT_CONTROL_REG_RX, 0)]

    @staticmethod
    def poll_writes() -> list[tuple[int, int]]:
        """The write-1-to-clear of one status poll."""
        return [
            (C0_STAT_PORT_RX_PHY_STATUS, 0xFFFF_FFFF),
            (C0_STAT_CHAN_RX_MAC_STATUS, 0xFFFF_FFFF),
        ]


# ---------------------------------------------------------------- GT lanes
class GtLanes:
    """Reset-done flags of ``lanes`` GT channels.

    A datapath reset clears the lane's done flag; after release the flag rises
    ``done_delay`` cycles later if the reference clock runs (``refclk_ok``), else never.
    """

    def __init__(self, lanes: int = 4, done_delay: int = 12) -> None:
        if lanes < 1:
            raise ValueError(f"lanes must be at least 1, not {lanes}")
        if done_delay < 0:
            raise ValueError(f"done_delay must not be negative, not {done_delay}")
        self.lanes = lanes
        self.done_delay = done_delay
        self.refclk_ok = True
        self.tx_done = [False] * lanes
        self.rx_done = [False] * lanes
        self._tx_wait = [done_delay] * lanes
        self._rx_wait = [done_delay] * lanes
        self.tx_resets = 0  # rising edges of the (all-lane) TX datapath reset
        self.rx_resets = 0
        self._tx_prev = [False] * lanes
        self._rx_prev = [False] * lanes

    def tick(self, tx_reset: Sequence[bool], rx_reset: Sequence[bool]) -> None:
        if len(tx_reset) != self.lanes or len(rx_reset) != self.lanes:
            raise ValueError(f"expected {self.lanes} reset bits per direction")
        if any(tx_reset) and not any(self._tx_prev):
            self.tx_resets += 1
        if any(rx_reset) and not any(self._rx_prev):
            self.rx_resets += 1
        self._tx_prev = list(tx_reset)
        self._rx_prev = list(rx_reset)
        for done, wait, reset in (
            (self.tx_done, self._tx_wait, tx_reset),
            (self.rx_done, self._rx_wait, rx_reset),
        ):
            for k in range(self.lanes):
                if reset[k]:
                    done[k] = False
                    wait[k] = self.done_delay
                elif not done[k] and self.refclk_ok:
                    if wait[k] == 0:
                        done[k] = True
                    else:
                        wait[k] -= 1

    @property
    def tx_ready(self) -> bool:
        return all(self.tx_done)

    @property
    def rx_ready(self) -> bool:
        return all(self.rx_done)


# ---------------------------------------------------------------- DCMAC registers
@dataclass
class Access:
    cycle: int
    write: bool
    addr: int
    data: int


@dataclass
class DcmacRegs:
    """The DCMAC's register port as the bring-up sees it, plus a link partner."""

    gt: GtLanes
    align_delay: int = 10
    partner: bool = True  # the far end sends a valid 400GAUI-4 RS(544) signal
    remote_fault: bool = False
    # RX resets (port serdes reset releases) that must happen before alignment is possible
    # at all; models links that only lock after several GT/port resets.
    resets_needed: int = 1
    error_addrs: frozenset[int] = frozenset()  # answered with SLVERR
    regs: dict[int, int] = field(default_factory=dict)
    log: list[Access] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    cycle: int = 0

    def __post_init__(self) -> None:
        # Reset values from the register map where they matter here.
        self.regs.setdefault(GLOBAL_CONTROL_REG_RX, 0)
        self.regs.setdefault(GLOBAL_CONTROL_REG_TX, 0)
        self.regs.setdefault(C0_PORT_CONTROL_REG_RX, 0)
        self.regs.setdefault(C0_PORT_CONTROL_REG_TX, 1)
        self.regs.setdefault(C0_CHANNEL_CONTROL_REG_RX, 0)
        self.regs.setdefault(C0_CHANNEL_CONTROL_REG_TX, 0)
        self._phy_latched = 0
        self._mac_latched = 0
        self._rx_out_of_reset = 0  # cycles since the RX side was last released
        self._rx_resets = 0
        self._need_fresh_reset = False

    # ---- register access
    def write(self, addr: int, data: int) -> int:
        self.log.append(Access(self.cycle, True, addr, data))
        if addr in self.error_addrs:
            return RESP_SLVERR
        if addr not in NAMES:
            self.violations.append(f"cycle {self.cycle}: write to unknown register 0x{addr:04X}")
            return RESP_SLVERR
        if addr in (
            GLOBAL_MODE,
            C0_TX_MODE_REG,
            C0_RX_MODE_REG,
            C0_CHANNEL_CONFIGURATION_TX,
            C0_CHANNEL_CONFIGURATION_RX,
        ) and not (self._in_reset(GLOBAL_CONTROL_REG_TX) and self._in_reset(GLOBAL_CONTROL_REG_RX)):
            self.violations.append(
                f"cycle {self.cycle}: {NAMES[addr]} written while the DCMAC is not held in reset"
            )
        if addr == C0_STAT_PORT_RX_PHY_STATUS:
            cur = self._phy_now()
            self._phy_latched = (self._phy_latched & ~data) | (cur & data)
            return RESP_OKAY
        if addr == C0_STAT_CHAN_RX_MAC_STATUS:
            self._mac_latched = (self._mac_latched & ~data) | (self._mac_now() & data)
            return RESP_OKAY
        if addr == C0_PORT_CONTROL_REG_RX:
            was = self.regs[addr] & PORT_SERDES_RESET
            if was and not data & PORT_SERDES_RESET:
                self._rx_resets += 1
                self._need_fresh_reset = False
        self.regs[addr] = data & 0xFFFF_FFFF
        return RESP_OKAY

    def read(self, addr: int) -> tuple[int, int]:
        """(value, response); the log records the value returned."""
        value, resp = 0, RESP_OKAY
        if addr in self.error_addrs:
            resp = RESP_SLVERR
        elif addr == C0_STAT_PORT_RX_PHY_STATUS:
            value = self._phy_latched
        elif addr == C0_STAT_CHAN_RX_MAC_STATUS:
            value = self._mac_latched
        elif addr in NAMES:
            value = self.regs.get(addr, 0)
        else:
            self.violations.append(f"cycle {self.cycle}: read of unknown register 0x{addr:04X}")
            resp = RESP_SLVERR
        self.log.append(Access(self.cycle, False, addr, value))
        return value, resp

    # ---- link state
    def _in_reset(self, addr: int) -> bool:
        return bool(self.regs.get(addr, 0) & GLOBAL_CORE_RESET)

    def rx_released(self) -> bool:
        return (
            self.gt.rx_ready
            and not self._in_reset(GLOBAL_CONTROL_REG_RX)
            and not self.regs[C0_PORT_CONTROL_REG_RX] & PORT_SERDES_RESET
            and not self.regs[C0_CHANNEL_CONTROL_REG_RX] & CHANNEL_FLUSH
        )

    def aligned(self) -> bool:
        return (
            self.partner
            and not self._need_fresh_reset
            and self._rx_resets >= self.resets_needed
            and self._rx_out_of_reset >= self.align_delay
        )

    def _phy_now(self) -> int:
        if self.aligned():
            return PHY_STATUS | PHY_BLOCK_LOCK | PHY_ALIGNED
        lock = PHY_BLOCK_LOCK if self.partner and self.rx_released() else 0
        return lock | (PHY_MISALIGNED if self.partner and self.rx_released() else 0)

    def _mac_now(self) -> int:
        value = 0 if self.aligned() else MAC_LOCAL_FAULT
        if self.remote_fault:
            value |= MAC_REMOTE_FAULT
        return value

    def lose_partner(self) -> None:
        """The far end stops (cable pulled, peer reset)."""
        self.partner = False

    def restore_partner(self) -> None:
        """The far end is back; alignment needs a new RX reset from the bring-up."""
        self.partner = True
        self._need_fresh_reset = True

    def tick(self) -> None:
        """One cycle of the register clock (after the GT model's tick)."""
        self.cycle += 1
        self._rx_out_of_reset = self._rx_out_of_reset + 1 if self.rx_released() else 0
        phy = self._phy_now()
        self._phy_latched = (self._phy_latched & (~PHY_LATCH_LOW | phy)) | (phy & PHY_MISALIGNED)
        self._mac_latched |= self._mac_now()

    # ---- helpers for tests
    def writes(self, since: int = 0) -> list[tuple[int, int]]:
        return [(a.addr, a.data) for a in self.log[since:] if a.write]

    def reads(self, since: int = 0) -> list[tuple[int, int]]:
        return [(a.addr, a.data) for a in self.log[since:] if not a.write]


# ---------------------------------------------------------------- cocotb adapters
class AxiLiteSlave:
    """AXI4-Lite slave on the DUT's ``m_axi_*`` master ports, backed by :class:`DcmacRegs`.

    Call :meth:`step` once per falling edge. ``ready_p`` is the chance per cycle that a
    ready is offered; responses come after 0..``max_latency`` cycles. ``hang`` stops all
    responses (a DCMAC without clock or reset). Protocol checks on the master (valid held
    until ready, stable address/data, one outstanding transaction) go to ``violations``.
    """

    def __init__(
        self,
        dut: SimHandleBase,
        regs: DcmacRegs,
        rng: random.Random,
        ready_p: float = 0.6,
        max_latency: int = 3,
    ) -> None:
        self.dut = dut
        self.regs = regs
        self.rng = rng
        self.ready_p = ready_p
        self.max_latency = max_latency
        self.hang = False
        self.violations: list[str] = []
        self._prev: dict[str, int] = {}
        self._aw: int | None = None
        self._w: int | None = None
        self._ar: int | None = None
        self._b_wait = -1
        self._b_resp = 0
        self._r_wait = -1
        self._r_data = 0
        self._r_resp = 0
        self.bvalid = 0
        self.rvalid = 0
        for name in ("awready", "wready", "bvalid", "arready", "rvalid"):
            getattr(dut, f"m_axi_{name}").value = 0
        dut.m_axi_bresp.value = 0
        dut.m_axi_rresp.value = 0
        dut.m_axi_rdata.value = 0

    def _sig(self, name: str) -> int:
        return int(getattr(self.dut, f"m_axi_{name}").value)

    def step(self) -> None:
        d = self.dut
        cur = {
            n: self._sig(n)
            for n in (
                "awvalid",
                "awaddr",
                "wvalid",
                "wdata",
                "wstrb",
                "bready",
                "arvalid",
                "araddr",
                "rready",
            )
        }
        p = self._prev
        cyc = self.regs.cycle
        if p:
            # Handshakes at the rising edge just passed.
            if p["awvalid"] and p["awready"]:
                self._aw = p["awaddr"]
            elif p["awvalid"] and not (cur["awvalid"] and cur["awaddr"] == p["awaddr"]):
                self.violations.append(f"cycle {cyc}: awvalid/awaddr changed before awready")
            if p["wvalid"] and p["wready"]:
                if p["wstrb"] != 0xF:
                    self.violations.append(f"cycle {cyc}: partial write strobe {p['wstrb']:#x}")
                self._w = p["wdata"]
            elif p["wvalid"] and not (cur["wvalid"] and cur["wdata"] == p["wdata"]):
                self.violations.append(f"cycle {cyc}: wvalid/wdata changed before wready")
            if p["bvalid"] and p["bready"]:
                self.bvalid = 0
            if p["arvalid"] and p["arready"]:
                self._ar = p["araddr"]
            elif p["arvalid"] and not (cur["arvalid"] and cur["araddr"] == p["araddr"]):
                self.violations.append(f"cycle {cyc}: arvalid/araddr changed before arready")
            if p["rvalid"] and p["rready"]:
                self.rvalid = 0
        busy_w = self._aw is not None or self._w is not None or self.bvalid or self._b_wait >= 0
        busy_r = self._ar is not None or self.rvalid or self._r_wait >= 0
        if (cur["arvalid"] and busy_w) or (cur["awvalid"] and busy_r):
            self.violations.append(f"cycle {cyc}: read and write outstanding together")
        if not self.hang:
            if self._aw is not None and self._w is not None and not self.bvalid:
                self._b_resp = self.regs.write(self._aw, self._w)
                self._aw = self._w = None
                self._b_wait = self.rng.randint(0, self.max_latency)
            if self._b_wait == 0:
                self.bvalid = 1
            if self._b_wait >= 0:
                self._b_wait -= 1
            if self._ar is not None and not self.rvalid and self._r_wait < 0:
                self._r_data, self._r_resp = self.regs.read(self._ar)
                self._ar = None
                self._r_wait = self.rng.randint(0, self.max_latency)
            if self._r_wait == 0:
                self.rvalid = 1
            if self._r_wait >= 0:
                self._r_wait -= 1
        ok = not self.hang
        awready = int(ok and self._aw is None and self.rng.random() < self.ready_p)
        wready = int(ok and self._w is None and self.rng.random() < self.ready_p)
        arready = int(ok and self._ar is None and self.rng.random() < self.ready_p)
        d.m_axi_awready.value = awready
        d.m_axi_wready.value = wready
        d.m_axi_arready.value = arready
        d.m_axi_bvalid.value = self.bvalid
        d.m_axi_bresp.value = self._b_resp if self.bvalid else 0
        d.m_axi_rvalid.value = self.rvalid
        d.m_axi_rdata.value = self._r_data if self.rvalid else 0
        d.m_axi_rresp.value = self._r_resp if self.rvalid else 0
        self._prev = {
            **cur,
            "awready": awready,
            "wready": wready,
            "arready": arready,
            "bvalid": self.bvalid,
            "rvalid": self.rvalid,
        }


def drive_gt_model(dut: SimHandleBase, gt: GtLanes) -> None:
    """One cycle of the GT model from the DUT's reset outputs (call on the falling edge)."""
    n = gt.lanes
    tx = int(dut.gt_reset_tx_datapath.value)
    rx = int(dut.gt_reset_rx_datapath.value)
    gt.tick([bool(tx >> k & 1) for k in range(n)], [bool(rx >> k & 1) for k in range(n)])
    dut.gt_tx_reset_done.value = sum(int(v) << k for k, v in enumerate(gt.tx_done))
    dut.gt_rx_reset_done.value = sum(int(v) << k for k, v in enumerate(gt.rx_done))
