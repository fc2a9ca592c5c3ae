"""Golden model of the example design's tone mode (examples/pktgen_400g/fhg_tone_gen.sv and
fhg_pktgen.sv, ``pkt_mode`` = 1), written from the contract in NumPy.

A packet of ``size`` bytes carries its sequence number n (8 bytes, big-endian) and then
int8 complex samples, I then Q: sample i of packet n is sample ``n * spp + i`` of the
stream (``spp = (size - 8) // 2``). Sample s has phase ``s * step`` (mod 2^32); its value is
the saturated sum of the tone (a 256-entry cosine table, shifted right by ``amp_shift``)
and noise from 64 xorshift32 lanes, one 16-bit draw per lane per 128-byte beat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

HEADER_BYTES = 8
BEAT_BYTES = 128
LANES = 64
TABLE = 256
MODE_TONE = 1
_M32 = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class ToneConfig:
    """The tone registers: ``tone_step`` and the fields of ``tone_shape``."""

    step: int
    amp_shift: int = 0
    noise_bits: int = 4
    seed: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.step < 1 << 32:
            raise ValueError(f"tone step {self.step!r}: outside 0..2^32-1")
        if not 0 <= self.amp_shift < 16 or not 0 <= self.noise_bits < 16:
            raise ValueError(f"amp_shift {self.amp_shift!r}, noise_bits {self.noise_bits!r}: 0..15")
        if not 0 <= self.seed < 1 << 16:
            raise ValueError(f"seed {self.seed!r}: 16 bits")

    @classmethod
    def for_frequency(cls, cycles_per_sample: float, **kw: int) -> ToneConfig:
        """The step of the tone nearest ``cycles_per_sample`` (fraction of the sample rate)."""
        return cls(step=round(cycles_per_sample * 2**32) % 2**32, **kw)

    @classmethod
    def from_registers(cls, step: int, shape: int) -> ToneConfig:
        return cls(step, shape & 0xF, (shape >> 8) & 0xF, (shape >> 16) & 0xFFFF)

    @property
    def shape(self) -> int:
        """The ``tone_shape`` register value."""
        return self.amp_shift | self.noise_bits << 8 | self.seed << 16

    @property
    def frequency(self) -> float:
        """The tone's frequency in cycles per sample (a fraction of the sample rate)."""
        return self.step / 2**32


def cos_table() -> npt.NDArray[np.int16]:
    """round(127 cos(2 pi k / 256)), k = 0..255."""
    return np.round(127 * np.cos(2 * np.pi * np.arange(TABLE) / TABLE)).astype(np.int16)


def xorshift32(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    x = x ^ (x << np.uint32(13))
    x = x ^ (x >> np.uint32(17))
    return x ^ (x << np.uint32(5))


def lane_seeds() -> npt.NDArray[np.uint32]:
    """Each lane's constant: xorshift32 four times over (j + 1) * 0x9E3779B9 (mod 2^32)."""
    x = ((np.arange(LANES, dtype=np.uint64) + 1) * np.uint64(0x9E3779B9) & _M32).astype(np.uint32)
    for _ in range(4):
        x = xorshift32(x)
    return x


def noise_draws(cfg: ToneConfig, beats: int) -> npt.NDArray[np.uint32]:
    """The lanes' draws for beats 0..beats-1: row B holds each lane's state after B + 1
    steps from its seed."""
    state = lane_seeds() ^ np.uint32(cfg.seed * 0x00010001)
    out = np.empty((beats, LANES), dtype=np.uint32)
    for b in range(beats):
        state = xorshift32(state)
        out[b] = state
    return out


def samples_per_packet(size: int) -> int:
    return max(size - HEADER_BYTES, 0) // 2


def beats_per_packet(size: int) -> int:
    return -(-size // BEAT_BYTES)


def expected_payloads(
    cfg: ToneConfig, seqs: npt.ArrayLike, size: int, stream_id: int = 0
) -> npt.NDArray[np.uint8]:
    """Payload bytes of packets ``seqs`` (sequence numbers since the generator's reset,
    every packet ``size`` bytes in tone mode), one row each; a non-zero ``stream_id``
    (fhg_pktgen's STREAM_ID) is the header's first byte."""
    seqs = np.asarray(seqs, dtype=np.uint64)
    spp, bpp = samples_per_packet(size), beats_per_packet(size)
    out = np.zeros((len(seqs), size), dtype=np.uint8)
    if not len(seqs):
        return out
    for k in range(min(HEADER_BYTES, size)):
        out[:, k] = (seqs >> np.uint64(8 * (HEADER_BYTES - 1 - k))) & np.uint64(0xFF)
    if stream_id:
        out[:, 0] = stream_id
    offsets = np.arange(HEADER_BYTES, size)
    if not len(offsets):
        return out
    beat, lane, q = offsets // BEAT_BYTES, (offsets % BEAT_BYTES) // 2, offsets % 2
    index = beat * LANES + lane - HEADER_BYTES // 2  # sample within the packet
    sample = (seqs[:, None] * np.uint64(spp) + index.astype(np.uint64)[None, :]) & _M32
    phase = (sample * np.uint64(cfg.step)) & _M32
    k = (phase >> np.uint64(24)).astype(np.int64)
    table = cos_table()
    tone = np.where(q[None, :] == 0, table[k], table[(k - TABLE // 4) % TABLE]).astype(np.int32)
    tone >>= cfg.amp_shift
    draws = noise_draws(cfg, int(seqs.max()) * bpp + bpp)
    beat_index = (seqs[:, None] * np.uint64(bpp) + beat.astype(np.uint64)[None, :]).astype(np.int64)
    w = draws[beat_index, lane[None, :]]
    byte = np.where(q[None, :] == 0, w >> np.uint32(24), (w >> np.uint32(16)) & np.uint32(0xFF))
    noise = byte.astype(np.uint8).view(np.int8).astype(np.int32)
    bits = min(cfg.noise_bits, 8)
    noise = noise >> (8 - bits) if bits else np.zeros_like(noise)
    out[:, HEADER_BYTES:] = np.clip(tone + noise, -128, 127).astype(np.int8).view(np.uint8)
    return out


def samples(payloads: npt.NDArray[np.uint8]) -> npt.NDArray[np.complex64]:
    """The complex samples of tone-mode payloads (one row per packet)."""
    spp = samples_per_packet(payloads.shape[-1])
    iq = payloads[..., HEADER_BYTES : HEADER_BYTES + 2 * spp].view(np.int8)
    iq = iq.reshape(*payloads.shape[:-1], spp, 2).astype(np.float32)
    return (iq[..., 0] + 1j * iq[..., 1]).astype(np.complex64)
