"""Constants of the RoCEv2 ICRC engine (``tx/fhg_tx_icrc.sv``) and a bit-true model of it.

The ICRC (IBTA Annex A17) is the Ethernet CRC-32 (reflected polynomial 0xEDB88320, initial
value and final XOR all ones) over eight 0xFF bytes, the IPv4 header with TOS, TTL and
checksum masked to ones, the UDP header with its checksum masked, the BTH with its
FECN/BECN/reserved byte masked, and the rest of the packet up to the ICRC.

The engine works on the DCMAC bus, eight 16-byte segments per cycle, and uses only that
the CRC register update is linear over GF(2): processing data ``d`` from state ``s`` gives
``A^|d| s + B(d)`` with ``A`` the zero-byte advance and ``B(d)`` the CRC of ``d`` from state
zero. Everything the hardware needs is then a set of constant 32-row XOR masks:

* ``M[i]`` (segment position ``i`` = 0..7): ``A^(16 (7 - i)) B16``, the contribution of a
  segment weighted as if the cycle ended after segment 7, so one cycle's segments of one
  frame sum with a plain XOR (prefix sums ``P``);
* ``A1024``: one cycle's advance of a frame that continues from the previous cycle;
* ``KP[p]``: ``A^(16 (7 - p)) K`` with ``K`` the state after the frame's first segment.
  That segment is constant once masked: its bytes 6..13 stand for the eight 0xFF bytes,
  byte 14 is 0x45 (IPv4, IHL 5: checked) and byte 15 (TOS) is masked; bytes 0..5 (the
  destination MAC) are not covered, so the frame's CRC starts from ``K`` after it;
* ``UN``: after the frame's last segment ``q`` the state is ``n = 16 (7 - q) + mty + 4``
  bytes too far (the cycle weighting, then the ICRC bytes and the unused ones, zeroed but
  advanced over); ``n`` < 256 is undone in four steps of two bits each, step ``g`` applying
  ``A^-(k 4^g)`` for the digit ``k`` = 1..3 of ``n`` in base 4 (a digit 0 leaves the state
  as it is). ``UN[3 g + k - 1]`` is that matrix; ``n`` < 132, so the last step has no
  digit 3 and the table 11 matrices.

``python -m casper400g_dev.icrc_gen`` writes ``tx/fhg_icrc_pkg.sv``; a test checks that the
committed file is what this module generates and that :func:`model_icrc` (the engine's
algorithm, segment by segment) equals the ICRC of :mod:`verification.models.roce`.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from pathlib import Path

POLY = 0xEDB88320
SEG_BYTES = 16
SEGMENTS = 8
# Frame bytes the ICRC masks to ones, by segment of the frame (index 1 and 2; segment 0 is
# replaced by K): TTL (22), IPv4 checksum (24, 25) | UDP checksum (40, 41), BTH byte 4 (46).
MASK_ONES = {1: (6, 8, 9), 2: (8, 9, 14)}
# The un-advance at a frame's end, n = 16 (7 - q) + mty + 4 bytes, in base-4 digits (steps).
MAX_UNADVANCE = SEG_BYTES * (SEGMENTS - 1) + (SEG_BYTES - 1) + 4
UN_STEPS = 4
# The first segment as the ICRC sees it: bytes 6..13 = the 0xFF prefix, 14 = 0x45, 15 = TOS.
FIRST_SEGMENT_TAIL = b"\xff" * 8 + b"\x45\xff"

PKG_PATH = (
    Path(__file__).resolve().parents[1]
    / "jasper_library"
    / "hdl_sources"
    / "fourhundred_gbe"
    / "tx"
    / "fhg_icrc_pkg.sv"
)

Matrix = list[int]  # 32 row masks: output bit k = parity(row[k] & input)


def crc_update(state: int, data: bytes | bytearray) -> int:
    """The reflected CRC-32 register after ``data`` (no initial or final inversion)."""
    for byte in data:
        state ^= byte
        for _ in range(8):
            state = (state >> 1) ^ (POLY if state & 1 else 0)
    return state


def _apply(m: Matrix, v: int) -> int:
    out = 0
    for k, row in enumerate(m):
        out |= (bin(row & v).count("1") & 1) << k
    return out


def _matrix_of(columns: Sequence[int]) -> Matrix:
    """Rows of the linear map whose image of unit vector j is ``columns[j]``."""
    rows = [0] * 32
    for j, col in enumerate(columns):
        for k in range(32):
            if col >> k & 1:
                rows[k] |= 1 << j
    return rows


def advance(nbytes: int) -> Matrix:
    """``A^nbytes``: the state after ``nbytes`` zero bytes, as a function of the state."""
    zeros = bytes(nbytes)
    return _matrix_of([crc_update(1 << j, zeros) for j in range(32)])


def data_matrix(nbytes: int) -> Matrix:
    """``B``: the state after ``nbytes`` of data from state zero (byte x = bits 8x+7:8x)."""
    cols = []
    for j in range(8 * nbytes):
        unit = bytearray(nbytes)
        unit[j // 8] = 1 << (j % 8)
        cols.append(crc_update(0, unit))
    return _matrix_of(cols)


def compose(a: Matrix, b: Matrix) -> Matrix:
    """``a`` after ``b`` (``b`` has 32 outputs)."""
    width = max((row.bit_length() for row in b), default=0)
    return _matrix_of([_apply(a, _apply(b, 1 << j)) for j in range(width)])


def invert(m: Matrix) -> Matrix:
    """Inverse of a 32x32 matrix over GF(2)."""
    rows = [(m[k], 1 << k) for k in range(32)]
    for col in range(32):
        pivot = next((r for r in range(col, 32) if rows[r][0] >> col & 1), None)
        if pivot is None:
            raise ValueError("singular matrix")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(32):
            if r != col and rows[r][0] >> col & 1:
                rows[r] = (rows[r][0] ^ rows[col][0], rows[r][1] ^ rows[col][1])
    return [rows[k][1] for k in range(32)]


@functools.cache
def constants() -> dict[str, list[int]]:
    """Every constant of the engine, by its name in the SystemVerilog package (do not
    modify the lists: they are cached)."""
    b16 = data_matrix(SEG_BYTES)
    m = [compose(advance(SEG_BYTES * (SEGMENTS - 1 - i)), b16) for i in range(SEGMENTS)]
    k = crc_update(0xFFFF_FFFF, FIRST_SEGMENT_TAIL)
    kp = [_apply(advance(SEG_BYTES * (SEGMENTS - 1 - p)), k) for p in range(SEGMENTS)]
    un = [
        invert(advance(k * 4**g))
        for g in range(UN_STEPS)
        for k in range(1, 4)
        if k * 4**g <= MAX_UNADVANCE
    ]
    return {
        "ICRC_M": [row for mat in m for row in mat],
        "ICRC_A1024": advance(SEG_BYTES * SEGMENTS),
        "ICRC_KP": kp,
        "ICRC_UN": [row for mat in un for row in mat],
    }


def unadvance_bytes(q: int, mty: int) -> int:
    """How far the state of a frame that ends in segment ``q`` with ``mty`` unused bytes is
    ahead of its last covered byte."""
    return SEG_BYTES * (SEGMENTS - 1 - q) + mty + 4


def unadvance(v: int, n: int) -> int:
    """``A^-n v`` the way the engine does it: one ``UN`` step per base-4 digit of ``n``."""
    un = constants()["ICRC_UN"]
    for g in range(UN_STEPS):
        k = n >> (2 * g) & 3
        if k:
            v = _apply(un[32 * (3 * g + k - 1) : 32 * (3 * g + k)], v)
    return v


# ---------------------------------------------------------------- bit-true model
def mask_segment(seg: bytes, rel: int) -> bytes:
    """A frame's segment number ``rel`` as the engine feeds it to the CRC."""
    if rel == 0:
        return bytes(SEG_BYTES)  # replaced by K
    out = bytearray(seg)
    for x in MASK_ONES.get(rel, ()):
        out[x] = 0xFF
    return bytes(out)


def model_icrc(frame: bytes, first_segment: int = 0) -> int:
    """The ICRC of ``frame`` (Ethernet, no FCS, ICRC bytes present) computed the way the
    engine does, with the frame starting on bus segment ``first_segment``: masked segments,
    position weights, the cycle carry, the two un-advances. Returns the value as sent (the
    frame's last four bytes, little-endian)."""
    c = constants()
    m = [c["ICRC_M"][32 * i : 32 * i + 32] for i in range(SEGMENTS)]
    data_end = len(frame) - 4
    nseg = -(-len(frame) // SEG_BYTES)
    mty = SEG_BYTES * nseg - len(frame)
    padded = frame[:data_end] + bytes(SEG_BYTES * nseg - data_end)
    pos = first_segment
    state = None  # state at the end of the previous cycle (continuing frame)
    rel = 0
    while True:
        p = pos % SEGMENTS
        q = min(SEGMENTS - 1, p + nseg - rel - 1)
        acc = 0
        for i in range(p, q + 1):
            seg = padded[SEG_BYTES * rel : SEG_BYTES * (rel + 1)]
            acc ^= _apply(m[i], int.from_bytes(mask_segment(seg, rel), "little"))
            rel += 1
        x = c["ICRC_KP"][p] if state is None else _apply(c["ICRC_A1024"], state)
        v = x ^ acc
        if rel == nseg:
            return ~unadvance(v, unadvance_bytes(q, mty)) & 0xFFFF_FFFF
        state = v
        pos = 0


# ---------------------------------------------------------------- SystemVerilog
def _literal(values: Sequence[int], width: int) -> str:
    """A packed concatenation: element i in bits [width*i +: width] (the last one first)."""
    items = [f"{width}'h{v:0{width // 4}x}" for v in reversed(values)]
    return "{\n        " + ",\n        ".join(items) + "}"


def render_package() -> str:
    c = constants()
    widths = {"ICRC_M": 128, "ICRC_KP": 32}
    decls = []
    for name, values in c.items():
        width = widths.get(name, 32)
        msb = width * len(values) - 1
        decls.append(f"    localparam logic [{msb}:0] {name} = {_literal(values, width)};")
    return (
        "// SPDX-License-Identifier: GPL-3.0-or-later\n"
        "// fhg_icrc_pkg — constant XOR masks of the RoCEv2 ICRC engine (fhg_tx_icrc).\n"
        "// GENERATED by `python -m casper400g_dev.icrc_gen` (casper400g_dev/icrc_gen.py, which\n"
        "// explains them); do not edit. Each matrix is 32 rows: output bit k is the parity of\n"
        "// (row k AND input); row k sits in bits [W*k +: W], W the input width.\n"
        "//   ICRC_M       8 x 32 rows of 128 bits: segment i's term, weighted to the cycle end\n"
        "//   ICRC_A1024   advance of a continuing frame by one cycle (128 bytes)\n"
        "//   ICRC_KP      8 states: the frame's first segment (K) at position p, weighted\n"
        "//   ICRC_UN      11 matrices: matrix 3 g + k - 1 un-advances by k 4^g bytes\n"
        "package fhg_icrc_pkg;\n" + "\n".join(decls) + "\nendpackage\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    text = render_package()
    if args == ["--check"]:
        if PKG_PATH.read_text() != text:
            print(f"{PKG_PATH} is stale: run python -m casper400g_dev.icrc_gen", file=sys.stderr)
            return 1
        return 0
    PKG_PATH.write_text(text)
    print(f"wrote {PKG_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
