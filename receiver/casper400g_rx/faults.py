"""Fault-injected schedules of the example stream, with the counts they must produce.

A schedule is the list of sequence numbers in the order they are sent; the sender and
the mem backend emit exactly that, so tests and demos know every injected fault.

The expected numbers follow from how each fault is built, not from re-running the
engine's algorithm: every dropped packet is `lost`, every re-sent packet inside the
window is a `duplicate`, every packet re-sent after the stream moved `max_chunks`
chunks past it is `late`, and reordering closer than the window costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass
class FaultySchedule:
    schedule: npt.NDArray[np.uint64]  # sequence numbers in the order they are sent
    total: int  # packets of the clean stream: 0 .. total-1
    dropped: npt.NDArray[np.int64]
    duplicated: npt.NDArray[np.int64]
    late: npt.NDArray[np.int64]
    reordered: int


def faulty_schedule(
    n_chunks: int,
    packets_per_chunk: int,
    max_chunks: int,
    rng: np.random.Generator,
    drop_rate: float = 0.03,
    dup_rate: float = 0.02,
    reorder_rate: float = 0.05,
    n_late: int = 5,
) -> FaultySchedule:
    if max_chunks < 2:
        raise ValueError("reordering needs max_chunks >= 2")
    ppc = packets_per_chunk
    total = n_chunks * ppc
    seqs = np.arange(total)
    # The stream's first and last packets stay, so its extent is unambiguous.
    inner = seqs[1:-1]
    dropped = np.sort(rng.choice(inner, size=int(drop_rate * total), replace=False))
    kept = np.setdiff1d(seqs, dropped)
    # Delays stay below (max_chunks - 1) chunks, so no delayed packet can fall out of the window.
    max_delay = (max_chunks - 1) * ppc - 1
    keys = kept.astype(np.float64)
    delayed = rng.random(len(kept)) < reorder_rate
    keys[delayed] += rng.uniform(1.5, max_delay, size=int(delayed.sum()))
    duplicated = np.sort(rng.choice(kept[1:-1], size=int(dup_rate * total), replace=False))
    dup_keys = duplicated + rng.uniform(0.25, max_delay, size=len(duplicated))
    # A late packet is re-sent once a packet of chunk (its chunk + max_chunks) has
    # certainly arrived: chunk c+max_chunks+1 starts after every key of chunk c+max_chunks.
    late_pool = seqs[: (n_chunks - max_chunks - 2) * ppc]
    late_pool = np.setdiff1d(late_pool, duplicated)
    late = np.sort(rng.choice(late_pool, size=n_late, replace=False))
    late_keys = (late // ppc + max_chunks + 1) * ppc + max_delay + 0.75
    all_keys = np.concatenate([keys, dup_keys, late_keys])
    all_seqs = np.concatenate([kept, duplicated, late])
    order = np.argsort(all_keys, kind="stable")
    return FaultySchedule(
        schedule=all_seqs[order].astype(np.uint64),
        total=total,
        dropped=dropped,
        duplicated=duplicated,
        late=late,
        reordered=int(delayed.sum()),
    )
