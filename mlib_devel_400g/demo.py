"""`casper400g demo`: the project's main job, end to end as far as it exists.

Today: compile the register block with Verilator, configure a core through AXI4-Lite
(MAC, IP, gateway, netmask, UDP port, ARP entries, fabric enable) from cocotb, read every
register back and print the dump, checking each value against the requested configuration.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from casperfpga_ext import addressing
from casperfpga_ext import fhg_regmap as regmap

from . import paths, sim

DEMO_CONFIG = {
    "mac": "02:00:0a:00:00:0a",
    "ip": "10.0.0.10",
    "gateway": "10.0.0.1",
    "netmask": "255.255.255.0",
    "port": 7148,
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


def run(verbose: bool = False, config: dict | None = None) -> int:
    console = Console()
    cfg = config or DEMO_CONFIG
    paths.require_source_tree()
    console.rule("[bold]casper400g demo: configure a 400GbE core over AXI4-Lite")
    console.print(
        "[1/3] register block: Verilator model of fhg_regs (cached after the first build)"
    )
    t0 = time.monotonic()
    dut = sim.build_regs(verbose=verbose)
    console.print(f"      ready in {time.monotonic() - t0:.1f} s")
    console.print(
        f"[2/3] configuring: MAC {cfg['mac']}, IP {cfg['ip']}/{cfg['netmask']}, "
        f"gateway {cfg['gateway']}, port {cfg['port']}, {len(cfg['arp'])} ARP entries, fabric on"
    )
    with tempfile.TemporaryDirectory() as tmp:
        out_path = Path(tmp) / "dump.json"
        t0 = time.monotonic()
        outcomes = sim.run(
            dut,
            "mlib_devel_400g.cocotb_demo_regs",
            paths.PACKAGE_DIR,
            extra_env={
                "CASPER400G_DEMO_CONFIG": json.dumps(cfg),
                "CASPER400G_DEMO_OUT": str(out_path),
                "COCOTB_LOG_LEVEL": "WARNING",
            },
            work_dir=Path(tmp),
            verbose=verbose,
        )
        failed = [o for o in outcomes.values() if not o.passed]
        if failed or not out_path.is_file():
            for o in failed:
                console.print(f"[red]simulation failed: {o.name}: {o.message}")
            return 1
        dump = json.loads(out_path.read_text())
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
