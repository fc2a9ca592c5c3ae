"""The payload copies' streaming stores (copy.h): every store width the CPU offers writes
exactly the bytes asked for, at every alignment the placement paths produce, and the
width the copies use is the widest the CPU has."""

from __future__ import annotations

import numpy as np
import pytest

from casper400g_rx import _core

WIDTHS = (16, 32, 64)


def cpu_flags() -> set[str]:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def test_the_copies_use_the_widest_streaming_store_of_this_cpu() -> None:
    flags = cpu_flags()
    expected = 64 if "avx512f" in flags else 32 if "avx2" in flags else 16
    assert _core.stream_width() == expected


@pytest.mark.parametrize("width", WIDTHS)
def test_each_width_copies_exactly_the_lines_asked_for(width: int) -> None:
    if width > _core.stream_width():
        pytest.skip(f"this CPU has no {width}-byte streaming store")
    rng = np.random.default_rng(width)
    base = np.zeros(64 * 1024 + 256, np.uint8)
    # The array's own 64-byte boundary, then 16-byte steps off it: each store width meets
    # destinations aligned to it and destinations that are not (which take narrower ones).
    first = (-base.ctypes.data) % 64
    for shift in (0, 16, 32, 48):
        for lines in (1, 2, 3, 22, 128, 1000):
            size = 64 * lines
            src = rng.integers(0, 256, size, dtype=np.uint8)
            dst = rng.integers(0, 256, base.size, dtype=np.uint8)
            want = dst.copy()
            at = first + shift
            want[at : at + size] = src
            _core._stream_lines(dst, at, src.tobytes(), width)
            assert np.array_equal(dst, want), (width, shift, lines)


def test_a_copy_outside_the_array_or_off_the_lines_is_refused() -> None:
    dst = np.zeros(1024, np.uint8)
    at = (-dst.ctypes.data) % 64
    with pytest.raises(ValueError, match="whole 64-byte lines"):
        _core._stream_lines(dst, at, bytes(100), 16)
    with pytest.raises(ValueError, match="whole 64-byte lines"):
        _core._stream_lines(dst, 1024 - 64 + 16, bytes(64), 16)
    with pytest.raises(ValueError, match="width must be 16, 32 or 64, got 8"):
        _core._stream_lines(dst, at, bytes(64), 8)
    with pytest.raises(ValueError, match="16-byte aligned"):
        _core._stream_lines(dst, at + 8, bytes(64), 16)
