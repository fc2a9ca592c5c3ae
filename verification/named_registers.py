"""What a casperfpga script reads by register name must be what the Gbe methods report.

``tests/data/named_registers_script.py`` prints views of a core: every ``<core>_*`` device
read by name (``names``), ``get_gbe_core_details()`` (``details``), ``read_counters()``
(``counters``) and the ``mac``/``ip_address``/``port`` properties. :func:`agree` checks
one view; the tests run the script against board-server (a file for the bus) and against
the simulated core.
"""

from __future__ import annotations

from typing import Any

from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.gbe import CASPER_COUNTERS

# casperfpga's counter names (Gbe.read_counters) and the 100GbE names of the same registers.
COUNTER_NAMES = {
    "txctr": "gmac_reg_tx_packet_count",
    "txvldctr": "gmac_reg_tx_valid_count",
    "txofctr": "gmac_reg_tx_overflow_count",
    "txfullctr": "gmac_reg_tx_almost_full_count",
    "rxctr": "gmac_reg_rx_packet_count",
    "rxvldctr": "gmac_reg_rx_valid_count",
    "rxofctr": "gmac_reg_rx_overflow_count",
    "rxbadctr": "gmac_reg_rx_bad_packet_count",
}


def counter_devices(core: str) -> set[str]:
    """The devices of the counters Gbe.read_counters() reports one by one: casperfpga's
    eight under their 100GbE names, the core's other TX/RX counters under their own
    (those only summed into txerrctr/rxerrctr left out)."""
    summed = {r for name in ("txerrctr", "rxerrctr") for r in CASPER_COUNTERS[name]}
    own = {r for r in regmap.COUNTERS if r[:3] in ("tx_", "rx_") and r not in summed}
    own -= {regmap.DEVICES[s].target for s in COUNTER_NAMES.values()}
    return {f"{core}_{s}" for s in COUNTER_NAMES.values()} | {f"{core}_{r}" for r in own}


def agree(core: str, view: dict[str, Any]) -> set[str]:
    """Assert that the registers read by name say what the Gbe methods report in one view
    of the script; returns the counters compared, by device name."""
    names, details, counters = view["names"], view["details"], view["counters"]

    def n(suffix: str) -> int:
        return names[f"{core}_{suffix}"]

    assert details["mac"] == n("gmac_reg_mac_address_h") << 32 | n("gmac_reg_mac_address_l")
    assert details["mac"] == view["mac"]
    assert details["ip"] == n("gmac_reg_local_ip_address") == view["ip_address"]
    assert details["gateway_ip"] == n("gmac_reg_gateway_ip_address")
    assert details["subnet_mask"] == n("gmac_reg_local_ip_netmask")
    assert details["fabric_port"] == n("gmac_reg_udp_port") == view["port"]
    assert details["fabric_en"] == bool(n("gmac_reg_core_ctrl") & 1)
    assert (details["mc_ip"], details["mc_mask"]) == (
        n("gmac_reg_multicast_ip_address"),
        n("gmac_reg_multicast_ip_mask"),
    )
    assert details["core_type"] == n("gmac_reg_core_type")
    compared = set()
    for short, suffix in COUNTER_NAMES.items():
        assert counters[f"{core}_{short}"] == n(suffix), short
        compared.add(f"{core}_{suffix}")
    # The core's other counters: read_counters() reports them under their device names.
    for name, value in counters.items():
        if name in names:
            assert value == names[name], name
            compared.add(name)
    assert compared == counter_devices(core)
    return compared
