"""What sysfs says about this machine's CPUs and devices: each CPU's physical core
(hyperthread siblings) and NUMA node, and the NUMA node of a PCI device (a GPU, by the
PCI address CUDA gives) or of a network interface's NIC. placement.py chooses from it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

SYSFS = "/sys"


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


def gpu_pci_address(ordinal: int) -> str | None:
    """The PCI address of CUDA device `ordinal` (None where CUDA cannot say)."""
    from . import _core

    try:
        return str(_core.cuda_device_info(ordinal)["pci_bus_id"])
    except (_core.CudaError, KeyError):
        return None
