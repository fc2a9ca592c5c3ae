"""`python -m casper400g_dev demo`, toolflow part: build the example design and simulate its
top level.

1. ``casper400g build examples/pktgen_400g/design.yaml``: the stages as they run, the
   build tree, and the design's register map (from the build's memory map and .fpg header).
2. The generated ``top.v`` under Verilator: the host configures the design through its
   registers (the 400GbE block's mask parameters are already in place after reset), the
   packet generator sends the example stream into the core and the DCMAC model paced at
   400GbE; every frame is compared with scapy's and written to ``build/demo/tx.pcap``.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.fpg import find_gbes, parse_fpg
from mlib_devel_400g.toolflow import BuildResult, ToolflowError
from verification import stream_check

from . import checkout, demo_report, sim, toolflow_sim

BUILD_DIR = checkout.ROOT / "build" / "pktgen_400g"
SHOWN_GBE_REGS = (
    "core_type",
    "mac_hi",
    "mac_lo",
    "ip",
    "gateway",
    "netmask",
    "ctrl",
    "port",
    "tx_packet_counter",
    "tx_frames",
    "tx_udp_packets",
    "tx_arp_miss",
)


def run_build(console: Console) -> BuildResult | None:
    rel = toolflow_sim.EXAMPLE_DESIGN.relative_to(checkout.ROOT)
    console.rule(f"[bold]casper400g demo, part 1: casper400g build {rel}")
    try:
        result = toolflow_sim.build_example(BUILD_DIR, progress=console.print)
    except ToolflowError as exc:
        console.print(f"[red]build failed: {exc}")
        return None
    tree = Tree(f"[bold]{BUILD_DIR.relative_to(checkout.ROOT)}/")
    for path in sorted(BUILD_DIR.rglob("*")):
        if path.is_file():
            tree.add(f"{path.relative_to(BUILD_DIR)}  [dim]{path.stat().st_size:,} B")
    console.print(tree)

    header = parse_fpg(result.fpg_header)
    [gbe] = find_gbes(header)
    # The core's registers are devices too (<gbe>_<name>); the second table shows them.
    device_of = {d.target: f"{gbe.name}_{d.name}" for d in regmap.DEVICES.values()}
    table = Table(
        title="register map (fpg_header.txt / core_info.tab), "
        f"without the {len(device_of)} {gbe.name}_* register devices"
    )
    for col in ("device", "tag", "address", "size"):
        table.add_column(col)
    tags = {b.name: b.tag for b in header.blocks.values()}
    for dev in sorted(header.devices.values(), key=lambda d: d.address):
        if dev.name not in device_of.values():
            table.add_row(
                dev.name, tags.get(dev.name, ""), f"{dev.address:#010x}", f"{dev.size:#x}"
            )
    console.print(table)
    regs = Table(
        title=f"{gbe.name}: registers from the generated map (first of "
        f"{len(regmap.REGISTERS)} + {len(regmap.REGIONS)} regions)"
    )
    for col in ("register", "device in the .fpg", "address", "access", "reset"):
        regs.add_column(col)
    for name in SHOWN_GBE_REGS:
        reg = regmap.REGISTERS[name]
        address = f"{gbe.address + reg.offset:#010x}"
        regs.add_row(name, device_of[name], address, reg.sw, f"{reg.reset:#x}")
    for region in regmap.REGIONS.values():
        regs.add_row(
            f"{region.name} [{region.entries}]",
            device_of[region.name],
            f"{gbe.address + region.offset:#010x}",
            region.sw,
            "",
        )
    console.print(regs)
    console.print(
        f"?meta of {gbe.name}: "
        + ", ".join(f"{k}={gbe.meta[k]}" for k in ("fab_mac", "fab_ip", "fab_udp", "fab_gate"))
    )
    return result


def run_top(
    console: Console, build: BuildResult, cfg: dict, count: int, verbose: bool = False
) -> tuple[int, int]:
    """Returns (exit status, frames in tx.pcap): one burst of `count` (pkt_count)."""
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    console.rule("[bold]casper400g demo, part 4: the generated design sends the example stream")
    dut = demo_report.build_model(
        console,
        "[1/2] top.v + every source: Verilator model (cached after the first build)",
        lambda: toolflow_sim.compile_top(build, verbose=verbose),
    )
    sim_cfg = toolflow_sim.config(
        build,
        dest_ip=cfg["dest_ip"],
        dest_mac=cfg["arp"][cfg["dest_ip"]],
        dest_port=cfg["dest_port"],
        bursts=({"size": 8192, "period": 0, "count": count},),
    )
    console.print(
        f"[2/2] host: ARP entry and fabric enable on gbe0, pkt_dest_ip/port, pkt_size 8192, "
        f"pkt_count {count}, pkt_ctrl enable: {count} datagrams into the DCMAC model, "
        "each checked against scapy"
    )
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "job.json"
        env = {
            **toolflow_sim.env(sim_cfg),
            "CASPER400G_JOB_OUT": str(out),
            "COCOTB_LOG_LEVEL": "WARNING",
        }
        try:
            outcomes = sim.run(
                dut,
                toolflow_sim.COCOTB_MODULE,
                checkout.VERIFICATION_DIR,
                testcase="sends_the_example_stream",
                extra_env=env,
                work_dir=Path(tmp),
                verbose=verbose,
            )
        except sim.SimulationError as exc:
            console.print(f"[red]simulation failed: {exc}")
            return 1, 0
        failed = [o for o in outcomes.values() if not o.passed]
        if failed or not out.is_file():
            for o in failed:
                console.print(f"[red]{o.name}: {o.message}")
            return 1, 0
        result = json.loads(out.read_text())
    console.print(f"      simulated in {time.monotonic() - t0:.1f} s")
    pcap = checkout.ROOT / "build" / "demo" / "tx.pcap"
    pcap.parent.mkdir(parents=True, exist_ok=True)
    frames = [bytes.fromhex(h) for h in result["frames"]]
    wrpcap(str(pcap), [Ether(f) for f in frames])

    # A second, independent look at the capture: scapy's own checksums, the formula.
    problems = [
        f"frame {n}: {why}"
        for n, f in enumerate(frames)
        if (why := stream_check.verify_frame(f, n, cfg))
    ]
    counters = result["counters"]
    frame_bytes = sum(len(f) for f in frames)
    n = len(frames)
    rows = [
        ("frames in tx.pcap", n, n == count),
        ("pkt_sent register (pktgen)", result["sent"], result["sent"] == n),
        ("frames verified by scapy", n - len(problems), not problems),
        ("tx_frames register (core)", counters["tx_frames"], counters["tx_frames"] == n),
        ("tx_bytes register", counters["tx_bytes"], counters["tx_bytes"] == frame_bytes),
        ("tx_udp_bytes register", counters["tx_udp_bytes"], counters["tx_udp_bytes"] == 8192 * n),
        ("tx_arp_miss register", counters["tx_arp_miss"], counters["tx_arp_miss"] == 0),
    ]
    title = "TX summary (generated top)"
    if demo_report.print_checks(console, title, rows, result["goodput_bps"], problems):
        return 1, n
    console.print(
        f"[green bold]{n} frames from the generated design verified (byte for byte against "
        f"scapy, checksums, payload, IP id); open {pcap.relative_to(checkout.ROOT)} in "
        "Wireshark"
    )
    return 0, n
