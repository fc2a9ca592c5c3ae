"""A casperfpga user's script for a 100GbE core, run unchanged against a 400GbE core.

Written against casperfpga's documented API only (``CasperFpga``, ``OneHundredGbe`` and
its ``TenGbe``/``Gbe`` bases, ``Register``, ``Mac``/``IpAddress``); the one line for
casper400g is ``import casperfpga_ext``, which registers the 400GbE core's class.

    python onehundredgbe_script.py HOST PORT FPG|- CONFIG_JSON

FPG ``-``: learn the running design from the server instead of programming. CONFIG_JSON
holds the addresses to configure. The last line printed is ``RESULT <json>``: what the
script read back, for the test to compare with the registers it reads independently.
"""

import json
import sys

import casperfpga
from casperfpga.network import IpAddress, Mac

import casperfpga_ext  # noqa: F401  (registers xps:fourhundred_gbe with casperfpga)


def main() -> None:
    host, port, fpg, cfg = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
    out = {}
    # timeout: seconds per KATCP request (casperfpga's default is 10).
    fpga = casperfpga.CasperFpga(
        host, port, transport=casperfpga.KatcpTransport, timeout=cfg.get("timeout", 10)
    )
    if fpg == "-":
        fpga.get_system_information()
    else:
        out["programmed"] = fpga.upload_to_ram_and_program(fpg)
    out["is_running"] = fpga.is_running()
    out["listdev"] = sorted(fpga.listdev())
    out["test_connection"] = fpga.test_connection()
    out["board_id"] = fpga.read_uint("sys_board_id")

    gbe = fpga.gbes[cfg["gbe"]]
    out["gbe_type"] = type(gbe).__name__
    out["gbe_repr"] = repr(gbe)
    gbe.configure_core(
        Mac(cfg["mac"]),
        IpAddress(cfg["ip"]),
        cfg["port"],
        IpAddress(cfg["gateway"]),
        IpAddress(cfg["netmask"]),
    )
    gbe.set_arp_table([Mac(m) for m in cfg["arp"]])  # entries 0..n-1, as casperfpga's
    gbe.set_single_arp_entry(cfg["single_arp"][0], Mac(cfg["single_arp"][1]).mac_int)
    out["arp"] = [m.mac_int for m in gbe.get_arp_details()]
    gbe.print_gbe_core_details(arp=True)

    details = gbe.get_gbe_core_details()
    out["details"] = {
        k: str(details[k]) for k in ("mac", "ip", "gateway_ip", "subnet_mask", "ip_prefix")
    }
    out["details"]["fabric_port"] = details["fabric_port"]
    out["details"]["fabric_en"] = bool(details["fabric_en"])
    out["mac"] = gbe.mac.mac_int
    out["ip_address"] = gbe.ip_address.ip_int
    out["port"] = gbe.port
    out["str"] = str(gbe)

    out["tx_counters"] = gbe.read_tx_counters()
    out["rx_counters"] = gbe.read_rx_counters()
    out["counters"] = gbe.read_counters()

    gbe.fabric_disable()
    out["fabric_en_after_disable"] = bool(gbe.get_gbe_core_details()["fabric_en"])
    gbe.fabric_enable()
    out["fabric_en_after_enable"] = bool(gbe.get_gbe_core_details()["fabric_en"])

    for name, value in cfg["registers"].items():
        fpga.write_int(name, value)
        out.setdefault("registers", {})[name] = fpga.read_uint(name)
        getattr(fpga.registers, name).write_int(value + 1)
        out.setdefault("register_objects", {})[name] = getattr(fpga.registers, name).read_uint()

    if cfg.get("estimate_clock", True):
        out["clock_mhz"] = fpga.estimate_fpga_clock()
    close(fpga)
    print("RESULT " + json.dumps(out))


def close(fpga: casperfpga.CasperFpga) -> None:
    """End katcp's I/O thread, which would keep the interpreter from exiting.

    casperfpga's ``disconnect()`` stops the client, then closes its stream from this
    thread while katcp's I/O thread may be doing it too (tornado then raises KeyError
    now and then); stopping and joining the client is its first, race-free half.
    """
    fpga.transport.stop()
    fpga.transport.join(10)


if __name__ == "__main__":
    main()
