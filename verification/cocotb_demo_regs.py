"""cocotb side of `python -m casper400g_dev demo`: configure a core over AXI4-Lite, then dump it.

Reads its configuration from $CASPER400G_DEMO_CONFIG (JSON) and writes the dump to
$CASPER400G_JOB_OUT (JSON); the CLI prints it.
"""

from __future__ import annotations

import json
import logging
import os

import cocotb

from casperfpga_ext import addressing
from casperfpga_ext import fhg_regmap as regmap
from verification.regs_harness import RegsHarness


@cocotb.test()
async def configure_and_dump(dut) -> None:  # noqa: ANN001
    cfg = json.loads(os.environ["CASPER400G_DEMO_CONFIG"])
    h = RegsHarness(dut)
    h.axi.write_if.log.setLevel(logging.WARNING)
    h.axi.read_if.log.setLevel(logging.WARNING)
    await h.reset()
    # Status a running core would report.
    h.hw_in("buffer_sizes", "tx_kib").value = 36
    h.hw_in("buffer_sizes", "rx_kib").value = 64
    h.hw_in("ip_id", "next_id").value = 0

    mac = addressing.parse_mac(cfg["mac"])
    await h.write_reg("mac_hi", mac >> 32)
    await h.write_reg("mac_lo", mac & 0xFFFFFFFF)
    await h.write_reg("ip", addressing.parse_ip(cfg["ip"]))
    await h.write_reg("gateway", addressing.parse_ip(cfg["gateway"]))
    await h.write_reg("netmask", addressing.parse_netmask(cfg["netmask"]))
    await h.write_reg("port", addressing.parse_port(cfg["port"]))
    arp = regmap.REGIONS["arp_table"]
    for ip_text, mac_text in cfg["arp"].items():
        index = addressing.parse_ip(ip_text) & 0xFF
        entry_mac = addressing.parse_mac(mac_text)
        base = arp.offset + index * arp.entry_bytes
        await h.write32(base, (1 << 16) | (entry_mac >> 32))
        await h.write32(base + 4, entry_mac & 0xFFFFFFFF)
    await h.write_field("ctrl", "fabric_en", 1)

    registers = {}
    for reg in regmap.REGISTERS.values():
        registers[reg.name] = await h.read_reg(reg.name)
    entries = {}
    for index in range(arp.entries):
        base = arp.offset + index * arp.entry_bytes
        word0 = await h.read32(base)
        if word0 >> 16 & 1:
            entries[index] = [word0, await h.read32(base + 4)]
    core_view = {
        name: {str(k): v for k, v in model.words.items()} for name, model in h.regions.items()
    }
    out = {
        "registers": registers,
        "arp": entries,
        "core_ram_words": {n: len(w) for n, w in core_view.items()},
        "arp_ram": core_view["arp_table"],
        "axi_transactions": h.regions["arp_table"].writes + h.regions["arp_table"].reads,
    }
    with open(os.environ["CASPER400G_JOB_OUT"], "w") as fh:
        json.dump(out, fh)
