"""fhg_tx_icrc alone: the RoCEv2 ICRC written into frames on the DCMAC segment bus.

A compliant segment packer (:class:`~verification.models.dcmac_tx.SegmentPacker`: two
SOPs per cycle, frames back to back at segment granularity) feeds the engine a random mix
of RoCEv2 RDMA WRITE frames with random bytes in place of their ICRC and frames it must leave alone
(UDP to other ports, TCP to 4791, ARP, IPv6, IPv4 with options, frames too short to be
RoCEv2); the DCMAC model on its output stalls at random and checks every PG369 rule. Each
frame that comes out must be the frame that went in, with the ICRC of
:func:`verification.models.roce.icrc` (zlib's CRC-32 over the masked packet) in its last
four bytes when it is RoCEv2 and the RDMA mode is on, and untouched otherwise.
"""

from __future__ import annotations

import random
import struct

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from verification.models import roce
from verification.models.dcmac_tx import SEGMENTS, DcmacTxMonitor, SegmentPacker

MAC_PERIOD_FS = 2557345  # 391.03 MHz


def roce_frame(rng: random.Random) -> bytes:
    n = (
        rng.choice([0, 1, 2, 3, 4, 5, 8, 13, 60, 61, 62, 63, 64, 127, 1024, 4096])
        if rng.random() < 0.3
        else rng.randint(0, 700)
    )
    imm = rng.random() < 0.4
    w = roce.random_write(rng, n, imm, any_src_port=True, any_udp_checksum=True)
    return roce.build_frame(w)


def other_frame(rng: random.Random) -> tuple[bytes, bool]:
    """A frame that is not RoCEv2 (False), or a short UDP/4791 one the engine patches (True)."""
    base = bytearray(roce_frame(rng))
    kind = rng.randrange(6)
    if kind == 0:  # UDP to another port
        base[36:38] = struct.pack("!H", rng.choice([4790, 4792, 0x12B6, 0xB712]))
    elif kind == 1:  # TCP with 4791 at the UDP port's place
        base[23] = 6
    elif kind == 2:  # IPv6 EtherType
        base[12:14] = b"\x86\xdd"
    elif kind == 3:  # IPv4 with options
        base[14] = 0x46
    elif kind == 4:  # ARP
        return rng.randbytes(12) + b"\x08\x06" + rng.randbytes(46), False
    else:  # UDP to 4791, padded to 60 bytes: patched as the engine defines it
        body = bytes(base[:42]) + rng.randbytes(rng.randint(0, 14))
        return body + bytes(60 - len(body)), True
    return bytes(base), False


def with_icrc(frame: bytes) -> bytes:
    return frame[:-4] + struct.pack("<I", roce.icrc(frame[14:-4]))


async def feed(dut, packer: SegmentPacker) -> None:  # noqa: ANN001
    """Drive the packer's cycles into the engine, advancing when the engine took one."""
    edge = RisingEdge(dut.clk)
    while True:
        await edge
        tready = int(dut.in_tready.value)
        packer.taken(tready)
        cyc = packer.present(0)  # never a gap inside a frame
        if cyc is None:
            dut.in_tvalid.value = 0
            dut.in_ena.value = 0
            dut.in_sop.value = 0
            dut.in_eop.value = 0
            continue
        data = ena = sop = eop = mty = 0
        for i in range(SEGMENTS):
            data |= cyc.data[i] << (128 * i)
            ena |= cyc.ena[i] << i
            sop |= cyc.sop[i] << i
            eop |= cyc.eop[i] << i
            mty |= cyc.mty[i] << (4 * i)
        dut.in_tvalid.value = 1
        dut.in_tdata.value = data
        dut.in_ena.value = ena
        dut.in_sop.value = sop
        dut.in_eop.value = eop
        dut.in_mty.value = mty


async def count_patched(dut, total: list[int]) -> None:  # noqa: ANN001
    edge = RisingEdge(dut.clk)
    while True:
        await edge
        total[0] += int(dut.stat_patched.value)


async def run(dut, mode: str, seed: int, nframes: int, enable: bool) -> None:  # noqa: ANN001
    Clock(dut.clk, MAC_PERIOD_FS, unit="fs", period_high=MAC_PERIOD_FS // 2).start()
    dut.rst.value = 1
    dut.cfg_en.value = int(enable)
    dut.in_tvalid.value = 0
    dut.in_err.value = 0
    mon = DcmacTxMonitor(dut, clock=dut.clk, mode=mode, seed=seed, reset=dut.rst)
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    rng = random.Random(seed)
    packer = SegmentPacker()
    want: list[bytes] = []
    patched = 0
    for _ in range(nframes):
        if rng.random() < 0.7:
            frame = roce_frame(rng)
            sent = frame[:-4] + rng.randbytes(4)  # the engine ignores what it replaces
            packer.push(sent)
            want.append(frame if enable else sent)
            patched += enable
        else:
            frame, patch = other_frame(rng)
            packer.push(frame)
            want.append(with_icrc(frame) if patch and enable else frame)
            patched += patch and enable
    total = [0]
    cocotb.start_soon(feed(dut, packer))
    cocotb.start_soon(count_patched(dut, total))
    for _ in range(200 * nframes):
        await ClockCycles(dut.clk, 10)
        if len(mon.frames) >= len(want):
            break
    await ClockCycles(dut.clk, 20)
    assert len(mon.frames) == len(want), f"{len(mon.frames)} of {len(want)} frames"
    for k, (got, exp) in enumerate(zip(mon.frames, want, strict=True)):
        assert got.body == exp, (
            f"frame {k} ({len(exp)} B, SOP segment {got.first_seg}): "
            f"tail {got.body[-8:].hex()} want {exp[-8:].hex()}"
        )
    assert total[0] == patched, (total[0], patched)
    # The mix really exercised what the engine has to handle.
    firsts = {f.first_seg for f in mon.frames}
    assert firsts == set(range(SEGMENTS)), firsts
    ends = {len(f.body) % 16 for f in mon.frames}
    assert {2, 6, 10, 14} <= ends, ends
    # RoCEv2 frames are 2 mod 4 bytes long: the ones 2 mod 16 have an ICRC that straddles two
    # segments; some of those straddle two cycles (the last segment is a cycle's first).
    last_seg = {
        (f.first_seg + -(-len(f.body) // 16) - 1) % SEGMENTS
        for f in mon.frames
        if len(f.body) % 16 in (1, 2, 3)
    }
    assert 0 in last_seg, last_seg


@cocotb.test()
async def icrc_at_line_rate(dut) -> None:  # noqa: ANN001
    """Back to back, no stalls: every SOP and EOP segment position, two frames ending per cycle."""
    await run(dut, "always", seed=1, nframes=600, enable=True)


@cocotb.test()
async def icrc_with_stalls(dut) -> None:  # noqa: ANN001
    """The DCMAC stalls at random (tready, taf): the bus is held, nothing else changes."""
    await run(dut, "random", seed=2, nframes=400, enable=True)


@cocotb.test()
async def rdma_mode_off_changes_nothing(dut) -> None:  # noqa: ANN001
    await run(dut, "random", seed=3, nframes=200, enable=False)
