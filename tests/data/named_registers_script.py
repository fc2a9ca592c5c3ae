"""A casperfpga user's script that reads and writes the core's registers by name.

What the CASPER 100GbE tutorial and users' scripts do: ``fpga.read_uint`` on
``<core>_gmac_reg_*`` devices (counters to measure rates, the MAC/IP/port registers "if
ever in doubt"), ``fpga.write_int`` on the configuration registers, beside the Gbe
object's methods. Written against casperfpga's documented API only; the one line for
casper400g is ``import casperfpga_ext``, which registers the 400GbE core's class.

    python named_registers_script.py HOST PORT FPG|- CONFIG_JSON

CONFIG_JSON: ``gbe`` (the core's name), ``writes`` ({device suffix: value} written with
``write_int`` after the first reads), ``count_reset`` (clear the counters by name at the
end), ``timeout``. The last line printed is ``RESULT <json>``: every value read, by name
and through the Gbe methods, for the test to compare.
"""

import json
import struct
import sys

import casperfpga

import casperfpga_ext  # noqa: F401  (registers xps:fourhundred_gbe with casperfpga)


def by_name(fpga: casperfpga.CasperFpga, core: str) -> dict:
    """Every device of the core read by name: 4-byte ones with read_uint, 8-byte counters
    as two words, low first (the order that reads them untorn); the regions are left out."""
    out = {}
    for dev in fpga.listdev():
        if not dev.startswith(core + "_"):
            continue
        size = fpga.memory_devices[dev].length_bytes
        if size == 4:
            out[dev] = fpga.read_uint(dev)
        elif size == 8:
            low, high = struct.unpack(">II", fpga.read(dev, 8))
            out[dev] = high << 32 | low
    return out


def gbe_view(gbe: object) -> dict:
    """What the Gbe methods report: the details (casperfpga's value objects as ints) and
    the counters."""
    d = gbe.get_gbe_core_details()
    return {
        "details": {
            "mac": d["mac"].mac_int,
            "ip": d["ip"].ip_int,
            "gateway_ip": d["gateway_ip"].ip_int,
            "subnet_mask": d["subnet_mask"].ip_int,
            "fabric_port": d["fabric_port"],
            "fabric_en": bool(d["fabric_en"]),
            "mc_ip": d["multicast"]["base_ip"].ip_int,
            "mc_mask": d["multicast"]["ip_mask"].ip_int,
            "core_type": d["core_type"],
        },
        "counters": gbe.read_counters(),
        "port": gbe.port,
        "mac": gbe.mac.mac_int,
        "ip_address": gbe.ip_address.ip_int,
    }


def main() -> None:
    host, port, fpg, cfg = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
    fpga = casperfpga.CasperFpga(
        host, port, transport=casperfpga.KatcpTransport, timeout=cfg.get("timeout", 10)
    )
    if fpg == "-":
        fpga.get_system_information()
    else:
        fpga.upload_to_ram_and_program(fpg)
    core = cfg["gbe"]
    gbe = fpga.gbes[core]
    out = {"listdev": sorted(fpga.listdev())}
    out["sizes"] = {n: d.length_bytes for n, d in fpga.memory_devices.items()}
    out["before"] = {"names": by_name(fpga, core), **gbe_view(gbe)}

    for suffix, value in cfg.get("writes", {}).items():
        fpga.write_int(f"{core}_{suffix}", value)  # casperfpga reads it back
    out["after_writes"] = {"names": by_name(fpga, core), **gbe_view(gbe)}

    try:
        fpga.read_uint(f"{core}_gmac_reg_bytes_rdy")
        out["absent_name"] = "read"
    except Exception as exc:  # casperfpga raises KatcpRequestFail; any error will do
        out["absent_name"] = str(exc)

    if cfg.get("count_reset"):
        reset = f"{core}_gmac_reg_count_reset"
        try:
            fpga.write_int(reset, 1)  # clears the counters, then the read-back differs
            out["count_reset_verified"] = "no error"
        except ValueError as exc:
            out["count_reset_verified"] = str(exc)
        fpga.write_int(reset, 1, blindwrite=True)
        out["after_reset"] = {"names": by_name(fpga, core), **gbe_view(gbe)}
    close(fpga)
    print("RESULT " + json.dumps(out))


def close(fpga: casperfpga.CasperFpga) -> None:
    """End katcp's I/O thread (see onehundredgbe_script.py)."""
    fpga.transport.stop()
    fpga.transport.join(10)


if __name__ == "__main__":
    main()
