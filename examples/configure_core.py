#!/usr/bin/env python3
"""Configure a casper400g 400GbE core over KATCP, casperfpga style, and print its details.

    python examples/configure_core.py vpk180.local --mac 02:00:0a:00:00:0a \\
        --ip 10.0.0.10 --udp-port 7148 --gateway 10.0.0.1 --arp 10.0.0.20=0c:42:a1:00:00:14

``--write NAME=VALUE`` (repeatable, in order) then writes the design's own registers with
``fpga.write_int`` — the example design's packet generator, say
(``--write pkt_mode=1 --write pkt_size=8192``).

The board runs ``casper400g board-server`` (or any KATCP server with casperfpga's
requests). With casperfpga installed the script uses it (``import casperfpga_ext``
registers our core for the ``xps:fourhundred_gbe`` tag, so ``fpga.gbes.gbe0`` is a
``FourHundredGbe``); without it, ``casperfpga_ext.Fpga`` offers the same calls. The
design's devices come from the server (``?listdev``/``?meta``), or from ``--fpg``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import casperfpga_ext


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host", help="the board (its KATCP server)")
    parser.add_argument("--port", type=int, default=7147, help="KATCP port (default 7147)")
    parser.add_argument("--fpg", help="the design's .fpg (default: ask the server)")
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds per KATCP request (default 10)"
    )
    parser.add_argument("--gbe", default="gbe0", help="the core's block name (default gbe0)")
    parser.add_argument("--mac", default="02:00:0a:00:00:0a", help="the core's MAC address")
    parser.add_argument("--ip", default="10.0.0.10", help="the core's IP address")
    parser.add_argument("--udp-port", default=7148, type=int, help="the core's UDP port")
    parser.add_argument("--gateway", help="gateway IP address")
    parser.add_argument("--netmask", default="255.255.255.0", help="subnet mask")
    parser.add_argument(
        "--arp", type=arp_entry, action="append", default=[], metavar="IP=MAC", help="ARP entry"
    )
    parser.add_argument(
        "--write",
        type=register_write,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="then write a design register (fpga.write_int), in the order given",
    )
    args = parser.parse_args(argv)

    fpga = None
    try:
        fpga = connect(args.host, args.port, args.fpg, args.timeout)
        gbe = getattr(fpga.gbes, args.gbe)
        gbe.configure_core(args.mac, args.ip, args.udp_port, args.gateway, args.netmask)
        gbe.set_arp_table(dict(args.arp))  # every entry written, then read back
        gbe.fabric_enable()
        gbe.print_gbe_core_details(arp=True)
        for name, value in args.write:
            fpga.write_int(name, value)
            print(f"{name} = {value:#x}")
    except (OSError, ValueError, AttributeError, RuntimeError) as exc:
        print(f"configure_core: {exc}", file=sys.stderr)
        return 1
    finally:
        if fpga is not None:
            close(fpga)
    return 0


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
