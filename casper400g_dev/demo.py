"""`python -m casper400g_dev demo`: the project's main job, end to end as far as it exists.

1. Toolflow: `casper400g build examples/pktgen_400g/design.yaml` with its stages, the
   build tree and the design's register map (demo_toolflow.py).
2. Register block: compile it with Verilator, configure a core through AXI4-Lite (MAC, IP,
   gateway, netmask, UDP port, ARP entries, fabric enable) from cocotb, read every register
   back and print the dump, each value checked against the requested configuration.
3. The core alone: simulate it sending 100 datagrams of the example stream into a DCMAC
   model paced at 400GbE, verify every frame with scapy (headers, checksums, payload
   formula) and against the core's counters, and return them through its receive path.
4. The generated design: simulate the example design's top.v: its packet generator,
   driven through its software registers, sends 100 datagrams through the core into the
   DCMAC model; every frame is compared with scapy's, written to build/demo/tx.pcap,
   re-verified and checked against the core's counters.
5. Receive: capture tx.pcap with the receiver's pcap backend into chunks (0 lost, every
   payload byte checked), then a live 5-second loopback capture from the receiver's own
   sender with the monitor display.
6. KATCP: the simulated core behind `casper400g-board-server` on localhost; the
   casperfpga-style script examples/configure_core.py configures it over KATCP and prints
   print_gbe_core_details(); a datagram sent afterwards is checked against scapy's frame.
7. GPU: the example stream captured into GPU memory (host-staged and GPUDirect) and
   checked there with CuPy; without a GPU the stage says that it was skipped and why.
8. The chain live (demo_twin.py): the design of part 1 as a board (its twin), reached by
   arping/ping through a TAP device, configured by examples/configure_core.py over KATCP,
   its tone stream captured by the receiver on that interface into chunks (GPU when
   there is one), every payload and count checked, the spectrum saved as a PNG.
9. The array (demo_cluster.py): the twin's destination table spreads its tone, SPEAD
   heaps a channel group each, over four multicast groups through a switch with IGMP
   snooping to two hosts (network namespaces) capturing on a Dask cluster; every heap
   checked against the models, the two hosts' spectra side by side in one PNG (the tone
   in the host that takes its channel), and the array's loss account against the core's
   counter.
10. Two ports (demo_2port.py): examples/pktgen2x400g's twin, each port a TAP device of its
   own answering arping and ping with its core's address, both cores configured in one
   run of configure_core.py, both streams into one host (a capture per stream id), every
   payload and count checked, the status a line per port.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from casperfpga_ext import addressing
from casperfpga_ext import fhg_regmap as regmap
from verification import stream_check

from . import checkout, demo_report, sim

DEMO_CONFIG = {
    "mac": "02:00:0a:00:00:0a",
    "ip": "10.0.0.10",
    "gateway": "10.0.0.1",
    "netmask": "255.255.255.0",
    "port": 7148,
    "dest_ip": "10.0.0.20",
    "dest_port": 7148,
    "arp": {
        "10.0.0.1": "02:00:0a:00:00:01",
        "10.0.0.20": "0c:42:a1:00:00:14",
        "10.0.0.21": "0c:42:a1:00:00:15",
    },
}

_IP_REGS = {"ip", "gateway", "netmask", "mc_ip", "mc_mask"}


def _decode(reg: regmap.Register, value: int) -> str:
    if reg.name in _IP_REGS:
        return addressing.format_ip(value)
    if reg.name == "port":
        return str(value)
    if reg.width == 64 or reg.is_counter:
        return f"{value:,}"
    parts = []
    for f in reg.fields:
        v = f.get(value)
        if f.width == 1:
            if v:
                parts.append(f.name)
        elif f.name not in ("mac",):
            parts.append(f"{f.name}={v}")
    return " ".join(parts)


def expected_registers(cfg: dict) -> dict[str, int]:
    mac = addressing.parse_mac(cfg["mac"])
    return {
        "mac_hi": mac >> 32,
        "mac_lo": mac & 0xFFFFFFFF,
        "ip": addressing.parse_ip(cfg["ip"]),
        "gateway": addressing.parse_ip(cfg["gateway"]),
        "netmask": addressing.parse_netmask(cfg["netmask"]),
        "port": addressing.parse_port(cfg["port"]),
        "ctrl": regmap.REGISTERS["ctrl"].field("fabric_en").put(regmap.REGISTERS["ctrl"].reset, 1),
    }


def run(verbose: bool = False, config: dict | None = None, tx_frames: int = 100) -> int:
    from . import demo_toolflow

    t_demo = time.monotonic()
    console = Console()
    cfg = config or DEMO_CONFIG
    build = demo_toolflow.run_build(console)
    if build is None:
        return 1
    status = run_registers(console, verbose, cfg)
    if status:
        return status
    status = run_tx(console, verbose, cfg, tx_frames)
    if status:
        return status
    # The generated design's frames replace the core's in tx.pcap for the receiver.
    status, sent = demo_toolflow.run_top(console, build, cfg, tx_frames, verbose=verbose)
    if status:
        return status
    status = run_rx(console, checkout.ROOT / "build" / "demo" / "tx.pcap", sent)
    if status:
        return status
    status = run_katcp(console, verbose, cfg)
    if status:
        return status
    status = run_gpu(console)
    if status:
        return status
    from . import demo_twin

    python, library = casperfpga_python()
    status = demo_twin.run(console, build, python, library)
    if status == 0:
        from . import demo_cluster

        status = demo_cluster.run(console, build)
    if status == 0:
        from . import demo_2port

        status = demo_2port.run(console)
    console.rule(
        f"[bold]casper400g demo: {'done' if status == 0 else 'FAILED'} in "
        f"{time.monotonic() - t_demo:.0f} s"
    )
    return status


def run_registers(console: Console, verbose: bool, cfg: dict) -> int:
    console.rule("[bold]casper400g demo, part 2: configure a 400GbE core over AXI4-Lite")
    dut = demo_report.build_model(
        console,
        "[1/3] register block: Verilator model of fhg_regs (cached after the first build)",
        lambda: sim.build_regs(verbose=verbose),
    )
    console.print(
        f"[2/3] configuring: MAC {cfg['mac']}, IP {cfg['ip']}/{cfg['netmask']}, "
        f"gateway {cfg['gateway']}, port {cfg['port']}, {len(cfg['arp'])} ARP entries, fabric on"
    )
    t0 = time.monotonic()
    dump = demo_report.run_job(
        console,
        dut,
        "verification.cocotb_demo_regs",
        {"CASPER400G_DEMO_CONFIG": json.dumps(cfg)},
        verbose,
    )
    if dump is None:
        return 1
    console.print(f"      simulated in {time.monotonic() - t0:.1f} s")

    console.print("[3/3] register dump (read back over AXI4-Lite)")
    want = expected_registers(cfg)
    table = Table(show_lines=False)
    for col in ("offset", "register", "value", "decoded", "check"):
        table.add_column(col, justify="right" if col == "offset" else "left")
    mismatches = 0
    for reg in regmap.REGISTERS.values():
        value = dump["registers"][reg.name]
        digits = reg.width // 4
        check = ""
        if reg.name in want:
            ok = value == want[reg.name]
            mismatches += not ok
            check = "[green]ok" if ok else f"[red]want {want[reg.name]:#x}"
        table.add_row(
            f"0x{reg.offset:03X}", reg.name, f"0x{value:0{digits}X}", _decode(reg, value), check
        )
    mac = (dump["registers"]["mac_hi"] << 32) | dump["registers"]["mac_lo"]
    console.print(table)
    console.print(f"MAC address (mac_hi:mac_lo) = {addressing.format_mac(mac)}")

    arp = Table(title="ARP table (valid entries, read back over AXI4-Lite)")
    for col in ("index", "IP", "MAC", "check"):
        arp.add_column(col)
    subnet = addressing.parse_ip(cfg["ip"]) & addressing.parse_netmask(cfg["netmask"])
    expected_arp = {
        addressing.parse_ip(ip) & 0xFF: addressing.parse_mac(m) for ip, m in cfg["arp"].items()
    }
    for index_text, (word0, word1) in sorted(dump["arp"].items(), key=lambda kv: int(kv[0])):
        index = int(index_text)
        entry_mac = ((word0 & 0xFFFF) << 32) | word1
        ok = expected_arp.get(index) == entry_mac
        mismatches += not ok
        arp.add_row(
            str(index),
            addressing.format_ip(subnet | index),
            addressing.format_mac(entry_mac),
            "[green]ok" if ok else "[red]unexpected",
        )
    if len(dump["arp"]) != len(expected_arp):
        mismatches += 1
    console.print(arp)
    if mismatches:
        console.print(f"[red bold]{mismatches} value(s) did not read back as configured")
        return 1
    console.print("[green bold]every configured value read back as written")
    return 0


def run_tx(console: Console, verbose: bool, cfg: dict, count: int) -> int:
    import scapy.layers.l2  # noqa: F401 - registers Ethernet as the pcap link type
    from scapy.utils import rdpcap

    console.rule("[bold]casper400g demo, part 3: the core alone sends the example stream")
    dut = demo_report.build_model(
        console,
        "[1/3] fhg_core: Verilator model of the whole core (cached after the first build)",
        lambda: sim.build_core(verbose=verbose),
    )
    out_dir = checkout.ROOT / "build" / "demo"
    out_dir.mkdir(parents=True, exist_ok=True)
    pcap = out_dir / "tx.pcap"
    console.print(
        f"[2/3] streaming {count} x 8192-B datagrams to {cfg['dest_ip']}:{cfg['dest_port']} "
        "through the user port into a DCMAC model paced at 400GbE, then back into the "
        "core's receive path through an echoing peer"
    )
    t0 = time.monotonic()
    stats = demo_report.run_job(
        console,
        dut,
        "verification.cocotb_demo_tx",
        {
            "CASPER400G_DEMO_CONFIG": json.dumps(cfg),
            "CASPER400G_DEMO_FRAMES": str(count),
            "CASPER400G_DEMO_PCAP": str(pcap),
        },
        verbose,
    )
    if stats is None:
        return 1
    console.print(f"      simulated in {time.monotonic() - t0:.1f} s")

    console.print(f"[3/3] checking {pcap.relative_to(checkout.ROOT)} with scapy")
    packets = rdpcap(str(pcap))
    problems = []
    for n, pkt in enumerate(packets):
        why = stream_check.verify_frame(bytes(pkt), n, cfg)
        if why:
            problems.append(f"frame {n}: {why}")
    frame_bytes = sum(len(bytes(p)) for p in packets)
    rows = [
        ("frames in tx.pcap", len(packets), len(packets) == count),
        ("frame bytes (FCS excluded)", frame_bytes, True),
        ("frames verified by scapy", len(packets) - len(problems), not problems),
        ("tx_frames register", stats["tx_frames"], stats["tx_frames"] == len(packets)),
        ("tx_bytes register", stats["tx_bytes"], stats["tx_bytes"] == frame_bytes),
        ("tx_udp_bytes register", stats["tx_udp_bytes"], stats["tx_udp_bytes"] == 8192 * count),
        ("tx_arp_miss register", stats["tx_arp_miss"], stats["tx_arp_miss"] == 0),
        ("looped back: rx_frames register", stats["rx_frames"], stats["rx_frames"] == count),
        (
            "looped back: rx_udp_packets (delivered)",
            stats["rx_udp_packets"],
            stats["rx_udp_packets"] == count,
        ),
        (
            "looped back: payloads equal to those sent",
            stats["rx_payload_ok"],
            stats["rx_payload_ok"] == count,
        ),
        (
            "looped back: rx_udp_bytes register",
            stats["rx_udp_bytes"],
            stats["rx_udp_bytes"] == 8192 * count,
        ),
    ]
    drops = {
        k: v for k, v in stats.items() if k.startswith("rx_drop_") or k == "rx_bad_udp_checksum"
    }
    rows += [(f"looped back: {k}", v, v == 0) for k, v in drops.items()]
    if demo_report.print_checks(console, "TX summary", rows, stats["goodput_bps"], problems):
        return 1
    console.print(
        f"[green bold]{count} frames sent and verified (checksums, payload, IP id), and "
        f"received back intact; open {pcap.relative_to(checkout.ROOT)} in Wireshark"
    )
    return 0


def run_rx(console: Console, pcap: Path, count: int, loopback_s: float = 5.0) -> int:
    import threading

    import numpy as np

    from casper400g_rx import Capture, Chunking, PcapSource, UdpSource, _core
    from casper400g_rx.example_stream import example_payloads
    from casper400g_rx.monitor import run_monitor

    console.rule("[bold]casper400g demo, part 5: capture the stream with the receiver")
    per_chunk = 50
    console.print(
        f"[1/2] {pcap.relative_to(checkout.ROOT)} through the pcap backend "
        f"into chunks of {per_chunk} packets"
    )
    cap = Capture(
        PcapSource(path=str(pcap)), chunking=Chunking(packets_per_chunk=per_chunk, first_chunk=0)
    )
    mismatched = 0
    placed = 0
    with cap:
        for chunk in cap.chunks(timeout=2.0):
            with chunk:
                present = chunk.present
                seqs = chunk.first_seq + np.flatnonzero(present)
                placed += int(present.sum())
                mismatched += int(np.count_nonzero(chunk.data[present] != example_payloads(seqs)))
    stats = cap.stats
    table = Table(title="pcap capture")
    for col in ("packets", "lost", "late", "duplicate", "rejected", "payload bytes wrong"):
        table.add_column(col, justify="right")
    table.add_row(
        f"{stats.packets:,}",
        f"{stats.lost:,}",
        f"{stats.late:,}",
        f"{stats.duplicate:,}",
        f"{stats.rejected:,}",
        f"{mismatched:,}",
    )
    console.print(table)
    if stats.packets != count or stats.lost or mismatched or placed != count:
        console.print("[red bold]the receiver did not get the core's stream intact")
        return 1

    console.print(
        f"[2/2] {loopback_s:.0f}-second loopback capture: the receiver's C++ sender "
        "streams the example stream to 127.0.0.1 at 1 Gb/s"
    )
    rate = 1.0
    per_live_chunk = 256
    # Whole chunks only: slots of a last, partly sent chunk would count as lost.
    total = int(loopback_s * rate * 1e9 / (8192 * 8)) // per_live_chunk * per_live_chunk
    live = Capture(
        UdpSource(bind="127.0.0.1:0"),
        chunking=Chunking(packets_per_chunk=per_live_chunk, n_chunks=32, first_chunk=0),
    )
    sender = _core.Sender(port=live.port, count=total, rate_gbps=rate)
    thread = threading.Thread(target=sender.run, args=(loopback_s * 3 + 5,))
    thread.start()
    try:
        final = run_monitor(live, loopback_s + 1.0, console=console)
    finally:
        thread.join()
    console.print()
    console.print(
        f"received {final.packets:,} of {total:,} packets, lost {final.lost:,}, "
        f"kernel drops {final.get('kernel_drops', 0):,}"
    )
    if final.lost or final.packets != total:
        # Loopback shares the machine's cores with the sender: losses here are the
        # machine's, and the receiver accounts for every one of them.
        console.print("[yellow]the loopback run lost packets on this machine (counted above)")
    console.print("[green bold]receiver: the core's stream captured intact")
    return 0


def casperfpga_python() -> tuple[str, str]:
    """The Python to run the example with, and which library it will use: one with the
    real casperfpga when there is one (this one, or the venv the tests install it into
    under .cache/), else this one with casperfpga_ext.Fpga."""
    import importlib.util
    import sys

    if importlib.util.find_spec("casperfpga") is not None:
        return sys.executable, "casperfpga"
    for venv in sorted((checkout.ROOT / ".cache").glob("casperfpga-*")):
        if (venv / ".installed").is_file() and (venv / "bin" / "python").is_file():
            return str(venv / "bin" / "python"), f"casperfpga ({venv.name})"
    return sys.executable, "casperfpga_ext.Fpga (casperfpga is not installed)"


def run_katcp(console: Console, verbose: bool, cfg: dict) -> int:
    console.rule("[bold]casper400g demo, part 6: configure the core over KATCP")
    example = checkout.ROOT / "examples" / "configure_core.py"
    dut = demo_report.build_model(
        console,
        "[1/3] fhg_core behind board-server on 127.0.0.1 (KATCP; each request carried out "
        "on the simulated AXI4-Lite bus)",
        lambda: sim.build_core(verbose=verbose),
    )
    python, library = casperfpga_python()
    console.print(f"[2/3] running {example.relative_to(checkout.ROOT)} against it, with {library}")
    t0 = time.monotonic()
    result = demo_report.run_job(
        console,
        dut,
        "verification.cocotb_demo_katcp",
        {
            "CASPER400G_DEMO_CONFIG": json.dumps(cfg),
            "CASPER400G_PYTHON": python,
            "CASPER400G_EXAMPLE": str(example),
        },
        verbose,
    )
    if result is None:
        return 1
    console.print(f"      $ {result['command']}", soft_wrap=True, markup=False)
    for line in result["output"].rstrip().splitlines():
        console.print(f"      {line}", soft_wrap=True, markup=False, highlight=False)
    console.print(
        f"      {result['requests']} KATCP requests, {result['bus_accesses']} bus accesses, "
        f"{result['sim_time_us']:.1f} us simulated, {time.monotonic() - t0:.1f} s"
    )
    if result["returncode"] != 0:
        console.print(f"[red bold]the script exited with status {result['returncode']}")
        return 1
    console.print("[3/3] a datagram through the user port after the script configured the core")
    if not result.get("frame_ok"):
        console.print(f"[red]got  {result.get('frame', '')[:120]}")
        console.print(f"[red]want {result.get('expected', '')[:120]}")
        console.print("[red bold]the frame does not carry the configured addresses")
        return 1
    frame = bytes.fromhex(result["frame"])
    console.print(
        f"      {len(frame)}-byte frame from {addressing.format_mac(int(frame[6:12].hex(), 16))} "
        f"{cfg['ip']}:{cfg['port']} to {cfg['dest_ip']}:{cfg['dest_port']}"
    )
    console.print(
        "[green bold]configured over KATCP by the casperfpga-style script; the frame equals "
        "scapy's, byte for byte"
    )
    return 0


def run_gpu(console: Console) -> int:
    from casper400g_rx.tools.demo import demo_gpu

    console.rule("[bold]casper400g demo, part 7: the stream into GPU memory")
    ran, lines = demo_gpu()
    for line in lines:
        console.print(line)
    if ran:
        console.print("[green bold]GPU: every chunk checked on the GPU")
    return 0 if ran or lines[0].startswith("GPU stage skipped") else 1
