"""fhg_rx_lane alone: one receive lane's realignment, filter and verdict.

Frames of the labelled random mix (verification/models/rx_expect.py: every kind of fault
the filter knows, each frame classified by its scapy-based re-implementation of
docs/design/core.md §3) reach the lane as fhg_rx_unpack hands them over: a run of segments
per cycle, the first at the frame's random start segment on the bus, the others from
segment 0, the rest of the bus random bytes, idle cycles in between at random, the next
frame straight after. For every frame the lane must give the verdict code the model names
and its byte count; for a datagram, its payload through the lane FIFO word by word (byte
count and `last` on the last entry), its addresses and ports in the merger's meta, and a
header sum that completes the UDP checksum exactly when the model says it is good; for a
frame the CPU takes, its raw words in the CPU buffer and its length; for an ARP frame the
hardware answers or learns, the sender's addresses.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from verification.models import rx_expect
from verification.models.clocked import ClockedTask, int_reader

MAC_PERIOD_PS = 2557  # 391.03 MHz
SEG = 16
OWN_MAC = 0x02000A00000A
OWN_IP = "10.0.0.10"
PORT = 7148

# fhg_rx_pkg's verdict codes, by the model's verdict names.
CODES = {
    rx_expect.DELIVERED: 0,  # V_PEND: handed to the merger
    rx_expect.ARP_VERDICT: 1,
    rx_expect.TO_CPU: 2,
    "rx_drop_fcs": 3,
    "rx_drop_dst_mac": 4,
    "rx_drop_ethertype": 5,
    "rx_drop_ip_version": 6,
    "rx_drop_ip_options": 7,
    "rx_drop_ip_fragment": 8,
    "rx_drop_ip_checksum": 9,
    "rx_drop_ip_protocol": 10,
    "rx_drop_dst_ip": 11,
    "rx_drop_dst_port": 12,
    "rx_drop_length": 13,
    "rx_drop_arp": 16,
    "rx_drop_disabled": 17,
}


def runs(frame: bytes, lo: int) -> list[tuple[int, int, bytes]]:
    """The lane's input runs for ``frame`` starting at bus segment ``lo``: (lo, n, bytes)."""
    out = []
    pos = 0
    nseg = -(-len(frame) // SEG)
    while pos < nseg:
        n = min(8 - lo, nseg - pos)
        out.append((lo, n, frame[SEG * pos : SEG * (pos + n)]))
        pos += n
        lo = 0
    return out


@dataclass
class LaneOut:
    """What the lane put out, in order."""

    verdicts: list[tuple[int, int]] = field(default_factory=list)  # (code, bytes)
    metas: list[int] = field(default_factory=list)
    datagrams: list[tuple[bytes, bool]] = field(default_factory=list)  # (payload, ok)
    cpu_frames: list[tuple[bytes, bool, int]] = field(default_factory=list)  # (rows, ok, len)
    arp: list[tuple[int, int, int]] = field(default_factory=list)  # (reply, sha, spa)


class LaneMonitor(ClockedTask):
    """Collects the lane's outputs, each edge closing a cycle; pops its FIFO always (an
    entry is taken in every cycle it is shown)."""

    def __init__(self, dut) -> None:  # noqa: ANN001
        self.attach(dut, "", dut.clk, "clk", dut.rst, True)
        self.d = dut
        self.out = LaneOut()
        self._words = bytearray()
        self._rows: dict[int, bytes] = {}
        dut.lf_pop.value = 1
        r = {n: int_reader(getattr(dut, n)) for n in (
            "vd_valid", "vd_code", "vd_bytes", "acc_push", "acc_meta", "lf_valid", "cpu_we0",
            "cpu_row0", "cpu_we1", "cpu_row1", "cpu_end", "cpu_end_ok", "cpu_len", "arp_evt",
            "arp_evt_reply", "arp_sha", "arp_spa")}  # fmt: skip
        self.r = r
        self.start()

    def on_edge(self) -> None:
        r, d, out = self.r, self.d, self.out
        if self.in_reset():
            return
        if r["vd_valid"]():
            out.verdicts.append((r["vd_code"](), r["vd_bytes"]()))
        if r["acc_push"]():
            out.metas.append(r["acc_meta"]())
        # First-word fall-through, always popped: each valid entry is taken at its edge.
        if r["lf_valid"]():
            entry = int(d.lf_data.value)
            data = (entry & ((1 << 1024) - 1)).to_bytes(128, "little")
            ok, last = (entry >> 1024) & 1, (entry >> 1025) & 1
            lastb = entry >> 1026
            if last:
                n = 0 if lastb & 0x80 else (lastb & 0x7F) + 1
                self._words += data[:n]
                out.datagrams.append((bytes(self._words), bool(ok)))
                self._words = bytearray()
            else:
                self._words += data
        # A frame's end comes the cycle after its last words, when the next frame's first
        # words may already be written: close it first.
        if r["cpu_end"]():
            rows = b"".join(self._rows.get(i, b"") for i in range(len(self._rows)))
            out.cpu_frames.append((rows, bool(r["cpu_end_ok"]()), r["cpu_len"]()))
            self._rows = {}
        for k in (0, 1):
            if r[f"cpu_we{k}"]():
                word = int(getattr(d, f"cpu_data{k}").value)
                self._rows[r[f"cpu_row{k}"]()] = word.to_bytes(128, "little")
        if r["arp_evt"]():
            out.arp.append((r["arp_evt_reply"](), r["arp_sha"](), r["arp_spa"]()))


async def start(dut, cfg: rx_expect.RxConfig, cpu_free: bool) -> LaneMonitor:  # noqa: ANN001
    """Reset the lane under ``cfg``; the order queue, the ARP queue and (``cpu_free``) the
    CPU buffer always have room."""
    cocotb.start_soon(Clock(dut.clk, MAC_PERIOD_PS, unit="ps").start())
    dut.rst.value = 1
    dut.in_valid.value = 0
    dut.acc_room.value = 1
    dut.arp_room.value = 1
    dut.cpu_grant.value = int(cpu_free)
    configure(dut, cfg)
    mon = LaneMonitor(dut)
    await ClockCycles(dut.clk, 8)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 4)
    return mon


def configure(dut, cfg: rx_expect.RxConfig) -> None:  # noqa: ANN001
    dut.cfg_mac.value = cfg.mac
    dut.cfg_ip.value = cfg.ip
    dut.cfg_netmask.value = cfg.netmask
    dut.cfg_mc_ip.value = cfg.mc_ip
    dut.cfg_mc_mask.value = cfg.mc_mask
    dut.cfg_port.value = cfg.port
    dut.cfg_promisc.value = int(cfg.promiscuous)
    dut.cfg_cpu_rx_en.value = int(cfg.cpu_rx_en)
    dut.cfg_arp_reply_en.value = int(cfg.arp_reply_en)
    dut.cfg_arp_learn_en.value = int(cfg.arp_learn_en)
    dut.cfg_fabric_en.value = int(cfg.fabric_en)


async def feed(dut, mix: list[rx_expect.MixFrame], rng: random.Random, idle: float) -> None:  # noqa: ANN001
    """The frames as the unpacker hands them to a lane, the arrival tag counting."""
    for tag, mf in enumerate(mix):
        lo = rng.randrange(8)
        parts = runs(mf.frame, lo)
        for k, (run_lo, n, chunk) in enumerate(parts):
            while rng.random() < idle:
                dut.in_valid.value = 0
                await RisingEdge(dut.clk)
            bus = bytearray(rng.randbytes(128))
            bus[SEG * run_lo : SEG * run_lo + len(chunk)] = chunk
            last = k == len(parts) - 1
            dut.in_valid.value = 1
            dut.in_data.value = int.from_bytes(bus, "little")
            dut.in_lo.value = run_lo
            dut.in_n.value = n
            dut.in_sop.value = int(k == 0)
            dut.in_eop.value = int(last)
            dut.in_err.value = int(last and mf.err)
            dut.in_mty.value = (-len(mf.frame) % SEG) if last else 0
            dut.in_tag.value = tag & 7
            await RisingEdge(dut.clk)
    dut.in_valid.value = 0
    dut.in_sop.value = 0
    dut.in_eop.value = 0


def ones_sum(data: bytes) -> int:
    if len(data) & 1:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def check(mix: list[rx_expect.MixFrame], out: LaneOut, cpu_free: bool) -> None:
    assert len(out.verdicts) == len(mix), f"{len(out.verdicts)} verdicts for {len(mix)} frames"
    delivered = [mf for mf in mix if mf.verdict.delivered]
    for k, (mf, (code, nbytes)) in enumerate(zip(mix, out.verdicts, strict=True)):
        want = CODES[mf.verdict.verdict]
        if mf.verdict.verdict == rx_expect.TO_CPU and not cpu_free:
            want = 15  # V_CPU_BUSY: rx_drop_cpu_busy
        assert (code, nbytes) == (want, len(mf.frame)), (
            f"frame {k} ({mf.kind}, {len(mf.frame)} B): code {code}, {nbytes} B; the model "
            f"says {mf.verdict.verdict} (code {want})"
        )
    # A datagram is handed over at header time; one whose frame then fails at its end
    # (FCS, truncation) ends with `ok` low, and the merger drops it.
    assert len(out.metas) == len(out.datagrams), (len(out.metas), len(out.datagrams))
    kept = [(m, d) for m, (d, ok) in zip(out.metas, out.datagrams, strict=True) if ok]
    assert len(kept) == len(delivered), f"{len(kept)} datagrams ended ok, {len(delivered)}"
    for k, (mf, (meta, payload)) in enumerate(zip(delivered, kept, strict=True)):
        v = mf.verdict
        assert payload == v.payload, f"datagram {k} ({mf.kind}): payload differs"
        fields = (meta >> 85, (meta >> 53) & 0xFFFF_FFFF, (meta >> 37) & 0xFFFF,
                  (meta >> 21) & 0xFFFF)  # fmt: skip
        assert fields == (v.src_ip, v.dst_ip, v.src_port, v.dst_port), f"datagram {k}: meta"
        has_sum = bool((meta >> 20) & 1)
        csum = int.from_bytes(mf.frame[40:42], "big")
        assert has_sum == (csum != 0), f"datagram {k}: checksum field flag"
        if has_sum:
            good = ones_sum(v.payload) + (meta & 0xFFFFF)
            while good >> 16:
                good = (good & 0xFFFF) + (good >> 16)
            assert (good == 0xFFFF) == (not v.bad_udp_checksum), f"datagram {k}: header sum"
    # Likewise a frame claims the CPU buffer at header time and is placed (cpu_end_ok) or
    # not at its end.
    cpu = [mf for mf in mix if mf.verdict.verdict == rx_expect.TO_CPU and cpu_free]
    placed = [(rows, n) for rows, ok, n in out.cpu_frames if ok]
    assert len(placed) == len(cpu), f"{len(placed)} CPU frames placed for {len(cpu)}"
    assert cpu_free or not out.cpu_frames, "CPU frames written with the buffer taken"
    for k, (mf, (rows, n)) in enumerate(zip(cpu, placed, strict=True)):
        assert n == len(mf.frame), f"CPU frame {k} ({mf.kind}): length {n}"
        assert rows[: len(mf.frame)] == mf.frame, f"CPU frame {k} ({mf.kind}): bytes differ"
    arp = [mf for mf in mix if mf.verdict.verdict == rx_expect.ARP_VERDICT]
    assert len(out.arp) == len(arp), f"{len(out.arp)} ARP events for {len(arp)}"
    for (reply, sha, spa), mf in zip(out.arp, arp, strict=True):
        f = mf.frame
        op = int.from_bytes(f[20:22], "big")
        assert (reply, sha, spa) == (
            int(op == 2),
            int.from_bytes(f[22:28], "big"),
            int.from_bytes(f[28:32], "big"),
        ), f"ARP event for {mf.kind}"


@dataclass(frozen=True)
class MixRun:
    """One run of the bench: the filter's configuration, the mix, the bus's idle share and
    whether the CPU buffer is free."""

    cfg: rx_expect.RxConfig
    frames: int
    seed: int
    idle: float = 0.0
    cpu_free: bool = True


async def run_mix(dut, run: MixRun) -> None:  # noqa: ANN001
    mix = rx_expect.make_mix(run.frames, run.cfg, seed=run.seed)
    mon = await start(dut, run.cfg, run.cpu_free)
    await feed(dut, mix, random.Random(run.seed), run.idle)
    await ClockCycles(dut.clk, 40)
    check(mix, mon.out, run.cpu_free)
    kinds = {mf.verdict.verdict for mf in mix}
    assert len(kinds) >= 8, f"the mix exercised only {sorted(kinds)}"


@cocotb.test()
async def verdicts_payloads_and_meta_match_the_model(dut) -> None:  # noqa: ANN001
    """1500 frames of the mix back to back, no CPU path: every verdict, byte count,
    payload and meta as the model says."""
    cfg = rx_expect.RxConfig.make(OWN_MAC, OWN_IP, PORT, mc_ip="239.1.2.0",
                                  mc_mask="255.255.255.0")  # fmt: skip
    await run_mix(dut, MixRun(cfg, frames=1500, seed=21))


@cocotb.test()
async def cpu_path_promiscuous_and_learning_with_idle_cycles(dut) -> None:  # noqa: ANN001
    """The same with the CPU path, promiscuous mode and ARP learning on, idle cycles inside
    and between frames: frames for the CPU arrive whole in its buffer."""
    cfg = rx_expect.RxConfig.make(OWN_MAC, OWN_IP, PORT, mc_ip="239.1.2.0",
                                  mc_mask="255.255.255.0", promiscuous=True,
                                  cpu_rx_en=True, arp_learn_en=True)  # fmt: skip
    await run_mix(dut, MixRun(cfg, frames=800, seed=22, idle=0.2))


@cocotb.test()
async def fabric_disabled_and_cpu_buffer_taken(dut) -> None:  # noqa: ANN001
    """With fabric_en low, datagrams that pass every other check are rx_drop_disabled; with
    the CPU buffer taken, frames for the CPU are rx_drop_cpu_busy and nothing is written;
    every other frame keeps its verdict."""
    cfg = rx_expect.RxConfig.make(OWN_MAC, OWN_IP, PORT, fabric_en=False, cpu_rx_en=True)
    await run_mix(dut, MixRun(cfg, frames=600, seed=23, idle=0.05, cpu_free=False))
