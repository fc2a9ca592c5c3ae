"""The example stream (docs/design/architecture.md) computed with NumPy, independently of the
C++ code.

UDP payload = big-endian uint64 words; word 0 is the packet sequence n, word k is (n << 10) | k.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def example_payloads(seqs: npt.ArrayLike, payload_size: int = 8192) -> npt.NDArray[np.uint8]:
    """Payloads of the packets `seqs`, shape (len(seqs), payload_size), uint8."""
    if payload_size <= 0 or payload_size % 8:
        raise ValueError(f"payload_size must be a positive multiple of 8, got {payload_size}")
    n = np.asarray(seqs, dtype=np.uint64).reshape(-1, 1)
    k = np.arange(payload_size // 8, dtype=np.uint64).reshape(1, -1)
    words = (n << np.uint64(10)) | k
    words[:, 0] = n[:, 0]
    return words.astype(">u8").view(np.uint8).reshape(len(n), payload_size)


def example_chunk(
    chunk_id: int, packets_per_chunk: int, payload_size: int = 8192
) -> npt.NDArray[np.uint8]:
    """The full content of chunk `chunk_id` when no packet is missing."""
    first = chunk_id * packets_per_chunk
    return example_payloads(np.arange(first, first + packets_per_chunk), payload_size)
