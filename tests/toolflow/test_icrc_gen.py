"""The ICRC engine's constants (casper400g_dev/icrc_gen.py): the committed package is what
the generator writes, and the engine's algorithm, run bit for bit in Python, gives the
ICRC that zlib's CRC-32 of the masked packet gives (verification/models/roce.py)."""

from __future__ import annotations

import random

import pytest

from casper400g_dev import icrc_gen
from verification.models import roce


def test_committed_package_is_generated() -> None:
    assert icrc_gen.PKG_PATH.read_text() == icrc_gen.render_package(), (
        "run python -m casper400g_dev.icrc_gen"
    )


def test_inverse_undoes_advance() -> None:
    a = icrc_gen.advance(7)
    inv = icrc_gen.invert(a)
    ident = icrc_gen.compose(inv, a)
    assert ident == [1 << k for k in range(32)]


def test_unadvance_steps_undo_every_advance_at_a_frame_end() -> None:
    rng = random.Random(5)
    ends = [(q, mty) for q in range(icrc_gen.SEGMENTS) for mty in range(icrc_gen.SEG_BYTES)]
    lengths = sorted({icrc_gen.unadvance_bytes(q, mty) for q, mty in ends})
    assert lengths == list(range(4, icrc_gen.MAX_UNADVANCE + 1))
    for n in lengths:
        v = rng.getrandbits(32)
        ahead = icrc_gen._apply(icrc_gen.advance(n), v)
        assert icrc_gen.unadvance(ahead, n) == v, n


@pytest.mark.parametrize("seed", range(4))
def test_model_matches_zlib_for_every_start_segment(seed: int) -> None:
    rng = random.Random(seed)
    for n in range(40):
        imm = n % 2 == 1
        w = roce.random_write(rng, lambda: rng.randint(0, 300), imm)
        frame = roce.build_frame(w)
        want = int.from_bytes(frame[-4:], "little")
        for first in range(icrc_gen.SEGMENTS):
            assert icrc_gen.model_icrc(frame, first) == want, (n, first)
