"""MAC attachment ``vpk180_dcmac``: the 400GbE core on the VPK180's DCMAC + GTM quads.

For the block's cage (``fourhundred_gbe.cages.<port>`` of platforms/vpk180.yaml) it

* creates the DCMAC/GTM block design with ``vpk180_ip.dcmac_gtm_tcl`` (cage
  -> lane map, DCMAC site, refclk; the block's MAC clock; the platform's register clock);
* instantiates ``fhg_dcmac_vpk180`` (the block design + ``fhg_link_bringup``) and joins it to
  ``fhg_core``: client ports ``tx_axis_*``/``rx_axis_*``, every ``link_*`` port and
  ``gt_powergood`` by name, ``mac_clk`` -> ``tx_mac_clk``/``rx_mac_clk``, ``mac_rst`` ->
  ``tx_mac_rst``/``rx_mac_rst``, ``link_up`` -> ``mac_link_up``; a core port with no
  counterpart is an error naming it, so a new core port cannot be left unconnected;
* makes the refclk and GT serial pins top-level ports ``fhg<cage>_gt_refclk_p/n``,
  ``fhg<cage>_gtm_q<q>_{rx,tx}_{p,n}`` and constrains them from the platform's pin groups
  (``refclk_pin``, ``quad_pins``, optional ``quad_sites``).

One DCMAC per design: ``fhg_dcmac_vpk180`` instantiates the block design by its fixed name.
"""

from __future__ import annotations

import os
import re
from typing import Any

from constraints import ClockConstraint, RawConstraint

from . import vpk180_ip
from .fhg_platform import instantiated_modules
from .fourhundred_gbe import MacAttachment
from .fourhundred_gbe_hdl import module_ports

WRAPPER_HDL = "fourhundred_gbe/link/fhg_dcmac_vpk180.v"
WRAPPER = "fhg_dcmac_vpk180"
# fhg_core port -> fhg_dcmac_vpk180 port, where the names differ.
RENAMED = {
    "tx_mac_clk": "mac_clk",
    "rx_mac_clk": "mac_clk",
    "tx_mac_rst": "mac_rst",
    "rx_mac_rst": "mac_rst",
    "mac_link_up": "link_up",
}
# Wrapper ports the attachment drives itself (not fhg_core's).
OWN = {"axil_clk", "axil_rst_n"}
NUM_QUADS = 2


class vpk180_dcmac(MacAttachment):
    def __init__(self, gbe: Any, conf: dict[str, Any]) -> None:
        super().__init__(gbe, conf)
        self.prefix = f"fhg{gbe.port}_"

    def _error(self, message: str) -> ValueError:
        return self.gbe._error(f"vpk180_dcmac: {message}")

    def sources(self) -> list[str]:
        return [WRAPPER_HDL, "fourhundred_gbe/cdc/fhg_sync_bits.sv"]

    # ------------------------------------------------------------------ parameters
    def params(self) -> Any:
        """``vpk180_ip.DcmacGtmParams`` of this block's cage."""
        ip = vpk180_ip
        cage = self.gbe.cage
        try:
            lane_map = tuple(tuple(int(x) for x in pair) for pair in cage.get("lane_map") or ())
        except (TypeError, ValueError):
            raise self._error(f"cage {self.gbe.port}: lane_map {cage.get('lane_map')!r}") from None
        kwargs: dict[str, Any] = {
            "refclk_mhz": float(cage.get("refclk_mhz", 156.25)),
            "axis_clk_mhz": float(self.gbe.mac_clk_mhz),
            "axil_clk_mhz": float(self.gbe.platform.conf.get("axil_clk_mhz", 100.0)),
            "dcmac_location": str(cage.get("dcmac_location") or ""),
            "rx_strip_fcs": bool(cage.get("rx_strip_fcs", True)),
        }
        if lane_map:
            kwargs["lane_map"] = lane_map
        try:
            return ip.DcmacGtmParams(**kwargs)
        except ValueError as exc:
            raise self._error(f"cage {self.gbe.port}: {exc}") from None

    def drc(self) -> None:
        # Everything the attachment reads from the cage, checked before anything is built.
        self.params()
        self.gen_constraints()

    def _pin_group(self, key: str, group: str) -> list[str]:
        pins = self.gbe.platform.conf.get("pins") or {}
        if group not in pins:
            raise self._error(
                f"cage {self.gbe.port}: {key} names pin group {group!r}, which platform "
                f"{self.gbe.platform.name} does not have"
            )
        loc = pins[group].get("loc") or []
        return list(loc) if isinstance(loc, list) else [loc]

    # ------------------------------------------------------------------ top level
    def modify_top(self, top: Any, core: Any, mac_ports: dict[str, tuple[str, int]]) -> None:
        if WRAPPER in instantiated_modules(top):
            raise self._error(
                "a second 400GbE block on the VPK180: the DCMAC block design exists once per "
                "design (fhg_dcmac_vpk180 instantiates it by name)"
            )
        p = self.params()  # checks the cage's values before anything is wired
        path = os.path.join(self.gbe.hdl_root or ".", WRAPPER_HDL)
        wports = module_ports(path, WRAPPER)
        name = f"{self.gbe.fullname}_dcmac"
        mac = top.get_instance(WRAPPER, name)
        mac.add_parameter("AXIL_CLK_HZ", round(p.axil_clk_mhz * 1e6))
        mac.add_port("axil_clk", "axil_clk", parent_sig=False)
        mac.add_port("axil_rst_n", "axil_rst_n", parent_sig=False)
        joined: set[str] = set(OWN)
        for port, (direction, width) in mac_ports.items():
            wport = RENAMED.get(port, port)
            if wport not in wports:
                raise self._error(f"fhg_core port {port} has no counterpart on {WRAPPER}")
            wdir, wwidth = wports[wport]
            if wwidth != width or wdir == direction:
                raise self._error(
                    f"fhg_core port {port} ({direction}, {width} bits) does not fit {WRAPPER} "
                    f"port {wport} ({wdir}, {wwidth} bits)"
                )
            sig = f"{self.gbe.fullname}_{wport}"
            core.add_port(port, sig, width=width)
            if wport not in joined:
                mac.add_port(wport, sig, width=width)
                joined.add(wport)
        # What is left are the board pins: top-level ports.
        for wport, (wdir, wwidth) in wports.items():
            if wport in joined:
                continue
            if wport.startswith(("gt_refclk_", "gtm_q")):
                mac.add_port(wport, self.prefix + wport, dir=wdir, width=wwidth, parent_port=True)
            elif wdir == "out":
                # Status fhg_core does not take (e.g. rx_preambleout_0): left for a debugger.
                mac.add_port(wport, f"unused_{self.gbe.fullname}_{wport}", width=wwidth)
            else:
                raise self._error(f"{WRAPPER} input {wport} would be driven by nothing")

    def mac_clocks(self) -> list[str]:
        # The DCMAC clocks are derived from the refclk inside the block design.
        return [self.prefix + "gt_refclk"]

    def gen_constraints(self) -> list[Any]:
        p = self.params()
        cage = self.gbe.cage
        cons: list[Any] = [
            ClockConstraint(self.prefix + "gt_refclk_p", self.prefix + "gt_refclk", p.refclk_mhz)
        ]
        if cage.get("refclk_pin"):
            locs = self._pin_group("refclk_pin", cage["refclk_pin"])
            if len(locs) != 1:
                raise self._error(f"refclk pin group {cage['refclk_pin']} has {len(locs)} pins")
            cons.append(
                RawConstraint(
                    f"set_property PACKAGE_PIN {locs[0]} [get_ports {{{self.prefix}gt_refclk_p}}]"
                )
            )
        quads = cage.get("quad_pins") or []
        if quads and len(quads) != NUM_QUADS:
            raise self._error(f"cage {self.gbe.port}: quad_pins lists {len(quads)} quads, not 2")
        for q, groups in enumerate(quads):
            for d in ("rx", "tx"):
                key = f"{d}_p"
                if key not in groups:
                    continue
                locs = self._pin_group(f"quad_pins[{q}].{key}", groups[key])
                if len(locs) != 4:
                    raise self._error(f"pin group {groups[key]} has {len(locs)} pins, not 4")
                for ch, loc in enumerate(locs):
                    cons.append(
                        RawConstraint(
                            f"set_property PACKAGE_PIN {loc} "
                            f"[get_ports {{{self.prefix}gtm_q{q}_{d}_p[{ch}]}}]"
                        )
                    )
        sites = cage.get("quad_sites") or []
        if sites and len(sites) != NUM_QUADS:
            raise self._error(f"cage {self.gbe.port}: quad_sites lists {len(sites)}, not 2")
        ip = vpk180_ip
        for q, site in enumerate(sites):
            if not re.fullmatch(r"GTM_QUAD_X\d+Y\d+", str(site)):
                raise self._error(f"quad_sites[{q}] {site!r} is not GTM_QUAD_X<n>Y<n>")
            cell = f"{self.gbe.fullname}_dcmac/u_bd/*/{ip.QUAD_CELLS[q]}/*"
            cons.append(
                RawConstraint(
                    f"set_property LOC {site} [get_cells -hierarchical -filter "
                    f'{{NAME =~ "{cell}" && REF_NAME =~ "GTM_QUAD*"}}]'
                )
            )
        return cons

    def gen_tcl_cmds(self) -> dict[str, list[str]]:
        p = self.params()
        return {"init": vpk180_ip.dcmac_gtm_tcl(p).splitlines()}

    def lint_stubs(self) -> dict[str, str]:
        p = self.params()
        return {f"{p.bd_name}_wrapper.v": vpk180_ip.bd_wrapper_stub(p)}
