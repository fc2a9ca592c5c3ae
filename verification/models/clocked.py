"""The background task of the models' cocotb adapters: one call per rising clock edge.

The adapters (:class:`~.dcmac_tx.DcmacTxMonitor`, :class:`~.dcmac_rx.DcmacRxDriver`,
:class:`~.user_tx.UserTxDriver`, :class:`~.user_rx.UserRxMonitor`) keep their pure-Python
cores free of cocotb; this is the one place that starts, stops and clocks them. cocotb is
imported only when a task starts.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from cocotb.queue import Queue

T = TypeVar("T")


def int_reader(handle: Any) -> Callable[[], int]:
    """A callable returning the handle's current value as an int (ValueError on X/Z).

    Reading ``handle.value`` builds a LogicArray per call, which dominates the cost of
    sampling 48 signals of a 1024-bit bus every cycle; the simulator object's binary
    string is the same value without that detour. Falls back to ``handle.value`` where the
    handle has no such object (other cocotb versions, stand-in handles in unit tests).
    """
    raw = getattr(handle, "_handle", None)
    get = getattr(raw, "get_signal_val_binstr", None)
    if callable(get):
        return lambda: int(get(), 2)
    return lambda: int(handle.value)


class ClockedTask(abc.ABC):
    """Calls :meth:`on_edge` after every rising edge of ``self._clock`` once started."""

    _clock: Any  # a cocotb clock handle, set by the adapter
    _task: Any = None
    _rd_reset: Callable[[], int] | None = None
    _reset_level = 1

    @abc.abstractmethod
    def on_edge(self) -> None:
        """One clock edge of the adapter's protocol."""

    def attach(
        self, dut: Any, prefix: str, clock: Any, clock_name: str, reset: Any, active_high: bool
    ) -> Callable[[str], Any]:
        """Clock this task by ``clock`` (None: the DUT's ``<prefix><clock_name>``) and watch
        ``reset`` (:meth:`watch_reset`); returns the lookup of the DUT's ``<prefix><name>``
        handles, by name."""

        def handle(name: str) -> Any:
            return getattr(dut, prefix + name)

        self._clock = clock if clock is not None else handle(clock_name)
        self.watch_reset(reset, active_high)
        return handle

    def watch_reset(self, reset: Any, active_high: bool) -> None:
        """Sample ``reset`` (a handle; None: no reset) for :meth:`in_reset`."""
        self._rd_reset = int_reader(reset) if reset is not None else None
        self._reset_level = 1 if active_high else 0

    def in_reset(self) -> bool:
        """The watched reset is asserted now."""
        return self._rd_reset is not None and self._rd_reset() == self._reset_level

    def start(self) -> None:
        import cocotb

        if self._task is None:
            self._task = cocotb.start_soon(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        from cocotb.triggers import RisingEdge

        edge = RisingEdge(self._clock)
        while True:
            await edge
            self.on_edge()


class QueueMonitor(ClockedTask, Generic[T]):
    """A :class:`ClockedTask` that hands what it observes to ``await recv()`` as well."""

    queue: Queue[T] | None = None

    def start(self) -> None:
        from cocotb.queue import Queue

        if self.queue is None:
            self.queue = Queue()
        super().start()

    async def recv(self) -> T:
        if self.queue is None:
            raise RuntimeError("monitor not started")
        return await self.queue.get()

    def deliver(self, item: T) -> None:
        """Queue ``item`` for :meth:`recv` (once started)."""
        if self.queue is not None:
            self.queue.put_nowait(item)


class ClockedDriver(ClockedTask):
    """A :class:`ClockedTask` that drives queued work; ``await wait_idle()`` until done."""

    _idle_event: Any = None  # a cocotb Event while someone waits

    @abc.abstractmethod
    def busy(self) -> bool:
        """Whether queued work is still being driven."""

    async def wait_idle(self) -> None:
        """Return once everything queued has been driven."""
        from cocotb.triggers import Event

        if not self.busy():
            return
        if self._idle_event is None:
            self._idle_event = Event()
        await self._idle_event.wait()

    def went_idle(self) -> None:
        """Called by the driver when its queue ran empty: wake the waiters."""
        if self._idle_event is not None:
            self._idle_event.set()
            self._idle_event = None


class PulseCounter(ClockedTask):
    """Sums one-cycle outputs of a DUT (``<prefix><name>``, values added each edge) on
    ``clock``: ``counts[name]`` once started."""

    def __init__(self, dut: Any, names: tuple[str, ...], clock: Any, prefix: str = "") -> None:
        sig = self.attach(dut, prefix, clock, "clk", None, True)
        self._readers = {name: int_reader(sig(name)) for name in names}
        self.counts = dict.fromkeys(names, 0)
        self.start()

    def on_edge(self) -> None:
        for name, read in self._readers.items():
            self.counts[name] += read()
