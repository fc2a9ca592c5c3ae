"""MAC attachment ``vpk180_dcmac``: the 400GbE core on the VPK180's DCMAC + GTM quads.

For the block's cage (``fourhundred_gbe.cages.<port>`` of platforms/vpk180.yaml) it

* creates the cage's own DCMAC/GTM block design ``fhg_dcmac_bd_c<cage>`` with
  ``vpk180_ip.dcmac_gtm_tcl`` (cage -> lane map, DCMAC site, refclk; the block's MAC clock;
  the platform's register clock), so every 400GbE block of a design has a DCMAC, quads,
  clocking and resets of its own;
* instantiates that design's wrapper (``<fullname>_dcmac_bd``) and ``fhg_dcmac_vpk180``
  (``<fullname>_dcmac``: bring-up sequencer and MAC reset) and joins the three by port
  name: fhg_core's client ports ``tx_axis_*``/``rx_axis_*`` to the block design's, every
  ``link_*`` port and ``gt_powergood`` to the link control's; ``tx_mac_clk``/``rx_mac_clk``
  <- the design's ``axis_clk`` (also the link control's ``mac_clk``), ``mac_rst`` ->
  ``tx_mac_rst``/``rx_mac_rst``, ``link_up`` -> ``mac_link_up``; the link control's
  block-design side (``s_axi_*``, resets, loopback, GT reset handshakes) to the design's
  ports of the same names. A core or block-design port with no counterpart is an error
  naming it, so a new port cannot be left unconnected;
* makes the refclk and GT serial pins top-level ports ``fhg<cage>_gt_refclk_p/n``,
  ``fhg<cage>_gtm_q<q>_{rx,tx}_{p,n}`` and constrains them from the platform's pin groups
  (``refclk_pin``, ``quad_pins``, optional ``quad_sites``);
* claims the cage's exclusive resources (``exc_requires``): the cage, and its DCMAC site,
  GTM quad sites and refclk pin group where the platform names them, which the platform
  block provides (vpk180.py) — so two blocks on one DCMAC, quad or reference clock fail the
  design rule check, which names both blocks (``casper400g build``) or the second one
  (mlib_devel).
"""

from __future__ import annotations

import os
import re
from typing import Any

from constraints import ClockConstraint, RawConstraint

from . import vpk180_ip
from .fourhundred_gbe import MacAttachment
from .fourhundred_gbe_hdl import module_ports

WRAPPER_HDL = "fourhundred_gbe/link/fhg_dcmac_vpk180.v"
WRAPPER = "fhg_dcmac_vpk180"
# fhg_core port -> fhg_dcmac_vpk180 port, where the names differ.
RENAMED = {
    "tx_mac_rst": "mac_rst",
    "rx_mac_rst": "mac_rst",
    "mac_link_up": "link_up",
}
# fhg_core's MAC clock inputs: the block design's axis_clk.
MAC_CLOCKS = ("tx_mac_clk", "rx_mac_clk")
BD_CLOCK = "axis_clk"
# Link-control and block-design ports the attachment drives itself.
OWN = {"axil_clk", "axil_rst_n", "mac_clk"}
BD_OWN = {
    "s_axi_aclk": "axil_clk",
    "s_axi_aresetn": "axil_rst_n",
    # The standard preamble: the DCMAC uses this input only with a custom preamble enabled,
    # which fhg_link_bringup does not enable.
    "tx_preamblein_0": "56'h55555555555555",
}
NUM_QUADS = 2


def bd_name(cage: int) -> str:
    """The block design of cage ``cage`` (one per cage: module names must differ)."""
    return f"{vpk180_ip.BD_NAME}_c{cage}"


def board_pin(port: str) -> str | None:
    """The top-level port (without the cage prefix) a block design pin becomes, or None."""
    m = re.fullmatch(r"gt_refclk_clk_([pn])", port)
    if m:
        return f"gt_refclk_{m.group(1)}"
    m = re.fullmatch(r"gtm_serial_(\d)_g(rx|tx)_([pn])", port)
    if m:
        return f"gtm_q{m.group(1)}_{m.group(2)}_{m.group(3)}"
    return None


class vpk180_dcmac(MacAttachment):
    def __init__(self, gbe: Any, conf: dict[str, Any]) -> None:
        super().__init__(gbe, conf)
        self.prefix = f"fhg{gbe.port}_"
        # The cage's DCMAC, quads and refclk are this block's alone (the platform block
        # provides them); the block's own exc_requires names the cage.
        for res in vpk180_ip.cage_resources(gbe.port, gbe.cage)[1:]:
            if res not in gbe.exc_requires:
                gbe.exc_requires.append(res)

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
            "bd_name": bd_name(self.gbe.port),
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
        p = self.params()  # checks the cage's values before anything is wired
        path = os.path.join(self.gbe.hdl_root or ".", WRAPPER_HDL)
        lports = module_ports(path, WRAPPER)
        bports = {
            port.name: ("in" if port.direction == "I" else "out", port.width)
            for port in vpk180_ip.bd_wrapper_ports(p)
        }
        name = self.gbe.fullname
        link = top.get_instance(WRAPPER, f"{name}_dcmac")
        bd = top.get_instance(f"{p.bd_name}_wrapper", f"{name}_dcmac_bd")
        link.add_parameter("AXIL_CLK_HZ", round(p.axil_clk_mhz * 1e6))
        link.add_port("axil_clk", "axil_clk", parent_sig=False)
        link.add_port("axil_rst_n", "axil_rst_n", parent_sig=False)
        for port, value in BD_OWN.items():
            bd.add_port(port, value, parent_sig=False)
        mac_clk = f"{name}_mac_clk"
        bd.add_port(BD_CLOCK, mac_clk, width=1)
        link.add_port("mac_clk", mac_clk, parent_sig=False)
        l_joined: set[str] = set(OWN)
        b_joined: set[str] = {*BD_OWN, BD_CLOCK}
        for port, (direction, width) in mac_ports.items():
            if port in MAC_CLOCKS:
                if direction != "in" or width != 1:
                    raise self._error(f"fhg_core port {port} is not a clock input")
                core.add_port(port, mac_clk, parent_sig=False)
                continue
            lport = RENAMED.get(port, port)
            if lport in lports:
                inst, other, joined, theirs = link, lports[lport], l_joined, WRAPPER
            elif port in bports:
                lport = port
                inst, other, joined, theirs = bd, bports[port], b_joined, f"{p.bd_name}_wrapper"
            else:
                raise self._error(
                    f"fhg_core port {port} has no counterpart on {WRAPPER} or the block design "
                    f"{p.bd_name}"
                )
            self._check_fit(f"fhg_core port {port}", (direction, width), theirs, lport, other)
            sig = f"{name}_{lport}"
            core.add_port(port, sig, width=width)
            if lport not in joined:
                inst.add_port(lport, sig, width=width)
                joined.add(lport)
        # The link control's block-design side: the block design's ports of the same names.
        for lport, (ldir, lwidth) in lports.items():
            if lport in l_joined:
                continue
            if lport not in bports:
                if ldir == "out":
                    link.add_port(lport, f"unused_{name}_{lport}", width=lwidth)
                    continue
                raise self._error(f"{WRAPPER} input {lport} would be driven by nothing")
            self._check_fit(f"{WRAPPER} port {lport}", (ldir, lwidth), "the block design",
                            lport, bports[lport])  # fmt: skip
            sig = f"{name}_bd_{lport}"
            link.add_port(lport, sig, width=lwidth)
            bd.add_port(lport, sig, width=lwidth)
            l_joined.add(lport)
            b_joined.add(lport)
        # What is left of the block design are the board pins: top-level ports.
        for bport, (bdir, bwidth) in bports.items():
            if bport in b_joined:
                continue
            pin = board_pin(bport)
            if pin is not None:
                bd.add_port(bport, self.prefix + pin, dir=bdir, width=bwidth, parent_port=True)
            elif bdir == "out":
                # Status nothing takes (e.g. rx_preambleout_0): left for a debugger.
                bd.add_port(bport, f"unused_{name}_{bport}", width=bwidth)
            else:
                raise self._error(f"block design input {bport} would be driven by nothing")

    def _check_fit(
        self, what: str, mine: tuple[str, int], theirs: str, port: str, other: tuple[str, int]
    ) -> None:
        if other[1] != mine[1] or other[0] == mine[0]:
            raise self._error(
                f"{what} ({mine[0]}, {mine[1]} bits) does not fit {theirs} port {port} "
                f"({other[0]}, {other[1]} bits)"
            )

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
            cell = f"{self.gbe.fullname}_dcmac_bd/*/{ip.QUAD_CELLS[q]}/*"
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
