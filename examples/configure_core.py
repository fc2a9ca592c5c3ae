#!/usr/bin/env python3
"""Configure casper400g 400GbE cores over KATCP, casperfpga style, and print their details.

    python examples/configure_core.py vpk180.local --mac 02:00:0a:00:00:0a \\
        --ip 10.0.0.10 --udp-port 7148 --gateway 10.0.0.1 --arp 10.0.0.20=0c:42:a1:00:00:14

A design with several cores (examples/pktgen2x400g) names each with ``--gbe``, its own
addresses in the same option, and one run configures them all::

    python examples/configure_core.py vpk180.local \\
        --gbe gbe0 --gbe gbe1:ip=10.0.1.10,mac=02:00:0a:00:01:0a,gateway=10.0.1.1 \\
        --arp 10.0.0.20=0c:42:a1:00:00:14 --arp 10.0.1.20=0c:42:a1:00:01:14

A core named without settings keeps the addresses it has (its mask's, written at start-up);
``--mac``/``--ip``/``--udp-port``/``--gateway``/``--netmask`` set the one core of a run that
names one (default ``gbe0``). Each ``--arp`` entry goes to the core whose subnet holds its
IP (with one core: to that core).

``--write NAME=VALUE`` (repeatable, in order) then writes the design's own registers with
``fpga.write_int`` — the example design's packet generator, say
(``--write pkt_mode=1 --write pkt_size=8192``).

``--dest IP:PORT[:CHANNEL]`` (repeatable, in entry order) loads the example design's
destination table (examples/pktgen_400g/fhg_dest_table.sv) and switches it in — while
the generator runs, at a spectrum boundary, losing no packet — so packet k of every
spectrum goes to entry k: ``--dest 239.2.0.10:7148:0 --dest 239.2.0.11:7148:512`` spreads
the stream over two multicast groups, channels 0 and 512 in its SPEAD headers (default
channel: the entry's index). ``--dest-off`` switches the table off (every packet to
``pkt_dest_ip``/``pkt_dest_port``). The table is loaded where the first ``--dest`` stands
among the ``--write`` options. ``--dest-regs PREFIX`` names another generator's table
(``p1_`` for port 1 of examples/pktgen2x400g: ``p1_dest_tbl_*``). ``load_dest_table`` does
the same from a script.

The board runs ``casper400g-board-server`` (or any KATCP server with casperfpga's
requests). With casperfpga installed the script uses it (``import casperfpga_ext``
registers our core for the ``xps:fourhundred_gbe`` tag, so ``fpga.gbes.gbe0`` is a
``FourHundredGbe``); without it, ``casperfpga_ext.Fpga`` offers the same calls. The
design's devices come from the server (``?listdev``/``?meta``), or from ``--fpg``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import casperfpga_ext
from casperfpga_ext import addressing


def connect(host: str, port: int, fpg: str | None, timeout: float = 10.0) -> Any:
    """A casperfpga ``CasperFpga`` when casperfpga is installed, else ``casperfpga_ext.Fpga``."""
    try:
        import casperfpga  # type: ignore[import-not-found]
    except ImportError:
        fpga: Any = casperfpga_ext.Fpga(host, port=port, timeout=timeout)
        print(f"connected to {host}:{port} (casperfpga_ext.Fpga; casperfpga not installed)")
    else:
        # The transport named: casperfpga's probe for the board type tries port 7147 only.
        fpga = casperfpga.CasperFpga(
            host, port, transport=casperfpga.KatcpTransport, timeout=timeout
        )
        print(f"connected to {host}:{port} (casperfpga {getattr(casperfpga, '__version__', '')})")
    fpga.get_system_information(fpg)
    return fpga


def arp_entry(text: str) -> tuple[str, str]:
    ip, sep, mac = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"ARP entry {text!r}: expected IP=MAC")
    return ip, mac


def register_write(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"register write {text!r}: expected NAME=VALUE")
    try:
        number = int(value, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"register write {text!r}: {value!r} is not a number"
        ) from None
    if not 0 <= number <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"register write {text!r}: not a 32-bit word")
    return name, number


CORE_KEYS = ("mac", "ip", "port", "gateway", "netmask")


class CoreSpec(NamedTuple):
    """One core to configure: its block name and the settings given for it (key -> text)."""

    name: str
    settings: dict[str, str]


def core_spec(text: str) -> CoreSpec:
    """``NAME`` or ``NAME:KEY=VALUE,...`` with keys mac, ip, port (UDP), gateway, netmask."""
    name, sep, rest = text.partition(":")
    if not name.isidentifier():
        raise argparse.ArgumentTypeError(f"core {text!r}: {name!r} is not a block name")
    settings: dict[str, str] = {}
    for item in rest.split(",") if sep else ():
        key, eq, value = item.partition("=")
        if not eq or key not in CORE_KEYS or not value:
            raise argparse.ArgumentTypeError(
                f"core {text!r}: {item!r} is not KEY=VALUE with KEY one of {', '.join(CORE_KEYS)}"
            )
        if key in settings:
            raise argparse.ArgumentTypeError(f"core {text!r}: {key} given twice")
        settings[key] = value
    return CoreSpec(name, settings)


def arp_owner(ip: str, subnets: dict[str, tuple[int, int]]) -> str:
    """The core (name -> (its IP, its netmask)) whose subnet holds ``ip``."""
    addr = addressing.parse_ip(ip)
    owners = [n for n, (own, mask) in subnets.items() if (addr ^ own) & mask == 0]
    if len(owners) != 1:
        where = ", ".join(
            f"{n} {addressing.format_ip(own)}/{addressing.format_ip(mask)}"
            for n, (own, mask) in subnets.items()
        )
        why = "no core's subnet" if not owners else f"the subnet of {' and '.join(owners)}"
        raise ValueError(f"ARP entry {ip} is on {why} ({where})")
    return owners[0]


class DestEntry(NamedTuple):
    """One entry of the example design's destination table."""

    ip: int
    port: int
    channel: int


# The table's registers (examples/pktgen_400g/design.yaml) and their fields.
DEST_SWITCH = 1 << 8  # dest_tbl_ctrl: a switch (else a write of entry [7:0])
DEST_REFUSED = 1 << 24  # dest_tbl_status: the last command done was refused


def dest_entry(text: str, index: int = 0) -> DestEntry:
    """``IP:PORT[:CHANNEL]``; the channel defaults to ``index``."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"destination {text!r}: expected IP:PORT[:CHANNEL]")
    ip = addressing.parse_ip(parts[0])
    try:
        port = int(parts[1], 0)
        channel = int(parts[2], 0) if len(parts) == 3 else index
    except ValueError:
        raise ValueError(f"destination {text!r}: port and channel are numbers") from None
    if not 1 <= port <= 0xFFFF:
        raise ValueError(f"destination {text!r}: port {port} is not 1..65535")
    if not 0 <= channel <= 0xFFFF:
        raise ValueError(f"destination {text!r}: channel {channel} is not 0..65535")
    return DestEntry(ip, port, channel)


def _dest_command(fpga: Any, command: int, timeout: float, prefix: str = "") -> int:
    """Send one command (dest_tbl_ctrl without its sequence number) and wait until the
    design shows it done: dest_tbl_status[23:16] = its sequence number. Returns the status."""
    status_reg = f"{prefix}dest_tbl_status"
    seq = (fpga.read_uint(status_reg) >> 16 & 0xFF) % 255 + 1  # 1..255: 0 is none
    fpga.write_int(f"{prefix}dest_tbl_ctrl", seq << 16 | command)
    deadline = time.monotonic() + timeout
    while True:
        status = fpga.read_uint(status_reg)
        if (status >> 16 & 0xFF) == seq:
            return status
        if time.monotonic() > deadline:
            what = "switch" if command & DEST_SWITCH else f"write of entry {command & 0xFF}"
            raise RuntimeError(
                f"destination table: the {what} was not done within {timeout} s "
                "(a switch waits for the current spectrum to end: run the generator, or "
                "reset it with pkt_ctrl bit 1)"
            )
        time.sleep(0.001)


def load_dest_table(
    fpga: Any, entries: Sequence[DestEntry], timeout: float = 10.0, prefix: str = ""
) -> int:
    """Write ``entries`` into the copy of the table not in use and switch it in (no
    entries: the table off). Returns the packet number (mod 2**32) of the first packet
    sent by the new table. ``prefix``: the generator's register prefix (``p1_`` for port 1
    of examples/pktgen2x400g)."""
    size = fpga.read_uint(f"{prefix}dest_tbl_status") >> 8 & 0xFF
    if len(entries) > size:
        raise ValueError(f"destination table: {len(entries)} entries, the design has {size}")
    for index, entry in enumerate(entries):
        fpga.write_int(f"{prefix}dest_tbl_ip", entry.ip)
        fpga.write_int(f"{prefix}dest_tbl_port", entry.channel << 16 | entry.port)
        if _dest_command(fpga, index, timeout, prefix) & DEST_REFUSED:
            raise RuntimeError(f"destination table: entry {index} refused")
    fpga.write_int(f"{prefix}dest_tbl_count", len(entries))
    if _dest_command(fpga, DEST_SWITCH, timeout, prefix) & DEST_REFUSED:
        raise RuntimeError(f"destination table: a table of {len(entries)} entries refused")
    return fpga.read_uint(f"{prefix}dest_tbl_switch")


class InOrder(argparse.Action):
    """Keeps --write, --dest and --dest-off in command-line order (``steps``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if namespace.steps is None:
            namespace.steps = []
        namespace.steps.append((self.dest, values))


def plan(steps: list[tuple[str, Any]]) -> list[Any]:
    """The writes, (name, value), in order, and the destination table (a list of entries,
    empty for --dest-off) where its first --dest stands."""
    out: list[Any] = []
    table: list[DestEntry] | None = None
    for kind, value in steps:
        if kind == "write":
            out.append(value)
        elif kind == "dest_off":
            out.append([])
        elif table is None:
            table = [dest_entry(value, 0)]
            out.append(table)
        else:
            table.append(dest_entry(value, len(table)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host", help="the board (its KATCP server)")
    parser.add_argument("--port", type=int, default=7147, help="KATCP port (default 7147)")
    parser.add_argument("--fpg", help="the design's .fpg (default: ask the server)")
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds per KATCP request (default 10)"
    )
    parser.add_argument(
        "--gbe",
        type=core_spec,
        action="append",
        metavar="NAME[:KEY=VALUE,...]",
        help="a core to configure (repeatable; default gbe0), with its own mac, ip, port, "
        "gateway, netmask",
    )
    parser.add_argument(
        "--mac", help="the core's MAC address (one core; default 02:00:0a:00:00:0a)"
    )
    parser.add_argument("--ip", help="the core's IP address (one core; default 10.0.0.10)")
    parser.add_argument("--udp-port", type=int, help="the core's UDP port (one core; default 7148)")
    parser.add_argument("--gateway", help="gateway IP address (one core)")
    parser.add_argument("--netmask", help="subnet mask (one core; default 255.255.255.0)")
    parser.add_argument(
        "--arp", type=arp_entry, action="append", default=[], metavar="IP=MAC", help="ARP entry"
    )
    parser.add_argument(
        "--write",
        type=register_write,
        action=InOrder,
        metavar="NAME=VALUE",
        help="then write a design register (fpga.write_int), in the order given",
    )
    table = parser.add_mutually_exclusive_group()
    table.add_argument(
        "--dest",
        action=InOrder,
        metavar="IP:PORT[:CHANNEL]",
        help="then load the example design's destination table, an entry each, in order "
        "(where the first --dest stands among the --write options)",
    )
    table.add_argument(
        "--dest-off", action=InOrder, nargs=0, help="then switch the destination table off"
    )
    parser.add_argument(
        "--dest-regs",
        default="",
        metavar="PREFIX",
        help="the destination table's register prefix (p1_: examples/pktgen2x400g's port 1)",
    )
    parser.set_defaults(steps=None)
    args = parser.parse_args(argv)
    try:
        steps = plan(args.steps or [])
        cores = core_plan(args)
    except ValueError as exc:
        parser.error(str(exc))

    fpga = None
    try:
        fpga = connect(args.host, args.port, args.fpg, args.timeout)
        configure_cores(fpga, cores, args.arp)
        for step in steps:
            if isinstance(step, list):
                first = load_dest_table(fpga, step, args.timeout, args.dest_regs)
                for index, d in enumerate(step):
                    ip = addressing.format_ip(d.ip)
                    print(f"dest {index}: {ip}:{d.port} channel {d.channel}")
                print(f"destination table ({len(step)} entries) in force from packet {first}")
            else:
                name, value = step
                fpga.write_int(name, value)
                print(f"{name} = {value:#x}")
    except (OSError, ValueError, AttributeError, RuntimeError) as exc:
        print(f"configure_core: {exc}", file=sys.stderr)
        return 1
    finally:
        if fpga is not None:
            close(fpga)
    return 0


ONE_CORE_DEFAULTS = {
    "mac": "02:00:0a:00:00:0a",
    "ip": "10.0.0.10",
    "port": "7148",
    "netmask": "255.255.255.0",
}


def core_plan(args: argparse.Namespace) -> list[CoreSpec]:
    """The cores to configure and their settings: ``--gbe`` options; the one-core options
    (``--mac``, ``--ip``, ...) fill in the settings of a run naming one core (their
    defaults those of examples/pktgen_400g's core) and are refused with several."""
    cores: list[CoreSpec] = args.gbe or [CoreSpec("gbe0", {})]
    names = [c.name for c in cores]
    if len(set(names)) != len(names):
        raise ValueError(f"--gbe names a core twice: {', '.join(names)}")
    single = {
        "mac": args.mac,
        "ip": args.ip,
        "port": None if args.udp_port is None else str(args.udp_port),
        "gateway": args.gateway,
        "netmask": args.netmask,
    }
    given = {k: v for k, v in single.items() if v is not None}
    if len(cores) > 1:
        if given:
            opts = ", ".join(f"--{'udp-port' if k == 'port' else k}" for k in given)
            raise ValueError(
                f"{opts} set one core; with several, give each its own: --gbe NAME:ip=...,mac=..."
            )
        return cores
    settings = {**ONE_CORE_DEFAULTS, **given, **cores[0].settings}
    return [CoreSpec(cores[0].name, settings)]


def configure_cores(fpga: Any, cores: list[CoreSpec], arp: list[tuple[str, str]]) -> None:
    """Each core: its addresses (the ones given; the rest as the core has them), the ARP
    entries on its subnet (every entry, with one core), the fabric enabled; then its
    details printed."""
    gbes = {c.name: getattr(fpga.gbes, c.name) for c in cores}
    subnets: dict[str, tuple[int, int]] = {}
    for core in cores:
        gbe = gbes[core.name]
        s = core.settings
        if s:
            have = gbe.get_gbe_core_details()
            gbe.configure_core(
                s.get("mac", str(have["mac"])),
                s.get("ip", str(have["ip"])),
                int(s["port"], 0) if "port" in s else int(have["fabric_port"]),
                s.get("gateway", str(have["gateway_ip"])),
                s.get("netmask", str(have["subnet_mask"])),
            )
        now = gbe.get_gbe_core_details()
        subnets[core.name] = (
            addressing.parse_ip(str(now["ip"])),
            addressing.parse_ip(str(now["subnet_mask"])),
        )
    tables: dict[str, dict[str, str]] = {c.name: {} for c in cores}
    for ip, mac in arp:
        owner = cores[0].name if len(cores) == 1 else arp_owner(ip, subnets)
        tables[owner][ip] = mac
    for core in cores:
        gbe = gbes[core.name]
        gbe.set_arp_table(tables[core.name])  # every entry written, then read back
        gbe.fabric_enable()
        gbe.print_gbe_core_details(arp=True)


def close(fpga: Any) -> None:
    """Disconnect. casperfpga: end katcp's I/O thread (it would keep the script alive) by
    stopping and joining it; its ``disconnect()`` also closes the stream from this
    thread, racing that thread (a tornado KeyError now and then)."""
    transport = fpga.transport
    if hasattr(transport, "stop") and hasattr(transport, "join"):
        transport.stop()
        transport.join(10)
    else:
        fpga.disconnect()


if __name__ == "__main__":
    sys.exit(main())
