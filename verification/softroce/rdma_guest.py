"""The project's receiver inside the soft-RoCE VM: the ``rdma`` source on ``rxe0``.

Run in the VM (host root shared, so the checkout's .venv and tree are there):
``python -m verification.softroce.rdma_guest --out DIR ...``. It opens
``Capture(RdmaSource(...))`` over Linux's rdma_rxe, writes ``params.json`` (the
``cap.rdma_params`` the core needs), takes every chunk (saving its id, present mask and
data, then releasing it, which sends the core a credit datagram), keeps ``progress``
(JSON: the chunks taken so far, their ids and the capture's counters) up to date, and
when ``stop`` appears writes ``chunks.npz`` and ``stats.json``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

PARAMS_FILE = "params.json"
PROGRESS_FILE = "progress"
CHUNKS_FILE = "chunks.npz"
STATS_FILE = "stats.json"
STOP_FILE = "stop"


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="rxe0")
    ap.add_argument("--ip", required=True)
    ap.add_argument("--peer-ip", required=True)
    ap.add_argument("--credit-port", type=int, default=0)
    ap.add_argument("--mtu", type=int, default=4096)
    ap.add_argument("--psn", type=int, default=0)
    ap.add_argument("--payload", type=int, required=True)
    ap.add_argument("--slots", type=int, required=True)
    ap.add_argument("--chunks", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args(argv)

    import time

    import numpy as np

    import casper400g_rx as rx
    from casper400g_rx import Chunking, RdmaSource

    cap = rx.Capture(
        RdmaSource(
            peer_ip=a.peer_ip,
            ip=a.ip,
            device=a.device,
            credit_port=a.credit_port,
            mtu=a.mtu,
            psn=a.psn,
        ),
        fmt=rx.Format(payload_size=a.payload),
        chunking=Chunking(packets_per_chunk=a.slots, max_chunks=a.chunks),
    )
    _atomic(a.out / PARAMS_FILE, json.dumps(cap.rdma_params.as_dict()))
    ids: list[int] = []
    present: list[np.ndarray] = []
    data: list[np.ndarray] = []
    deadline = time.monotonic() + a.timeout

    def progress() -> None:
        text = json.dumps({"chunks": len(ids), "ids": ids, "stats": dict(cap.stats)})
        _atomic(a.out / PROGRESS_FILE, text)

    with cap:
        while not (a.out / STOP_FILE).exists() and time.monotonic() < deadline:
            for chunk in cap.chunks(timeout=0.5):
                ids.append(int(chunk.chunk_id))
                present.append(np.array(chunk.present))
                data.append(np.array(chunk.data))
                chunk.release()
                progress()
            progress()
    np.savez(
        a.out / CHUNKS_FILE,
        ids=np.array(ids, dtype=np.uint64),
        present=np.array(present, dtype=bool).reshape(len(ids), a.slots),
        data=np.array(data, dtype=np.uint8).reshape(len(ids), a.slots, a.payload),
    )
    _atomic(a.out / STATS_FILE, json.dumps(dict(cap.stats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
