"""The capture cluster on Dask distributed: one long-lived capture per stream, on the worker
that owns its NIC (and GPU), the user's function run on each chunk where the chunk is,
reduced results and statistics brought to the client, and the array's loss account
(account.py) as the report of a clean stop.

```python
from distributed import Client
from casper400g_rx.cluster import CaptureCluster, Reduction, Stream
from casper400g_rx import Chunking, UdpSource

client = Client("tcp://scheduler:8786")  # or Client(LocalCluster()) on a laptop
streams = [
    Stream("f0-lo", UdpSource(bind="0.0.0.0:7148", groups=["239.2.0.1"], interface="ens1"),
           chunking=Chunking(packets_per_chunk=4096), resources={"nic-ens1": 1}),
    ...
]
with CaptureCluster(client, streams, Reduction(power, chunks_per_result=100)) as cc:
    time.sleep(10)
    spectra = cc.results()  # {stream: [Result, ...]} integrated on the workers
    print(cc.stats())
report = cc.report  # every worker flushed; report.account(...) is the array's account
```

Dask places each stream's capture (a Dask actor) by the worker resources the stream asks
for (`dask worker --resources "nic-ens1=1"` on the host with that NIC), or on the workers
it names; nothing here schedules, launches or talks to workers except through Dask.
A capture's sockets and flow rules are opened on its worker, so its source describes that
host's NIC (its interface and addresses), not the client's.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _core
from .account import ArrayAccount, CaptureFigures, Transmitted, reconcile
from .chunking import Chunking
from .delivery import Delivery
from .sources import Source


@dataclass(frozen=True)
class Stream:
    """One capture of the array: its name (the account's key), the source as its host sees
    it, how it is chunked and delivered, and where it must run (`resources` a worker
    declares, or the `workers` by name or address). `fmt` makes the packet format on the
    worker (a picklable callable such as functools.partial(Format, payload_size=4096));
    None: the default Format()."""

    name: str
    source: Source
    chunking: Chunking = field(default_factory=Chunking)
    delivery: Delivery = field(default_factory=Delivery)
    fmt: Callable[[], _core.Format] | None = None
    rate_gbps: float | None = None
    resources: Mapping[str, float] = field(default_factory=dict)
    workers: Sequence[str] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a stream needs a name")
        if not isinstance(self.source, Source):
            raise TypeError(f"source must be a sources.py object, got {self.source!r}")
        object.__setattr__(self, "resources", dict(self.resources))
        object.__setattr__(self, "workers", tuple(self.workers))


@dataclass(frozen=True)
class Reduction:
    """What each worker makes of its chunks: `per_chunk(chunk)` gives an array (the chunk
    is released afterwards: keep nothing of it), added up over the chunks whose ids share
    `chunk_id // chunks_per_result` into one Result (e.g. a spectrum integrated over a
    second's chunks)."""

    per_chunk: Callable[[Any], Any]
    chunks_per_result: int = 1

    def __post_init__(self) -> None:
        if self.chunks_per_result < 1:
            raise ValueError(f"chunks_per_result must be >= 1, got {self.chunks_per_result!r}")


@dataclass(frozen=True)
class Result:
    """One reduced result of a stream: chunk ids [index * chunks_per_result, …)."""

    stream: str
    index: int
    value: Any
    chunks: int  # chunks that came (a chunk of which no packet came never does)
    packets: int  # packets present in them


@dataclass(frozen=True)
class StreamReport:
    """A stream's end: its worker, its counters at the stop, the results not yet taken,
    and the error that ended it early ('' when none)."""

    stream: str
    host: str
    worker: str
    stats: dict[str, Any]
    results: list[Result]
    error: str = ""


class StreamCapture:
    """The actor holding one stream's capture on its worker (made by CaptureCluster)."""

    def __init__(self, stream: Stream, reduction: Reduction | None) -> None:
        self.stream = stream
        self.reduction = reduction
        self._cap: Any = None
        self._final: dict[str, Any] | None = None  # the counters once stopped
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._done: list[Result] = []
        self._open: dict[int, list[Any]] = {}  # index -> [value, chunks, packets]
        self._error = ""
        self._stopping = threading.Event()
        self.host = ""
        self.worker = ""

    def start(self) -> dict[str, str]:
        """Open the capture here (its sockets, flow rules and group memberships belong to
        this worker's host) and start taking its chunks."""
        import socket

        from distributed import get_worker

        from .capture import Capture

        if self._cap is not None or self._final is not None:
            raise RuntimeError(f"stream {self.stream.name!r} is already started")
        w = get_worker()
        self.worker, self.host = w.address, str(w.name or socket.gethostname())
        s = self.stream
        self._cap = Capture(
            s.source,
            fmt=s.fmt() if s.fmt is not None else None,
            chunking=s.chunking,
            delivery=s.delivery,
            rate_gbps=s.rate_gbps,
        )
        self._cap.start()
        self._thread = threading.Thread(target=self._run, name=f"capture-{s.name}", daemon=True)
        self._thread.start()
        return {"stream": s.name, "host": self.host, "worker": self.worker}

    def _run(self) -> None:
        cap = self._cap
        try:
            while not (self._stopping.is_set() and cap.finished):
                for chunk in cap.chunks(timeout=0.2):
                    try:
                        self._reduce(chunk)
                    finally:
                        chunk.release()
                if cap.finished:  # a replay that ended: wait for the stop
                    self._stopping.wait(0.2)
        except Exception:
            self._error = traceback.format_exc(limit=8)
            with contextlib.suppress(Exception):
                cap.stop()

    def _reduce(self, chunk: Any) -> None:
        red = self.reduction
        if red is None:
            return
        value = red.per_chunk(chunk)
        index = int(chunk.chunk_id) // red.chunks_per_result
        packets = int(chunk.n_present)
        with self._lock:
            # Chunks leave in id order, so a newer index closes the older ones.
            for old in [i for i in self._open if i < index]:
                self._close(old)
            slot = self._open.get(index)
            if slot is None:
                self._open[index] = [np.array(value, copy=True), 1, packets]
            else:
                slot[0] = slot[0] + value
                slot[1] += 1
                slot[2] += packets

    def _close(self, index: int) -> None:
        value, chunks, packets = self._open.pop(index)
        self._done.append(Result(self.stream.name, index, value, chunks, packets))

    def take(self) -> list[Result]:
        """The results completed since the last take."""
        with self._lock:
            out, self._done = self._done, []
        return out

    def stats(self) -> dict[str, Any]:
        if self._cap is None and self._final is None:
            raise RuntimeError(f"stream {self.stream.name!r} was not started")
        out = dict(self._cap.stats if self._cap is not None else self._final)
        out["host"], out["worker"], out["error"] = self.host, self.worker, self._error
        return out

    def stop(self, timeout: float = 60.0, settle: float = 1.0) -> StreamReport:
        """Stop once the stream has settled (no datagram received for `settle` seconds:
        what is still in the socket or the NIC's ring when a capture stops is in no
        count), take every chunk still in the capture, close the last results."""
        if self._cap is None:
            raise RuntimeError(f"stream {self.stream.name!r} was not started")
        deadline = time.monotonic() + timeout
        seen, since = -1, time.monotonic()
        while not self._error and time.monotonic() < deadline:
            s = self._cap.stats
            now = s["received"] + s.get("kernel_drops", 0) + s.get("nic_drops", 0)
            if now != seen:
                seen, since = now, time.monotonic()
            elif time.monotonic() - since >= settle:
                break
            time.sleep(0.05)
        self._stopping.set()
        self._cap.stop()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._error = self._error or f"the capture did not drain within {timeout} s"
        with self._lock:
            for index in sorted(self._open):
                self._close(index)
        # The capture goes now, not when the actor is collected some time later: its
        # sockets and group memberships would hold the port against the next capture.
        self._final = dict(self._cap.stats)
        self._cap = None
        return StreamReport(
            self.stream.name,
            self.host,
            self.worker,
            self._final,
            self.take(),
            self._error,
        )


def example_check(chunk: Any) -> np.ndarray:
    """A per-chunk function for commissioning with the example stream: [packets present,
    packets whose payload differs from the formula] (example_stream.py, NumPy)."""
    from .example_stream import example_payloads

    present = np.asarray(chunk.present)
    seqs = int(chunk.first_seq) + np.flatnonzero(present)
    data = np.asarray(chunk.data)[present]
    bad = np.any(data != example_payloads(seqs, data.shape[1]), axis=1)
    return np.array([len(seqs), int(bad.sum())], dtype=np.int64)


def _take_on_worker(actor: Any) -> list[Result]:
    return actor.take().result()


@dataclass
class ClusterReport:
    """Every stream's end, and the array's account when the transmitters were known."""

    streams: dict[str, StreamReport]
    account: ArrayAccount | None = None

    @property
    def errors(self) -> dict[str, str]:
        return {name: r.error for name, r in self.streams.items() if r.error}

    def figures(self) -> list[CaptureFigures]:
        return [CaptureFigures.from_stats(n, r.host, r.stats) for n, r in self.streams.items()]

    def reconcile(self, transmitted: Iterable[Transmitted]) -> ArrayAccount:
        self.account = reconcile(transmitted, self.figures())
        return self.account


class CaptureCluster:
    """The streams' captures on a Dask cluster (see the module's text).

    `transmitted`: the transmitters' counts (account.Transmitted), or a callable that
    reads them (e.g. from the FPGAs over casperfpga, account.from_core) when the captures
    have stopped; with it, stop() reconciles them into the report's account.
    """

    def __init__(
        self,
        client: Any,
        streams: Sequence[Stream],
        reduction: Reduction | None = None,
        transmitted: Iterable[Transmitted] | Callable[[], Iterable[Transmitted]] | None = None,
    ) -> None:
        names = [s.name for s in streams]
        twice = {n for n in names if names.count(n) > 1}
        if twice:
            raise ValueError(f"stream names must be unique, repeated: {sorted(twice)}")
        if not streams:
            raise ValueError("a capture cluster needs at least one stream")
        self.client = client
        self.streams = list(streams)
        self.reduction = reduction
        self.transmitted = transmitted
        self.actors: dict[str, Any] = {}
        self.placement: dict[str, dict[str, str]] = {}
        self.report: ClusterReport | None = None
        self._results: dict[str, list[Result]] = {s.name: [] for s in streams}

    def start(self, timeout: float = 120.0) -> dict[str, dict[str, str]]:
        """Place every stream's capture and start it; returns where each runs."""
        if self.actors:
            raise RuntimeError("the cluster's captures are already started")
        futures = {
            s.name: self.client.submit(
                StreamCapture,
                s,
                self.reduction,
                actor=True,
                resources=s.resources or None,
                workers=list(s.workers) or None,
                allow_other_workers=False,
                key=f"casper400g-capture-{s.name}-{time.time_ns()}",
            )
            for s in self.streams
        }
        try:
            for name, fut in futures.items():
                self.actors[name] = fut.result(timeout=timeout)
            starts = {name: a.start() for name, a in self.actors.items()}
            self.placement = {name: f.result(timeout=timeout) for name, f in starts.items()}
        except BaseException:
            self._stop_started(timeout)
            raise
        return self.placement

    def _stop_started(self, timeout: float) -> None:
        for actor in self.actors.values():
            with contextlib.suppress(Exception):
                actor.stop(timeout).result(timeout=timeout)
        self.actors = {}

    def stats(self) -> dict[str, dict[str, Any]]:
        """Every capture's counters now (and where it runs), by stream."""
        calls = {name: a.stats() for name, a in self.actors.items()}
        return {name: c.result() for name, c in calls.items()}

    def results(self) -> dict[str, list[Result]]:
        """Every result completed so far, by stream (taken from the workers)."""
        calls = {name: a.take() for name, a in self.actors.items()}
        for name, c in calls.items():
            self._results[name].extend(c.result())
        return {name: list(rs) for name, rs in self._results.items()}

    def futures(self) -> dict[str, Any]:
        """The results completed since the last take, as Dask futures that stay on each
        stream's worker until gathered (or passed on to further tasks there)."""
        return {
            name: self.client.submit(
                _take_on_worker,
                actor,
                workers=[self.placement[name]["worker"]],
                allow_other_workers=False,
                pure=False,
            )
            for name, actor in self.actors.items()
        }

    def stop(self, timeout: float = 120.0, settle: float = 1.0) -> ClusterReport:
        """Stop every capture once its stream has settled (nothing received for `settle`
        seconds); each worker drains its chunks and reports. With the transmitters
        known, the report carries the array's account."""
        calls = {name: a.stop(timeout, settle) for name, a in self.actors.items()}
        reports = {name: c.result(timeout=timeout) for name, c in calls.items()}
        for name, r in reports.items():
            self._results[name].extend(r.results)
        self.actors = {}
        self.report = ClusterReport(reports)
        tx = self.transmitted
        if tx is not None:
            self.report.reconcile(tx() if callable(tx) else tx)
        return self.report

    def __enter__(self) -> CaptureCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.actors:
            self.stop()
