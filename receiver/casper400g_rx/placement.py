"""Where a capture sized for a rate runs its threads and puts its staging memory.

What the benchmarks once did by hand, the capture does itself when `rate_gbps` is given
(chunking.engine_config asks `place`, Capture applies the outcome through affinity.py;
what the machine is comes from cpu_topology.py):

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
* Into several GPUs (Delivery(devices=[...])) the staging pool is split per GPU
  (`staging_split`): chunk number k is filled in the part of the GPU it routes to, each
  part bound to its GPU's node, so that every GPU's copies read local memory. The lanes
  fill every chunk; they go to the node across whose link between the sockets the
  fewest bytes pass (`gpu_staging`): every received byte is written once (the NIC, the
  lanes) and read once by its chunk's GPU, so the lanes' writes into a GPU's part off
  their node cross the link. That is the NIC's node where one is named and its node
  known, else the node whose GPUs take the most chunks. Each GPU's node and share and
  what crosses are printed, and once the pool is allocated, where each part lies
  (`staging_outcome`); a capture per GPU node (one per Dask worker, cluster.py) keeps
  every byte on its node.
* Each GPU of several has its own ring and its own copy and recycle threads
  (staged_lanes.h); those run on the CPUs of the GPU's NUMA node that the lanes leave
  over (`gpu_threads`): the driver's calls and the waits on that GPU's copies stay on
  its socket. A GPU on a node without such a CPU (every one a lane's or another
  capture's, or outside this process's cpuset), or of unknown node, leaves its threads
  with the other threads, and the placement says so for that GPU.
* Captures do not pin onto each other's lanes, in one process or in several (several
  Dask workers of one host, one per GPU): affinity.held_cpus.

Each decision and each thing that could not be done (too few CPUs or cores, a GPU on a
node this process may not use, an unknown node) is recorded in the `Placement`, which
`cap.sizing` prints. Threads of the user's own and other processes are not moved:
`isolcpus` or a cpuset keeps them off the lane cores (docs/hardware.md, "Tuning").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from .affinity import held_cpus
from .cpu_topology import SYSFS, Topology, gpu_pci_address, netdev_numa_node, pci_numa_node


@dataclass(frozen=True)
class Placement:
    """Where a capture's threads run and its staging memory lies (module docstring).

    lane_cpus: one CPU per pinned thread, in the source's order (None: not pinned);
    other_cpus: where the starting thread, the threads it starts and the CUDA driver's
    threads run while the capture does (None: left where they are); open_cpus: where the
    opening thread runs while the staging memory is allocated (None: where it is);
    decisions: what was chosen and why; unmet: what could not be done and why;
    gpu_cpus: into several GPUs, per GPU the CPUs its copy and recycle threads run on
    (() for one left with the other threads; None: not placed per GPU)."""

    lane_cpus: tuple[int, ...] | None
    other_cpus: tuple[int, ...] | None
    open_cpus: tuple[int, ...] | None
    staging_node: int | None
    decisions: tuple[str, ...] = ()
    unmet: tuple[str, ...] = ()
    gpu_cpus: tuple[tuple[int, ...], ...] | None = None

    def __str__(self) -> str:
        lines = [f"  {d}" for d in self.decisions]
        lines += [f"  could not: {u}" for u in self.unmet]
        return "\n".join(lines)


@dataclass(frozen=True)
class Need:
    """What a capture asks of the placement: `threads` to pin (a source's `cpus` list),
    `given` CPUs for them (None: choose; (): do not pin), `others` CPUs wanted for the
    other busy threads, and the data's NUMA node (`near`, None: unknown) with what it is
    (`near_what`, e.g. "GPU cuda:0 (0000:1b:00.0)")."""

    threads: int
    given: tuple[int, ...] | None = None
    others: int = 1
    near: int | None = None
    near_what: str = ""
    gpu: bool = False
    busy: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True)
class GpuSite:
    """One GPU of a delivery into several: its name ("cuda:1"), PCI address and NUMA node
    (None: unknown) and the share of the chunks routed to it."""

    name: str
    address: str | None
    node: int | None
    share: Fraction


@dataclass(frozen=True)
class GpuStaging:
    """Where the lanes of a capture into several GPUs go: `node` (None: no node known), what
    lies there (`what`, for the placement's messages), the decisions and unmet."""

    node: int | None
    what: str
    decisions: tuple[str, ...]
    unmet: tuple[str, ...]


@dataclass(frozen=True)
class StagingSplit:
    """The staging pool split per GPU of a delivery into several: `route` (part of chunk
    number k: route[k % len(route)]; (): one pool), `nodes` (per part, the NUMA node it
    is bound to, -1: not bound), the decisions and unmet."""

    route: tuple[int, ...]
    nodes: tuple[int, ...]
    decisions: tuple[str, ...] = ()
    unmet: tuple[str, ...] = ()

    @property
    def period(self) -> int:
        return max(1, len(self.route))


MAX_STAGING_PERIOD = 256  # staging.h's staging_plan::max_period


def staging_split(
    gpus: Sequence[GpuSite],
    routes: Sequence[int] | None,
    given: Sequence[int | None] | None = None,
) -> StagingSplit:
    """The staging pool of a capture into `gpus` (pure), split one part per GPU: chunk
    number k's host chunk in the part of the GPU it routes to (`routes` as
    Delivery.routes() gives them, None: round-robin), each part bound to its GPU's node,
    or to its entry of `given` (Delivery.staging_nodes; None there: unbound). A routing
    table longer than MAX_STAGING_PERIOD keeps one pool (the pool is a multiple of it)."""
    if len(gpus) < 2:
        return StagingSplit((), ())
    route = tuple(routes) if routes is not None else tuple(range(len(gpus)))
    if len(route) > MAX_STAGING_PERIOD:
        return StagingSplit(
            (),
            (),
            unmet=(
                f"staging split per GPU: the mapping's period of {len(route)} chunks is over "
                f"{MAX_STAGING_PERIOD} (the pool would be a multiple of it); one pool serves "
                "every GPU",
            ),
        )
    decisions: list[str] = []
    unmet: list[str] = []
    nodes: list[int] = []
    for k, g in enumerate(gpus):
        node = given[k] if given is not None else g.node
        what = "the node given" if given is not None else "its GPU's node"
        if node is None:
            nodes.append(-1)
            why = "none given" if given is not None else "NUMA node unknown (sysfs numa_node)"
            unmet.append(f"staging of {g.name} on its node: {why}; its part is not bound")
        else:
            nodes.append(node)
            decisions.append(
                f"staging of {g.name} ({_share(g.share)} of the chunks) bound to "
                f"node {node} ({what})"
            )
    return StagingSplit(route, tuple(nodes), tuple(decisions), tuple(unmet))


def staging_outcome(staging: Sequence[dict[str, Any]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the kernel made of the split (the `staging` entry of each GPU's stats, in
    order): the decisions and unmet cap.sizing adds once the pool is allocated."""
    decisions: list[str] = []
    unmet: list[str] = []
    for k, st in enumerate(staging):
        if not st.get("split"):
            continue
        if st["bound"]:
            decisions.append(
                f"GPU {k}'s staging ({st['chunks']} chunks) on node {st['node']}: "
                f"{st['pages_on_node']} of {st['pages']} pages there"
            )
        elif st["node"] is not None:
            unmet.append(f"bind GPU {k}'s staging to node {st['node']}: {st['why_not']}")
    return tuple(decisions), tuple(unmet)


def with_staging_outcome(p: Placement, gpus: Sequence[dict[str, Any]]) -> Placement:
    """`p` with where each GPU's part of the staging pool lies once allocated (`gpus`: the
    capture's stats["gpus"]); each part not bound is among its unmet needs."""
    done, unmet = staging_outcome([g["staging"] for g in gpus])
    return replace(p, decisions=(*p.decisions, *done), unmet=(*p.unmet, *unmet))


def _share(f: Fraction) -> str:
    return "all" if f == 1 else f"{f.numerator}/{f.denominator}"


def gpu_staging(gpus: Sequence[GpuSite], nic_node: int | None, nic: str = "") -> GpuStaging:
    """The node for the staging pool and lanes of a capture into `gpus` (pure): of the
    nodes of the GPUs and the NIC (`nic_node`, None: unknown or none), the one whose
    choice sends the fewest bytes across the link between the sockets per byte received:
    the NIC's write (1 where the NIC is elsewhere) plus the shares of the GPUs elsewhere.
    A tie goes to the NIC's node, then to the lowest-numbered. So a NIC's node, where
    known, always wins (elsewhere its whole stream would cross, more than the GPUs'
    shares); without one, the node whose GPUs take the most chunks."""
    listed = ", ".join(
        f"{g.name} (node {'unknown' if g.node is None else g.node}, {_share(g.share)} of "
        "the chunks)"
        for g in gpus
    )
    decisions = [
        f"GPUs {listed}: staging split per GPU, each part on its GPU's node (a chunk's GPU "
        "is chosen by its number, the lanes fill every chunk)"
    ]
    unmet: list[str] = []
    unknown = [g.name for g in gpus if g.node is None]
    if unknown:
        unmet.append(
            f"place staging memory near {', '.join(unknown)}: NUMA node unknown (sysfs "
            "numa_node); their copies are not counted in the choice"
        )
    nodes = {g.node for g in gpus if g.node is not None}
    candidates = sorted(nodes | ({nic_node} if nic_node is not None else set()))
    if not candidates:
        return GpuStaging(None, "GPUs", tuple(decisions), tuple(unmet))

    def crossing(node: int | None) -> Fraction:
        nic_part = Fraction(int(nic_node is not None and nic_node != node))
        return nic_part + sum(
            (g.share for g in gpus if g.node is not None and g.node != node), Fraction(0)
        )

    node = min(candidates, key=lambda n: (crossing(n), n != nic_node, n))
    here = [g.name for g in gpus if g.node == node]
    what = f"GPU{'s' if len(here) > 1 else ''} {', '.join(here)}" if here else f"NIC {nic}"
    cross = crossing(node)
    decisions.append(
        f"lanes near node {node} (the {what}'s): "
        + (
            "no byte crosses between the sockets"
            if cross == 0
            else f"the fewest bytes cross between the sockets ({cross} of each byte received)"
        )
    )
    for g in gpus:
        if g.node is not None and g.node != node:
            unmet.append(
                f"lanes local to {g.name}'s staging (node {g.node}): its {_share(g.share)} of "
                f"the chunks is written across the link from node {node}; a capture per GPU "
                "node (one per Dask worker, cluster.py) keeps every write local"
            )
    return GpuStaging(node, what, tuple(decisions), tuple(unmet))


@dataclass(frozen=True)
class GpuThreads:
    """Where each GPU's copy and recycle threads run (`cpus`, per GPU in order; (): with
    the capture's other threads), the decisions and unmet."""

    cpus: tuple[tuple[int, ...], ...]
    decisions: tuple[str, ...]
    unmet: tuple[str, ...]


def gpu_threads(
    gpus: Sequence[GpuSite], topo: Topology, placed: Placement, busy: Iterable[int] = ()
) -> GpuThreads:
    """Each GPU's copy and recycle threads on its own NUMA node (pure): the CPUs of its
    node that `placed` leaves for the other threads (off the lane cores), or where the
    lanes are not pinned, its node's CPUs that no other capture's lanes hold. A GPU whose
    node is unknown or has no such CPU keeps its threads with the other threads, named
    in `unmet`."""
    held = set(busy)
    lanes = set(placed.lane_cpus or ())
    if placed.lane_cpus:
        pool = list(placed.other_cpus or ())
    else:
        pool = [c for c in topo.cpus if c not in held]
    where = f"CPUs {_fmt(placed.other_cpus)}" if placed.other_cpus else "where it starts"
    out: list[tuple[int, ...]] = []
    decisions: list[str] = []
    unmet: list[str] = []
    for g in gpus:
        label = f"{g.name} ({_share(g.share)} of the chunks)"
        if g.node is None:
            out.append(())
            unmet.append(
                f"{label}: its copy and recycle threads near it: NUMA node unknown (sysfs "
                f"numa_node); they run with the other threads ({where})"
            )
            continue
        mine = tuple(c for c in pool if topo.node[c] == g.node)
        if mine:
            out.append(mine)
            decisions.append(
                f"{label}: its copy and recycle threads on CPUs {_fmt(mine)} of its node "
                f"{g.node}" + (", off the lane cores" if placed.lane_cpus else "")
            )
            continue
        out.append(())
        on_node = [c for c in topo.cpus if topo.node[c] == g.node]
        why = (
            f"this process may not run on node {g.node} (CPUs {_fmt(topo.cpus)})"
            if not on_node
            else f"every CPU of node {g.node} ({_fmt(on_node)}) runs a lane of this capture "
            "or another's"
            if set(on_node) <= lanes | held
            else f"the CPUs of node {g.node} left over share cores with lanes"
        )
        unmet.append(
            f"{label}: its copy and recycle threads on its node {g.node}: {why}; they run "
            f"with the other threads ({where})"
        )
    return GpuThreads(tuple(out), tuple(decisions), tuple(unmet))


def gpu_shares(n: int, routes: Sequence[int] | None) -> list[Fraction]:
    """The share of the chunks each of `n` GPUs takes: equal round-robin, or by `routes`
    (positions in the GPU list, one per chunk number of its period)."""
    if routes is None:
        return [Fraction(1, n)] * n
    return [Fraction(list(routes).count(i), len(routes)) for i in range(n)]


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

    others: tuple[int, ...] | None = None
    if lanes:
        taken = {topo.core[c] for c in lanes}
        rest = [c for c in free if c not in lanes]
        apart = [c for c in rest if topo.core[c] not in taken]
        others = tuple(apart or rest) or None
        what = "the consumer (the thread that starts the capture)" + (
            ", the GPU copy and recycle threads and the CUDA driver's threads" if need.gpu else ""
        )
        if others is None:
            unmet.append(f"keep {what} off the lane CPUs: no CPU is left over")
        else:
            decisions.append(f"{what} kept on CPUs {_fmt(others)}, off the lane cores")
            if not apart:
                unmet.append(
                    "a physical core for the other threads: they share cores with lanes "
                    f"(hyperthread siblings {_fmt(others)})"
                )
            if len(others) < need.others:
                unmet.append(
                    f"{need.others} CPUs for them: {len(others)} left over; they share "
                    f"{'it' if len(others) == 1 else 'them'}"
                )

    open_cpus: tuple[int, ...] | None = None
    staging: int | None = None
    one_node = len(topo.nodes) == 1 and need.near in (None, topo.nodes[0])
    if one_node and (need.gpu or need.near is not None):
        staging = topo.nodes[0]
        near = f" and the {need.near_what}" if need.near_what else ""
        decisions.append(f"one NUMA node ({staging}): staging memory is local to every CPU{near}")
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
    return Placement(lanes, others, open_cpus, staging, tuple(decisions), tuple(unmet))


def gpu_sites(
    names: Sequence[str], routes: Sequence[int] | None, root: str = SYSFS
) -> list[GpuSite]:
    """Each of the GPUs `names` ("cuda:N") of a delivery into several, with its PCI
    address and NUMA node as CUDA and sysfs (under `root`) tell, and its share."""
    from .gpu import parse_device

    out = []
    for name, share in zip(names, gpu_shares(len(names), routes), strict=True):
        ordinal = parse_device(name)
        address = gpu_pci_address(ordinal) if ordinal is not None else None
        node = pci_numa_node(address, root) if address else None
        out.append(GpuSite(name, address, node, share))
    return out


def place(
    threads: int,
    given: tuple[int, ...] | None,
    device: str | Sequence[str],
    nic: str = "",
    root: str = SYSFS,
    routes: Sequence[int] | None = None,
    gpu_cpus: Sequence[Sequence[int]] | None = None,
) -> Placement:
    """The placement on this machine (its sysfs under `root`), beside the other captures
    of this process, of a capture whose source pins `threads` threads (to the CPUs
    `given`, None: chosen here), delivering into `device` ("cpu", "cuda:N", or a list
    of "cuda:N" for several GPUs, `routes` their chunk routing as Delivery.routes()
    gives it), receiving on network interface `nic` ("": none named); `gpu_cpus`: the
    CPUs given for each GPU's copy and recycle threads (None: each GPU's node's)."""
    from .gpu import parse_device

    names = [device] if isinstance(device, str) else list(device)
    ordinals = [o for o in (parse_device(d) for d in names) if o is not None]
    near, what, notes, unmet = None, "", (), ()
    sites: list[GpuSite] = []
    if len(ordinals) > 1:
        sites = gpu_sites(names, routes, root)
        staging = gpu_staging(sites, netdev_numa_node(nic, root) if nic else None, nic)
        near, what, notes, unmet = staging.node, staging.what, staging.decisions, staging.unmet
    elif ordinals:
        address = gpu_pci_address(ordinals[0])
        what = f"GPU {names[0]}" + (f" at {address}" if address else "")
        near = pci_numa_node(address, root) if address else None
    elif nic:
        what = f"NIC {nic}"
        near = netdev_numa_node(nic, root)
    need = Need(
        threads=threads,
        given=given,
        # Per GPU a copy and a recycle thread; with several, the dispatcher that routes.
        others=1 + 2 * len(ordinals) + (1 if len(ordinals) > 1 else 0),
        near=near,
        near_what=what,
        gpu=bool(ordinals),
    )
    topo = Topology.read(root=root)
    busy = held_cpus(topo.cpus)
    p = plan_placement(replace(need, busy=busy), topo)
    p = replace(p, decisions=(*notes, *p.decisions), unmet=(*unmet, *p.unmet))
    if gpu_cpus is not None:
        given = tuple(tuple(c) for c in gpu_cpus)
        listed = "; ".join(
            f"{n}: {_fmt(c) if c else 'with the other threads'}"
            for n, c in zip(names, given, strict=True)
        )
        return replace(
            p, gpu_cpus=given, decisions=(*p.decisions, f"GPU threads on the CPUs given ({listed})")
        )
    if len(ordinals) <= 1:
        return p
    threads = gpu_threads(sites, topo, p, busy)
    return replace(
        p,
        gpu_cpus=threads.cpus,
        decisions=(*p.decisions, *threads.decisions),
        unmet=(*p.unmet, *threads.unmet),
    )
