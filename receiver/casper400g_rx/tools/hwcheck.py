"""`casper400g-rx hwcheck`: what the ibv backend will find on this host (with `--rdma`,
the rdma source's first-contact check instead: hwcheck_rdma.py).

Lists the RDMA devices (link, speed, MTU, firmware, PCIe slot and NUMA node), the GPUs
and how each sits relative to each NIC on PCIe, the capabilities the backend uses (raw
packet queues, striding RQ, dma-buf), the process's privileges and locked-memory limit,
and optionally registers GPU memory with a NIC and runs a capture from a live stream.

Exit status (also in docs/hardware.md):
  0  every check passed
  1  a device was found but a check failed (port down, MTU too small, no CAP_NET_RAW,
     GPU registration or the capture test failed)
  3  the ibv backend cannot run here: compiled out or rdma-core not loadable
  4  rdma-core loads but there is no RDMA device
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from .. import _core

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_NO_IBV = 3
EXIT_NO_DEVICE = 4

CAP_NET_RAW = 13
CAP_IPC_LOCK = 14
NVIDIA_VENDOR = "0x10de"


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def effective_caps() -> int:
    for line in _read(Path("/proc/self/status")).splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def memlock_limit() -> str:
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return "unlimited" if soft == resource.RLIM_INFINITY else f"{soft // 1024} KiB"


def pci_info(dev_path: Path) -> dict[str, Any]:
    """PCIe slot, NUMA node and link of a device directory (…/device of a class entry)."""
    real = dev_path.resolve()
    return {
        "pci": real.name,
        "path": str(real),
        "numa_node": _read(real / "numa_node") or "?",
        "link": f"{_read(real / 'current_link_speed') or '?'} "
        f"x{_read(real / 'current_link_width') or '?'}",
        "max_link": f"{_read(real / 'max_link_speed') or '?'} "
        f"x{_read(real / 'max_link_width') or '?'}",
    }


def nvidia_gpus() -> list[dict[str, Any]]:
    out = []
    for dev in sorted(Path("/sys/bus/pci/devices").glob("*")):
        if _read(dev / "vendor") == NVIDIA_VENDOR and _read(dev / "class").startswith("0x03"):
            out.append(pci_info(dev))
    return out


def pcie_relation(a: str, b: str) -> str:
    """How two PCIe devices connect, from their sysfs paths (nvidia-smi topo's words)."""
    pa, pb = Path(a).parts, Path(b).parts
    common = 0
    while common < min(len(pa), len(pb)) and pa[common] == pb[common]:
        common += 1
    shared = pa[:common]
    # /sys/devices/pci0000:00/<root port>/<switch ports...>/<device>
    if len(shared) <= 3:
        return "SYS/NODE (different root complexes: traffic crosses the CPU interconnect)"
    if len(shared) == 4:
        return "PHB (same root complex, through the CPU's host bridge)"
    return "PIX/PXB (behind a common PCIe switch: the best path for GPUDirect)"


def device_reports() -> tuple[int, list[dict[str, Any]], str]:
    """(exit status so far, devices, message)."""
    if not _core.ibv_compiled():
        return EXIT_NO_IBV, [], _core.ibv_load_error()
    why = _core.ibv_load_error()
    if why:
        return EXIT_NO_IBV, [], why
    devices = list(_core.ibv_devices())
    if not devices:
        return (
            EXIT_NO_DEVICE,
            [],
            "no RDMA device: rdma-core is installed but no NIC registered with it "
            "(NVIDIA/Mellanox ConnectX needs the mlx5_core and mlx5_ib modules)",
        )
    for d in devices:
        d.update(pci_info(Path("/sys/class/infiniband") / d["name"] / "device"))
        if d["netdev"]:
            d["netdev_mtu"] = int(_read(Path("/sys/class/net") / d["netdev"] / "mtu") or 0)
    return EXIT_OK, devices, ""


def check_devices(devices: list[dict[str, Any]], payload: int) -> list[str]:
    problems = []
    need_mtu = 20 + 8 + payload
    for d in devices:
        if d["error"]:
            problems.append(f"{d['name']}: {d['error']}")
        if d["link_layer"] == "Ethernet" and d["state"] != "active":
            problems.append(f"{d['name']}: port is {d['state']} (check the cable, `ethtool`)")
        mtu = d.get("netdev_mtu", 0)
        if d["link_layer"] == "Ethernet" and mtu and mtu < need_mtu:
            problems.append(
                f"{d['name']}: MTU {mtu} of {d['netdev']} < {need_mtu} for {payload}-byte "
                f"payloads (`ip link set dev {d['netdev']} mtu 9000`)"
            )
    if not (effective_caps() >> CAP_NET_RAW) & 1:
        problems.append(
            "this process lacks CAP_NET_RAW (raw packet queues): run as root or "
            "`sudo setcap cap_net_raw,cap_ipc_lock+ep $(readlink -f $(which python3))`"
        )
    return problems


def print_report(devices: list[dict[str, Any]], gpus: list[dict[str, Any]]) -> None:
    for d in devices:
        print(f"{d['name']}  netdev {d['netdev'] or '-'}  {d['link_layer']}  {d['state']}")
        print(
            f"  speed {d['speed_gbps']:.0f} Gb/s  RDMA MTU {d['active_mtu']}  "
            f"netdev MTU {d.get('netdev_mtu', '-')}  firmware {d['firmware'] or '?'}"
        )
        print(
            f"  PCIe {d['pci']}  NUMA node {d['numa_node']}  link {d['link']} (max {d['max_link']})"
        )
        stride = f"yes ({d['striding_range']})" if d["striding_rq"] else "no"
        print(
            f"  mlx5 direct verbs {'yes' if d['mlx5'] else 'no'}  striding RQ {stride}  "
            f"dma-buf registration {'available' if d['dmabuf'] else 'missing'}"
        )
        for g in gpus:
            relation = pcie_relation(d["path"], g["path"])
            print(f"  GPU {g['pci']} (NUMA {g['numa_node']}): {relation}")
    if not gpus:
        print("GPUs: none found on PCIe")
    smi = shutil.which("nvidia-smi")
    if smi and devices and gpus:
        topo = subprocess.run([smi, "topo", "-m"], capture_output=True, text=True, timeout=30)
        if topo.returncode == 0:
            print("nvidia-smi topo -m:")
            print(topo.stdout.rstrip())


def capture_test(args: argparse.Namespace) -> tuple[bool, str]:
    """Receive a live stream for a few seconds through the ibv backend."""
    from .. import Capture, Chunking, IbvSource

    cap = Capture(
        IbvSource(bind=args.capture, interface=args.interface or ""),
        fmt=_core.Format(payload_size=args.payload),
        chunking=Chunking(packets_per_chunk=1024, max_chunks=4),
    )
    deadline = time.monotonic() + args.seconds
    with cap:
        while time.monotonic() < deadline:
            for chunk in cap.chunks(timeout=0.1):
                chunk.release()
        cap.stop()
        for chunk in cap.chunks(timeout=0):
            chunk.release()
    s = cap.stats
    text = (
        f"capture test: {s.packets} packets, {s.gbps:.2f} Gb/s, lost {s.lost}, "
        f"in place {s.get('in_place', 0)}, fix-up copies {s.get('fixup_copies', 0)}"
    )
    return s.packets > 0 and s.lost == 0, text


def run_hwcheck(args: argparse.Namespace) -> int:
    status, devices, message = device_reports()
    gpus = nvidia_gpus()
    problems: list[str] = []
    notes: list[str] = []
    rdma_report: dict[str, Any] = {}
    if status == EXIT_OK and getattr(args, "rdma", False):
        # The rdma source needs no raw-packet privilege and sets up its own GPU memory.
        from .hwcheck_rdma import run_rdma_check

        _, notes, problems, rdma_report = run_rdma_check(args)
        status = EXIT_CHECK_FAILED if problems else EXIT_OK
    elif status == EXIT_OK:
        problems = check_devices(devices, args.payload)
        if args.gpu is not None:
            target = args.device or devices[0]["name"]
            try:
                method = _core.ibv_gpu_register_check(target, args.gpu)
                notes.append(f"GPU {args.gpu} memory registers with {target} via {method}")
            except (OSError, RuntimeError, ValueError) as e:
                problems.append(f"GPU {args.gpu} registration with {target}: {e}")
        if args.capture:
            try:
                ok, text = capture_test(args)
                (notes if ok else problems).append(text)
            except (OSError, RuntimeError, ValueError) as e:
                problems.append(f"capture test: {e}")
        if problems:
            status = EXIT_CHECK_FAILED
    if args.json:
        print(
            json.dumps(
                {
                    "status": status,
                    "message": message,
                    "devices": devices,
                    "gpus": gpus,
                    "problems": problems,
                    "notes": notes,
                    "cap_net_raw": bool((effective_caps() >> CAP_NET_RAW) & 1),
                    "cap_ipc_lock": bool((effective_caps() >> CAP_IPC_LOCK) & 1),
                    "memlock": memlock_limit(),
                    "rdma": rdma_report,
                },
                indent=2,
            )
        )
        return status
    print("# casper400g-rx hwcheck")
    print(f"ibv backend compiled in: {'yes' if _core.ibv_compiled() else 'no'}")
    caps = effective_caps()
    print(
        f"process: CAP_NET_RAW {'yes' if (caps >> CAP_NET_RAW) & 1 else 'no'}, "
        f"CAP_IPC_LOCK {'yes' if (caps >> CAP_IPC_LOCK) & 1 else 'no'}, "
        f"locked-memory limit {memlock_limit()}, uid {os.geteuid()}"
    )
    if message:
        print(message)
    print_report(devices, gpus)
    for n in notes:
        print(f"ok: {n}")
    for p in problems:
        print(f"problem: {p}")
    verdict = {
        EXIT_OK: "all checks passed",
        EXIT_CHECK_FAILED: "some checks failed",
        EXIT_NO_IBV: "the ibv backend cannot run here",
        EXIT_NO_DEVICE: "no RDMA device",
    }[status]
    print(f"result: {verdict} (exit status {status})")
    return status


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--payload", type=int, default=8192, help="payload bytes, for the MTU check")
    p.add_argument("--gpu", type=int, help="register memory of this CUDA GPU with the NIC")
    p.add_argument("--device", help="RDMA device for --gpu (default: the first)")
    p.add_argument("--capture", metavar="IP:PORT", help="receive a live stream sent here")
    p.add_argument("--interface", help="NIC interface for --capture")
    p.add_argument("--seconds", type=float, default=3.0, help="length of the capture test")
    from .hwcheck_rdma import add_arguments as add_rdma_arguments

    add_rdma_arguments(p)
