"""The threads and CPUs of a placed capture (placement.py) while it runs: its claim on its
lane CPUs, seen by the other captures of this process and, through a lock file per CPU,
of every process on the host; the opening thread run on the staging node's CPUs while
the chunk pool is first written; the capture's other threads (the starting thread, the
threads it starts, the CUDA driver's) kept off the lane CPUs, and given their CPUs back."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

DRIVER_THREAD_PREFIX = "cuda"  # the CUDA driver's threads: cuda-EvtHandlr, cuda00001400006
LOCK_DIR_ENV = "CASPER400G_LANE_LOCKS"


# The lane CPUs of each capture of this process that holds some (by its claim's id).
_held: dict[int, frozenset[int]] = {}
_held_lock = threading.Lock()


def lock_dir() -> Path | None:
    """Where captures of every process on this host claim lane CPUs: a lock file per CPU,
    flock()ed by the process whose lanes run there (the kernel drops the lock when that
    process ends, however it ends). $CASPER400G_LANE_LOCKS, else casper400g-lane-cpus in
    /dev/shm (or the temporary directory); None where it cannot be made."""
    base = os.environ.get(LOCK_DIR_ENV)
    if base:
        path = Path(base)
    else:
        shm = Path("/dev/shm")
        path = (shm if shm.is_dir() else Path(tempfile.gettempdir())) / "casper400g-lane-cpus"
    try:
        path.mkdir(parents=True, exist_ok=True)
        if path.stat().st_uid == os.getuid():
            path.chmod(0o1777)  # every user's captures claim CPUs here
    except OSError:
        return None
    return path


def _open_lock(path: Path) -> int | None:
    """The lock file, opened without O_CREAT where it exists (the kernel refuses O_CREAT
    on another user's file in a sticky directory: fs.protected_regular); None where it
    cannot be opened."""
    for flags in (os.O_RDONLY, os.O_RDONLY | os.O_CREAT | os.O_EXCL, os.O_RDONLY):
        try:
            return os.open(path, flags, 0o644)
        except (FileNotFoundError, FileExistsError):
            continue  # absent: create it; made by another meanwhile: open theirs
        except OSError:
            return None
    return None


def _lock(cpu: int, where: Path) -> tuple[int | None, bool]:
    """(a descriptor holding CPU `cpu`'s lock or None, whether another process holds it);
    a lock file that cannot be opened counts as nobody's."""
    fd = _open_lock(where / f"cpu{cpu}")
    if fd is None:
        return None, False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None, True
    except OSError:
        os.close(fd)
        return None, False
    return fd, False


def held_cpus(candidates: Iterable[int] = ()) -> frozenset[int]:
    """CPUs pinned by the lanes of this process's captures, and those of `candidates`
    that a capture of another process holds (lock_dir)."""
    with _held_lock:
        mine = frozenset().union(*_held.values())
    where = lock_dir()
    others = set()
    if where is not None:
        for c in set(candidates) - mine:
            fd, held = _lock(c, where)
            if held:
                others.add(c)
            elif fd is not None:
                os.close(fd)  # closing the descriptor drops the lock
    return mine | others


class Claim:
    """A capture's hold on its lane CPUs, from its placement until it stops: in this
    process, and in lock_dir for the others. `lost`: CPUs another process claimed
    between the placement and this claim."""

    def __init__(self, cpus: Iterable[int]) -> None:
        self.cpus = frozenset(cpus)
        self._fds: list[int] = []
        self.lost: frozenset[int] = frozenset()
        with _held_lock:
            _held[id(self)] = self.cpus
        where = lock_dir() if self.cpus else None
        if where is not None:
            lost = set()
            for c in sorted(self.cpus):
                fd, held = _lock(c, where)
                if held:
                    lost.add(c)
                elif fd is not None:
                    self._fds.append(fd)
            self.lost = frozenset(lost)

    def release(self) -> None:
        with _held_lock:
            _held.pop(id(self), None)
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)


def _affinity(tid: int) -> set[int] | None:
    try:
        return os.sched_getaffinity(tid)
    except OSError:  # the thread has ended
        return None


def _set_affinity(tid: int, cpus: Iterable[int]) -> bool:
    try:
        os.sched_setaffinity(tid, set(cpus))
    except OSError:  # ended, or the CPUs are outside its cpuset
        return False
    return True


def _comm(task: Path) -> str:
    try:
        return (task / "comm").read_text().strip()
    except OSError:  # the thread has ended
        return ""


def driver_threads(prefix: str = DRIVER_THREAD_PREFIX) -> list[int]:
    """Thread ids of this process whose name starts with `prefix` (the CUDA driver's)."""
    tids = []
    for task in Path("/proc/self/task").iterdir():
        name = _comm(task)
        if name.startswith(prefix):
            tids.append(int(task.name))
    return tids


@contextlib.contextmanager
def opening(cpus: Iterable[int] | None) -> Iterator[None]:
    """Runs the block (the capture's opening: its chunk pool allocated and written) on
    `cpus` (a placement's open_cpus; None: where it runs), so that the pages come from
    their NUMA node."""
    cpus = tuple(cpus or ())
    if not cpus:
        yield
        return
    tid = threading.get_native_id()
    saved = _affinity(tid)
    _set_affinity(tid, cpus)
    try:
        yield
    finally:
        if saved is not None:
            _set_affinity(tid, saved)


class KeepOff:
    """Keeps a running capture's other threads off its lane CPUs: the starting thread
    (and so every thread it starts), and the CUDA driver's threads that exist then."""

    def __init__(self, lanes: Iterable[int] | None, others: Iterable[int] | None) -> None:
        """`lanes`, `others`: a placement's lane_cpus and other_cpus (None: unplaced)."""
        self._cpus = tuple(others or ())
        self._lanes = frozenset(lanes or ())
        self._saved: dict[int, set[int]] = {}

    def start(self) -> None:
        """Call from the thread that starts the capture, before its threads start."""
        if not self._cpus:
            return
        tids = [threading.get_native_id(), *driver_threads()]
        for tid in dict.fromkeys(tids):
            old = _affinity(tid)
            if old is None or tid in self._saved:
                continue
            if (old & self._lanes or tid == tids[0]) and _set_affinity(tid, self._cpus):
                self._saved[tid] = old

    def stop(self) -> None:
        """Gives the threads moved their CPUs back."""
        saved, self._saved = self._saved, {}
        for tid, cpus in saved.items():
            _set_affinity(tid, cpus)

    @property
    def moved(self) -> Sequence[int]:
        """Thread ids moved off the lane CPUs (until stop)."""
        return list(self._saved)
