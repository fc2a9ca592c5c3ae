"""Where a capture sized for a rate runs its threads and puts its staging memory.

What the benchmarks once did by hand, the capture does itself when `rate_gbps` is given
(chunking.engine_config asks `plan_placement`, Capture applies the outcome):

* Lane threads (receive queues, header-split lanes, an emulated NIC's generator) are
  pinned one per physical core, the cores of the NUMA node nearest the data first (the
  GPU's for GPU delivery, else the NIC's for an `ibv` source): a lane's writes then land
  in local memory, and two lanes on hyperthread siblings would share one core's
  execution units. Within a node the highest-numbered cores go first: CPU 0 takes the
  interrupts and housekeeping the kernel does not spread.
* The capture's other threads -- the thread that starts it (the consumer), the GPU
  delivery's copy and recycle threads (started by it, so they inherit its CPUs), and the
  CUDA driver's threads (named `cuda*`) -- are kept off the lane cores while it runs: a
  thread that wakes on a lane's core takes it for a scheduler slice (milliseconds),
  longer than a lane at its share of 400 Gb/s can fall behind. This happens only where a
  CPU is left over; lanes are pinned only where at least one is.
* Staging memory (the chunk pool, written once when it is allocated, so that its pages
  come from the NUMA node of the thread that opens the capture) is placed on the GPU's
  or NIC's node: the thread opening the capture runs there while it does.
* Captures do not pin onto each other's lanes, in one process (a record of the CPUs
  each capture holds) or in several (a lock file per CPU, `lock_dir`, held by the
  process whose lanes run there: several Dask workers of one host, one per GPU).

Each decision and each thing that could not be done (too few CPUs or cores, a GPU on a
node this process may not use, an unknown node) is recorded in the `Placement`, which
`cap.sizing` prints. Threads of the user's own and other processes are not moved:
`isolcpus` or a cpuset keeps them off the lane cores (docs/hardware.md, "Tuning").
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

SYSFS = "/sys"
DRIVER_THREAD_PREFIX = "cuda"  # the CUDA driver's threads: cuda-EvtHandlr, cuda00001400006
LOCK_DIR_ENV = "CASPER400G_LANE_LOCKS"


def parse_cpulist(text: str) -> list[int]:
    """CPUs of a sysfs/kernel CPU list ("0-3,8,10-11"); ValueError naming bad text."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise ValueError(f"not a CPU list: {text!r}") from None
        if first < 0 or last < first:
            raise ValueError(f"not a CPU list: {text!r}")
        cpus.extend(range(first, last + 1))
    return cpus


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _node_of_device(path: Path) -> int | None:
    """A PCI device's NUMA node from its sysfs numa_node (-1 or absent: unknown)."""
    text = _read(path / "numa_node")
    if text is None:
        return None
    try:
        node = int(text)
    except ValueError:
        return None
    return node if node >= 0 else None


def pci_numa_node(address: str, root: str = SYSFS) -> int | None:
    """NUMA node of the PCI device at `address` ("0000:1b:00.0"); None: unknown."""
    return _node_of_device(Path(root) / "bus" / "pci" / "devices" / address.lower())


def netdev_numa_node(interface: str, root: str = SYSFS) -> int | None:
    """NUMA node of the NIC behind network interface `interface`; None: unknown."""
    return _node_of_device(Path(root) / "class" / "net" / interface / "device")


@dataclass(frozen=True)
class Topology:
    """The CPUs this thread may use, each one's physical core (the set of its hyperthread
    siblings) and NUMA node, as sysfs says."""

    cpus: tuple[int, ...]
    core: Mapping[int, tuple[int, ...]]
    node: Mapping[int, int]

    @classmethod
    def read(cls, allowed: Iterable[int] | None = None, root: str = SYSFS) -> Topology:
        """From `root` (a sysfs tree); `allowed`: the CPUs to consider (default: this
        thread's affinity). A CPU without topology files is a core of its own on node 0."""
        cpus = tuple(sorted(os.sched_getaffinity(0) if allowed is None else set(allowed)))
        base = Path(root) / "devices" / "system"
        core: dict[int, tuple[int, ...]] = {}
        for c in cpus:
            topo = base / "cpu" / f"cpu{c}" / "topology"
            text = _read(topo / "thread_siblings_list") or _read(topo / "core_cpus_list")
            siblings = parse_cpulist(text) if text else [c]
            core[c] = tuple(sorted(set(siblings) | {c}))
        node: dict[int, int] = {}
        nodes = sorted(
            int(p.name[4:])
            for p in (base / "node").glob("node*")
            if p.name[4:].isdigit() and (p / "cpulist").exists()
        )
        for n in nodes:
            for c in parse_cpulist(_read(base / "node" / f"node{n}" / "cpulist") or ""):
                node.setdefault(c, n)
        return cls(cpus, core, {c: node.get(c, 0) for c in cpus})

    @property
    def nodes(self) -> list[int]:
        return sorted(set(self.node.values()))


@dataclass(frozen=True)
class Placement:
    """Where a capture's threads run and its staging memory lies (module docstring).

    lane_cpus: one CPU per pinned thread, in the source's order (None: not pinned);
    helper_cpus: where the starting thread, the threads it starts and the CUDA driver's
    threads run while the capture does (None: left where they are); open_cpus: where the
    opening thread runs while the staging memory is allocated (None: where it is);
    decisions: what was chosen and why; unmet: what could not be done and why."""

    lane_cpus: tuple[int, ...] | None
    helper_cpus: tuple[int, ...] | None
    open_cpus: tuple[int, ...] | None
    staging_node: int | None
    decisions: tuple[str, ...] = ()
    unmet: tuple[str, ...] = ()

    def __str__(self) -> str:
        lines = [f"  {d}" for d in self.decisions]
        lines += [f"  could not: {u}" for u in self.unmet]
        return "\n".join(lines)


@dataclass(frozen=True)
class Need:
    """What a capture asks of the placement: `threads` to pin (a source's `cpus` list),
    `given` CPUs for them (None: choose; (): do not pin), `helpers` CPUs wanted for the
    other busy threads, and the data's NUMA node (`near`, None: unknown) with what it is
    (`near_what`, e.g. "GPU cuda:0 (0000:1b:00.0)")."""

    threads: int
    given: tuple[int, ...] | None = None
    helpers: int = 1
    near: int | None = None
    near_what: str = ""
    gpu: bool = False
    busy: frozenset[int] = field(default_factory=frozenset)


def _cores_in_order(
    topo: Topology, cpus: Iterable[int], near: int | None, busy: frozenset[int]
) -> list[list[int]]:
    """The physical cores among `cpus` (each the list of its CPUs among them): cores
    with no `busy` CPU first, those on node `near` first, then by node; within a node
    the highest-numbered core first."""
    cores: dict[tuple[int, ...], list[int]] = {}
    for c in sorted(cpus):
        cores.setdefault(topo.core[c], []).append(c)

    def key(members: list[int]) -> tuple[bool, bool, int, int]:
        core = topo.core[members[0]]
        n = topo.node[members[0]]
        return (bool(busy & set(core)), n != near, n, -core[0])

    return sorted(cores.values(), key=key)


def _cpu_order(
    topo: Topology, cpus: Iterable[int], near: int | None, busy: frozenset[int] = frozenset()
) -> list[int]:
    """One CPU per physical core first (in core order), then their hyperthread siblings."""
    cores = _cores_in_order(topo, cpus, near, busy)
    depth = max((len(c) for c in cores), default=0)
    return [c[i] for i in range(depth) for c in cores if i < len(c)]


def _fmt(cpus: Iterable[int]) -> str:
    """A CPU set as a kernel CPU list ("0-3,8")."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(set(cpus)):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out) or "none"


def plan_placement(need: Need, topo: Topology) -> Placement:
    """The placement for `need` on `topo` (pure: the tests give it fake topologies)."""
    decisions: list[str] = []
    unmet: list[str] = []
    busy = need.busy & set(topo.cpus)
    free = [c for c in topo.cpus if c not in busy]
    if busy:
        decisions.append(
            f"CPUs {_fmt(busy)} held by the lanes of other captures (this process's or "
            "another's): not used"
        )
    k = need.threads
    if need.given is not None:
        lanes: tuple[int, ...] | None = need.given or None
        decisions.append(
            f"lane threads pinned to the CPUs given: {_fmt(need.given)}"
            if need.given
            else "lane threads not pinned (cpus=() given)"
        )
    elif k == 0:
        lanes = None
    elif k >= len(free):
        lanes = None
        unmet.append(
            f"pin {k} lane thread(s): this process may use {len(free)} CPU(s) "
            f"({_fmt(free)}), which would leave none for the consumer; lanes not pinned"
        )
    else:
        order = _cpu_order(topo, free, need.near, frozenset(busy))
        lanes = tuple(order[:k])
        n_cores = len({topo.core[c] for c in free})
        near = (
            f" (node {need.near}, the {need.near_what}'s, first)" if need.near is not None else ""
        )
        decisions.append(
            f"{k} lane thread(s) pinned to CPUs {', '.join(map(str, lanes))}, one per "
            f"physical core{near}"
        )
        if k > n_cores:
            unmet.append(
                f"a physical core per lane: {k} lane threads, {n_cores} cores free; "
                f"{k - n_cores} lane(s) share a core with another (hyperthread siblings)"
            )
        if need.near is not None:
            off = [c for c in lanes if topo.node[c] != need.near]
            if off:
                unmet.append(
                    f"every lane on node {need.near} (the {need.near_what}'s): "
                    f"{len(off)} lane(s) on CPUs {_fmt(off)} of another node, their writes "
                    "cross the link between the sockets"
                )

    helpers: tuple[int, ...] | None = None
    if lanes:
        taken = {topo.core[c] for c in lanes}
        rest = [c for c in free if c not in lanes]
        apart = [c for c in rest if topo.core[c] not in taken]
        helpers = tuple(apart or rest) or None
        what = "the consumer (the thread that starts the capture)" + (
            ", the GPU copy and recycle threads and the CUDA driver's threads" if need.gpu else ""
        )
        if helpers is None:
            unmet.append(f"keep {what} off the lane CPUs: no CPU is left over")
        else:
            decisions.append(f"{what} kept on CPUs {_fmt(helpers)}, off the lane cores")
            if not apart:
                unmet.append(
                    "a physical core for the other threads: they share cores with lanes "
                    f"(hyperthread siblings {_fmt(helpers)})"
                )
            if len(helpers) < need.helpers:
                unmet.append(
                    f"{need.helpers} CPUs for them: {len(helpers)} left over; they share "
                    f"{'it' if len(helpers) == 1 else 'them'}"
                )

    open_cpus: tuple[int, ...] | None = None
    staging: int | None = None
    one_node = len(topo.nodes) == 1 and need.near in (None, topo.nodes[0])
    if one_node and (need.gpu or need.near is not None):
        staging = topo.nodes[0]
        decisions.append(f"one NUMA node ({staging}): staging memory is local to every CPU")
    elif need.near is None:
        if need.gpu:
            unmet.append(
                f"place staging memory near the {need.near_what or 'GPU'}: its NUMA node is "
                "unknown (sysfs numa_node); it lies where the kernel puts it"
            )
    else:
        on_node = [c for c in topo.cpus if topo.node[c] == need.near]
        if not on_node:
            unmet.append(
                f"place staging memory on node {need.near} (the {need.near_what}'s): this "
                f"process may not run there (CPUs {_fmt(topo.cpus)}); it lies where the "
                "kernel puts it"
            )
        else:
            staging = need.near
            # Briefly (the allocation), and on a lane's CPU only where the node has no other.
            quiet = [c for c in on_node if c not in busy and c not in (lanes or ())]
            open_cpus = tuple(quiet or on_node)
            decisions.append(
                f"staging memory on node {need.near} (the {need.near_what}'s): allocated "
                f"from CPUs {_fmt(open_cpus)} there"
            )
    return Placement(lanes, helpers, open_cpus, staging, tuple(decisions), tuple(unmet))


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


def driver_threads(prefix: str = DRIVER_THREAD_PREFIX) -> list[int]:
    """Thread ids of this process whose name starts with `prefix` (the CUDA driver's)."""
    tids = []
    for task in Path("/proc/self/task").iterdir():
        name = _read(task / "comm") or ""
        if name.startswith(prefix):
            tids.append(int(task.name))
    return tids


@contextlib.contextmanager
def opening(placement: Placement | None) -> Iterator[None]:
    """Runs the block (the capture's opening: its chunk pool allocated and written) on
    the placement's open CPUs, so that the pages come from the staging node."""
    cpus = placement.open_cpus if placement is not None else None
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


class Helpers:
    """Keeps a running capture's other threads off its lane CPUs: the starting thread
    (and so every thread it starts), and the CUDA driver's threads that exist then."""

    def __init__(self, placement: Placement | None) -> None:
        self._cpus = placement.helper_cpus if placement is not None else None
        self._lanes = frozenset(placement.lane_cpus or ()) if placement is not None else ()
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
        return list(self._saved)


def gpu_pci_address(ordinal: int) -> str | None:
    """The PCI address of CUDA device `ordinal` (None where CUDA cannot say)."""
    from . import _core

    try:
        return str(_core.cuda_device_info(ordinal)["pci_bus_id"])
    except (_core.CudaError, KeyError):
        return None


def place(
    threads: int,
    given: tuple[int, ...] | None,
    device: str,
    nic: str = "",
    root: str = SYSFS,
) -> Placement:
    """The placement on this machine (its sysfs under `root`), beside the other captures
    of this process, of a capture whose source pins `threads` threads (to the CPUs
    `given`, None: chosen here), delivering into `device` ("cpu", "cuda:N"), receiving on
    network interface `nic` ("": none named)."""
    from .gpu import parse_device

    ordinal = parse_device(device)
    near, what = None, ""
    if ordinal is not None:
        address = gpu_pci_address(ordinal)
        what = f"GPU {device}" + (f" at {address}" if address else "")
        near = pci_numa_node(address, root) if address else None
    elif nic:
        what = f"NIC {nic}"
        near = netdev_numa_node(nic, root)
    need = Need(
        threads=threads,
        given=given,
        helpers=1 + (2 if ordinal is not None else 0),
        near=near,
        near_what=what,
        gpu=ordinal is not None,
    )
    topo = Topology.read(root=root)
    return plan_placement(replace(need, busy=held_cpus(topo.cpus)), topo)
