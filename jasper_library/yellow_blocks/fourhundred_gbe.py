"""``xps:fourhundred_gbe``: the casper400g 400GbE UDP/IPv4 core as a yellow block.

* User ports (docs/design/core.md §1) are the gateways ``<fullname>_<port>`` (``USER_PORTS``).
* Mask parameters (``PARAMETERS``) become the start-up configuration: ``fhg_gbe_boot``
  writes FABRIC_MAC/IP/GATEWAY/NETMASK/PORT/TTL/CTRL into the core's registers after
  reset and enables the fabric when ``fab_en`` is set. Register offsets come from the
  generated register map.
* Software sees the core as the device ``<unique_name>`` and each of its registers and
  regions as ``<unique_name>_<name>`` (``named_registers``: the 100GbE block's
  ``gmac_reg_*`` names at 0x00-0x78, the register map's own names above; docs/registers.md
  lists them), in core_info.tab, memory_map.json and the .fpg; the core's register block
  serves them all, nothing is added to the design for them.
* ``port`` is the QSFP-DD cage. The platform YAML's ``fourhundred_gbe`` section lists the
  cages and names the MAC attachment that joins the core's DCMAC-side ports to a MAC:
  ``external`` (this file: those ports become top-level ports ``fhg<cage>_<port>`` for a
  testbench or a separately built MAC) or a module ``yellow_blocks/<name>.py`` with a class
  ``<name>`` derived from :class:`MacAttachment` (e.g. a DCMAC/GTM generator for a board).
"""

from __future__ import annotations

import abc
import ipaddress
import json
import os
import re
from collections.abc import Iterable
from typing import Any, ClassVar

from constraints import ClockConstraint, PortConstraint
from memory import Register

# Generated from the register map's SystemRDL (`python -m casper400g_dev regs`), as
# casperfpga_ext's copy.
from . import fourhundred_gbe_addressing as addressing
from . import fourhundred_gbe_regmap as regmap
from .fhg_axi4lite import ADDRESS_SIGNALS, AXIL_SIGNALS, PROT_SIGNALS, RAW_DEVICE_SIGNALS
from .fhg_platform import clock_groups
from .fourhundred_gbe_hdl import CORE_FILE_LIST, file_list, module_ports
from .yellow_block import YellowBlock
from .yellow_block_typecodes import TYPECODE_ETHCORE

# 400 Gb/s carried 1024 bits per user_clk cycle.
MIN_USER_CLK_MHZ = 400e3 / 1024
DEFAULT_MAC_CLK_MHZ = 391.03
CORE_HDL = "fourhundred_gbe/fhg_core.sv"

# --- the block's interface, from the one description the Simulink block shares ---
# fourhundred_gbe.json (next to this file; the overlay installer copies it) lists the user
# ports (docs/design/core.md §1, direction seen from the block) and the mask parameters with their
# kinds, ranges, defaults and prompts; xps_library/fourhundred_gbe_interface.m is its
# generated copy (`python -m casper400g_dev simulink-gen`).
INTERFACE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fourhundred_gbe.json")
with open(INTERFACE_FILE, encoding="utf-8") as _f:
    INTERFACE: dict[str, Any] = json.load(_f)
USER_PORTS: tuple[tuple[str, str, int], ...] = tuple(
    (p["name"], p["dir"], int(p["width"])) for p in INTERFACE["ports"]
)
PARAMETER_SPECS: dict[str, dict[str, Any]] = {p["name"]: p for p in INTERFACE["parameters"]}
# scope "mask": the Simulink mask's debug counters (software registers it draws inside the
# block, which reach jasper.per as sw_reg blocks of their own); not the core's parameters.
CORE_PARAMETERS = [n for n, p in PARAMETER_SPECS.items() if p.get("scope") != "mask"]
# --- end of the interface description ---
BUS_PORTS = ("user_clk", "axil_clk", "axil_rst_n")


def _text(value: Any) -> str:
    """A mask value as text: whitespace and one pair of MATLAB quotes ('10.0.0.1') removed."""
    text = str(value).strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        text = text[1:-1].strip()
    return text


def _int_text(text: str) -> int | None:
    """Decimal or 0x-hex integer text (the forms the Simulink mask accepts too)."""
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text, 10)
    if re.fullmatch(r"0[xX][0-9A-Fa-f]+", text):
        return int(text, 16)
    return None


def parse_mac(value: Any, what: str = "MAC") -> int:
    """A MAC as an integer, in any form the project's one parser reads (``addressing``:
    'aa:bb:cc:dd:ee:ff', 'aa-bb-..', '0x..', decimal, ``hex2dec('02000a00000a')``)."""
    try:
        return addressing.parse_mac(value)
    except addressing.AddressError as exc:
        why = "does not fit 48 bits" if exc.kind == "range" else "is not a MAC address"
        raise ValueError(f"{what} {value!r} {why}") from None


def parse_ipv4(value: Any, what: str = "IP") -> int:
    try:
        return addressing.parse_ip(value)
    except addressing.AddressError:
        raise ValueError(f"{what} {value!r} is not an IPv4 address") from None


def _int(value: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} {value!r} is not an integer")
    v = value if isinstance(value, int) else _int_text(_text(value))
    if v is None:
        raise ValueError(f"{what} {value!r} is not an integer")
    if not lo <= v <= hi:
        raise ValueError(f"{what} {v} is outside {lo}..{hi}")
    return v


def _flag(value: Any, what: str) -> bool:
    text = _text(value).lower()
    if text in ("1", "true", "on", "yes"):
        return True
    if text in ("0", "false", "off", "no", ""):
        return False
    raise ValueError(f"{what} {value!r} is not a flag (0/1, on/off)")


def check_parameter(name: str, value: Any) -> int | bool:
    """One mask parameter checked against its description; its value as a number.

    The Simulink mask (xps_library/fourhundred_gbe_check_param.m) applies the same rules to
    the same description; tests/data/fourhundred_gbe_cases.json holds the cases both
    are tested on.
    """
    spec = PARAMETER_SPECS.get(name)
    if spec is None:
        raise ValueError(f"unknown parameter {name!r}; known: {', '.join(PARAMETER_SPECS)}")
    kind = spec["kind"]
    if kind == "int":
        return _int(value, name, int(spec["min"]), int(spec["max"]))
    if kind == "flag":
        return _flag(value, name)
    if kind == "mac":
        mac = parse_mac(value, name)
        if mac >> 40 & 1:
            raise ValueError(f"{name} {value!r} is a multicast address")
        return mac
    ip = parse_ipv4(value, name)
    if kind == "host_ip" and (ipaddress.IPv4Address(ip).is_multicast or ip == 0xFFFFFFFF):
        raise ValueError(f"{name} {value!r} cannot be a host's own address")
    if kind == "netmask":
        inv = ~ip & 0xFFFFFFFF
        if inv & (inv + 1):
            raise ValueError(f"{name} {value!r} is not a contiguous mask")
    return ip


def named_registers(devices: Iterable[Any]) -> list[Register]:
    """The core's registers and regions as jasper Registers under the names software
    reads them by (``regmap.DEVICES``: the 100GbE's ``gmac_reg_*`` names where the core has
    that register, its own names otherwise): the toolflow lists each as the device
    ``<block>_<name>``. They describe the core's own register block; nothing is generated
    for them."""
    out = []
    for d in devices:
        if d.ram:
            # nbytes too: mlib_devel's Register keeps nbytes, not ram_size, for core_info.
            reg = Register(
                d.name,
                nbytes=d.nbytes,
                offset=d.offset,
                mode=d.mode,
                ram=True,
                ram_size=d.nbytes,
                data_width=8 * regmap.WORD_BYTES,
            )
        else:
            reg = Register(
                d.name, nbytes=d.nbytes, offset=d.offset, mode=d.mode, default_val=d.reset
            )
        out.append(reg)
    return out


class GbeError(ValueError):
    """The block's parameters or platform are invalid; names the block and the value."""


class MacAttachment(abc.ABC):
    """Joins the core's DCMAC-side ports to a MAC (see the module docstring). Subclasses
    must provide modify_top; the other hooks default to adding nothing."""

    def __init__(self, gbe: fourhundred_gbe, conf: dict[str, Any]) -> None:
        self.gbe = gbe
        self.conf = conf

    def sources(self) -> list[str]:
        return []

    @abc.abstractmethod
    def modify_top(self, top: Any, core: Any, mac_ports: dict[str, tuple[str, int]]) -> None:
        """Instantiate the MAC in `top` and join it to `core`'s DCMAC-side ports."""

    def gen_constraints(self) -> list[Any]:
        return []

    def gen_tcl_cmds(self) -> dict[str, list[str]]:
        return {}

    def mac_clocks(self) -> list[str]:
        """Names of the clocks (as constrained) that run the core's MAC side."""
        return []

    def lint_stubs(self) -> dict[str, str]:
        """{file name: Verilog}: port-only modules of the vendor IP it instantiates."""
        return {}

    def drc(self) -> None:  # noqa: B027 - optional hook, nothing to check by default
        """Check the attachment's platform values (cage pins, sites); raise ValueError."""


class ExternalMac(MacAttachment):
    """The DCMAC client ports become top-level ports ``fhg<cage>_<port>``: for simulation
    (the testbench plays the DCMAC) or a MAC built outside this design."""

    def prefix(self) -> str:
        return f"fhg{self.gbe.port}_"

    def modify_top(self, top: Any, core: Any, mac_ports: dict[str, tuple[str, int]]) -> None:
        for name, (direction, width) in mac_ports.items():
            core.add_port(name, self.prefix() + name, dir=direction, width=width, parent_port=True)

    def mac_clocks(self) -> list[str]:
        return [self.prefix() + p for p in ("tx_mac_clk", "rx_mac_clk") if p in self.gbe.mac_ports]

    def gen_constraints(self) -> list[Any]:
        mhz = self.gbe.mac_clk_mhz
        return [ClockConstraint(clk, clk, freq=mhz) for clk in self.mac_clocks()]


class fourhundred_gbe(YellowBlock):
    PARAMETERS: ClassVar[dict[str, Any]] = {
        name: PARAMETER_SPECS[name]["default"] for name in CORE_PARAMETERS
    }

    def _error(self, message: str) -> ValueError:
        # Only mlib_devel's YellowBlock API is used here, so the file runs in either.
        return GbeError(f"{self.fullpath} (xps:fourhundred_gbe): {message}")

    def initialize(self) -> None:
        self.typecode = TYPECODE_ETHCORE
        params = dict(self.PARAMETERS)
        params.update({k: v for k, v in self.blk.items() if k in self.PARAMETERS})
        self.params = params
        self.memory_map = named_registers(regmap.DEVICES.values())
        self.bus_device: Any = None  # the AXI4-Lite device modify_top adds
        hdl_root = self.hdl_root or "."
        for src in file_list(os.path.join(hdl_root, CORE_FILE_LIST)):
            self.add_source(os.path.relpath(src, hdl_root))
        self.provides = ["ethernet"]
        # Parameters are normalised here, where every runtime builds the block (mlib_devel
        # never calls drc()): the mask's text becomes numbers, or a clear error.
        try:
            for name in CORE_PARAMETERS:
                setattr(self, name, check_parameter(name, params[name]))
        except ValueError as exc:
            raise self._error(str(exc)) from None
        self.port = int(self.port)
        # The cage, as the platform YAML provides it (mlib_devel names cages qsfp<n>).
        self.exc_requires = [f"qsfpdd{self.port}"]
        self.conf: dict[str, Any] = dict(self.platform.conf.get("fourhundred_gbe") or {})
        self.cage: dict[str, Any] = dict((self.conf.get("cages") or {}).get(self.port) or {})
        self.mac_clk_mhz = float(self.conf.get("mac_clk_mhz", DEFAULT_MAC_CLK_MHZ))
        core_path = os.path.join(self.hdl_root or ".", CORE_HDL)
        self.core_ports = module_ports(core_path, "fhg_core")
        user = {p for p, _d, _w in USER_PORTS}
        self.mac_ports = {
            name: dw
            for name, dw in self.core_ports.items()
            if name not in user and name not in BUS_PORTS and not name.startswith("s_axil_")
        }
        self.mac = self._attachment()
        for src in self.mac.sources():
            self.add_source(src)
        self._check_platform()

    # ------------------------------------------------------------------ parameters
    def _attachment(self) -> MacAttachment:
        kind = self.conf.get("mac", "external")
        if kind == "external":
            return ExternalMac(self, self.conf)
        import importlib

        try:
            module = importlib.import_module(f"{__package__}.{kind}")
        except ModuleNotFoundError:
            raise self._error(
                f"platform {self.platform.name}: MAC attachment {kind!r} not found "
                f"(expected yellow_blocks/{kind}.py)"
            ) from None
        return getattr(module, kind)(self, self.conf)

    def drc(self) -> None:
        self._check_platform()
        self._check_clock()

    def _check_platform(self) -> None:
        """The cage and the MAC attachment's values (run from initialize: mlib_devel calls
        no drc())."""
        p = self.params
        cages = self.conf.get("cages") or {}
        if not cages:
            raise self._error(
                f"platform {self.platform.name} has no QSFP-DD cages for 400GbE "
                f"(no fourhundred_gbe.cages in {getattr(self.platform, 'path', 'its YAML')})"
            )
        if self.port not in cages:
            raise self._error(
                f"port (QSFP-DD cage) {p['port']!r} is not on platform {self.platform.name}; "
                f"cages: {', '.join(str(c) for c in sorted(cages))}"
            )
        missing = [p for p, _d, _w in USER_PORTS if p not in self.core_ports]
        if missing:
            raise self._error(f"{CORE_HDL} lacks the user port(s) {', '.join(missing)}")
        self.mac.drc()

    def _check_clock(self) -> None:
        """The design clock (run from modify_top too: in mlib_devel the XSG block sets the
        platform's user_clk_rate in its own initialize, which may come after ours)."""
        user_mhz = getattr(self.platform, "user_clk_rate", None)
        if user_mhz is not None and float(user_mhz) < MIN_USER_CLK_MHZ:
            raise self._error(
                f"user clock {float(user_mhz):g} MHz is too slow for 400 Gb/s at 1024 bits per "
                f"cycle (needs at least {MIN_USER_CLK_MHZ:g} MHz)"
            )

    def gateways(self) -> list[tuple[str, str, int]]:
        return list(USER_PORTS)

    # ------------------------------------------------------------------ top level
    def _ctrl_word(self) -> tuple[int, int]:
        ctrl = regmap.REGISTERS["ctrl"]
        value = ctrl.reset
        for name, on in (
            ("cpu_rx_en", self.cpu_rx_en),
            ("cpu_tx_en", self.cpu_tx_en),
            ("udp_checksum_en", self.udp_checksum_en),
            ("promisc_en", self.promisc_mode),
            ("fabric_en", False),
        ):
            value = ctrl.field(name).put(value, int(on))
        return value, ctrl.field("fabric_en").mask

    def modify_top(self, top) -> None:  # noqa: ANN001
        self._check_clock()
        # A raw AXI4-Lite slave: the core has its own register block. The interconnect
        # turns every entry of a raw device's map into a bus of its own, so the map is
        # the one raw entry named after the device; finalize_top names the registers.
        self.bus_device = top.add_axi4lite_interface(
            regname=self.unique_name,
            mode="rw",
            nbytes=regmap.BLOCK_SIZE,
            memory_map=[
                Register(
                    self.unique_name,
                    nbytes=regmap.BLOCK_SIZE,
                    offset=0,
                    mode="rw",
                    axi4lite_mode="raw",
                )
            ],
            typecode=self.typecode,
            axi4lite_mode="raw",
        )
        if self.bus_device is None:  # mlib_devel ignores a second device of the same name
            raise self._error(f"a memory-mapped device is already called {self.unique_name!r}")
        aw = (regmap.BLOCK_SIZE - 1).bit_length()
        core_aw = self.core_ports["s_axil_awaddr"][1]
        if core_aw != aw:
            raise self._error(f"fhg_core has {core_aw} address bits, the register map {aw}")
        regs = regmap.REGISTERS
        for name, field, width in (
            ("mac_hi", "mac", 16),
            ("mac_lo", "mac", 32),
            ("ip", "ip", 32),
            ("gateway", "ip", 32),
            ("netmask", "mask", 32),
            ("port", "port", 16),
            ("ttl", "ttl", 8),
        ):
            f = regs[name].field(field)
            if f.lsb != 0 or f.width != width:
                raise self._error(f"register map: {name}.{field} is not bits [{width - 1}:0]")
        ctrl_value, ctrl_en = self._ctrl_word()

        boot = top.get_instance("fhg_gbe_boot", f"{self.fullname}_boot")
        for k, v in (
            ("ADDR_W", aw),
            ("FABRIC_MAC", f"48'h{self.fab_mac:012x}"),
            ("FABRIC_IP", f"32'h{self.fab_ip:08x}"),
            ("FABRIC_GATEWAY", f"32'h{self.fab_gate:08x}"),
            ("FABRIC_NETMASK", f"32'h{self.fab_netmask:08x}"),
            ("FABRIC_PORT", f"16'h{self.fab_udp:04x}"),
            ("FABRIC_TTL", f"8'd{self.ttl}"),
            ("FABRIC_CTRL", f"32'h{ctrl_value:08x}"),
            ("FABRIC_ENABLE_ON_START", "1'b1" if self.fab_en else "1'b0"),
            ("CTRL_FABRIC_EN", f"32'h{ctrl_en:08x}"),
            ("REG_MAC_HI", f"'h{regs['mac_hi'].offset:x}"),
            ("REG_MAC_LO", f"'h{regs['mac_lo'].offset:x}"),
            ("REG_IP", f"'h{regs['ip'].offset:x}"),
            ("REG_GATEWAY", f"'h{regs['gateway'].offset:x}"),
            ("REG_NETMASK", f"'h{regs['netmask'].offset:x}"),
            ("REG_PORT", f"'h{regs['port'].offset:x}"),
            ("REG_TTL", f"'h{regs['ttl'].offset:x}"),
            ("REG_CTRL", f"'h{regs['ctrl'].offset:x}"),
        ):
            boot.add_parameter(k, v)
        boot.add_port("clk", "axil_clk", parent_sig=False)
        boot.add_port("rst_n", "axil_rst_n", parent_sig=False)
        # Status for a logic analyser; software sees the registers themselves.
        boot.add_port("booted", f"unused_{self.fullname}_booted")
        boot.add_port("boot_error", f"unused_{self.fullname}_boot_error")
        for sig, _direction, width in RAW_DEVICE_SIGNALS:
            bus = f"m_axi4lite_{self.unique_name}_{sig}"
            top.add_signal(bus, width)
            if sig in ADDRESS_SIGNALS:
                boot.add_port(f"s_axil_{sig}", f"{bus}[{aw - 1}:0]", parent_sig=False)
            else:
                boot.add_port(f"s_axil_{sig}", bus, parent_sig=False)
        for sig in PROT_SIGNALS:  # not on mlib_devel's raw-device bus; the core ignores them
            boot.add_port(f"s_axil_{sig}", "3'b000", parent_sig=False)

        core = top.get_instance("fhg_core", f"{self.fullname}_core")
        core.add_parameter("TX_BUFFER_FRAMES", self.tx_buffer_frames)
        core.add_parameter("MAX_PAYLOAD", self.max_payload)
        axil_mhz = float(self.platform.conf.get("axil_clk_mhz", 100.0))
        core.add_parameter("AXIL_CLK_HZ", round(axil_mhz * 1e6))
        core.add_parameter("USE_TAF", "1'b1" if self.use_taf else "1'b0")
        core.add_parameter("RX_BUFFER_KIB", self.rx_buffer_kib)
        core.add_port("user_clk", "user_clk", parent_sig=False)
        core.add_port("axil_clk", "axil_clk", parent_sig=False)
        core.add_port("axil_rst_n", "axil_rst_n", parent_sig=False)
        for name, _direction, width in AXIL_SIGNALS:
            w = aw if name in ADDRESS_SIGNALS else width
            sig = f"{self.fullname}_core_axil_{name}"
            core.add_port(f"s_axil_{name}", sig, width=w)
            boot.add_port(f"m_axil_{name}", sig, width=w)
        for name, _direction, width in USER_PORTS:
            core.add_port(name, f"{self.fullname}_{name}", width=width)
        self.mac.modify_top(top, core, self.mac_ports)
        for role in self.cage.get("leds") or {}:
            port = f"fhg{self.port}_led_{role}"
            top.add_port(port, dir="out", width=1)
            top.assign_signal(port, f"{self.fullname}_led_{role}")

    def finalize_top(self, top):  # noqa: ANN001, ANN201 - mlib_devel's contract: return top
        # By now the interconnect has taken the raw entry and emptied the device's map
        # (mlib_devel's axi4lite_memory_map). The toolflow lists each entry of the map a
        # device holds when core_info.tab is written as "<device>_<entry>": the registers
        # go there, to be named in core_info.tab, memory_map.json and the .fpg without
        # adding hardware.
        self.bus_device.memory_map = list(self.memory_map)
        return top

    def gen_constraints(self) -> list[Any]:
        cons: list[Any] = []
        for role, pin in (self.cage.get("leds") or {}).items():
            cons.append(PortConstraint(f"fhg{self.port}_led_{role}", pin))
        cons.extend(self.mac.gen_constraints())
        cons.extend(clock_groups(self.platform, ["user_clk", "axil_clk", *self.mac.mac_clocks()]))
        return cons

    def gen_tcl_cmds(self) -> dict[str, list[str]]:
        return self.mac.gen_tcl_cmds()

    def lint_stubs(self) -> dict[str, str]:
        return self.mac.lint_stubs()

    def meta(self) -> dict[str, str]:
        """casperfpga reads fab_mac/fab_ip/fab_udp/... from these ``?meta`` lines."""
        out = {k: str(v) for k, v in self.params.items()}
        out["fab_mac"] = ":".join(f"{b:02x}" for b in self.fab_mac.to_bytes(6, "big"))
        out["fab_ip"] = str(ipaddress.IPv4Address(self.fab_ip))
        out["fab_gate"] = str(ipaddress.IPv4Address(self.fab_gate))
        out["fab_netmask"] = str(ipaddress.IPv4Address(self.fab_netmask))
        out["fab_udp"] = str(self.fab_udp)
        out["fab_en"] = str(int(self.fab_en))
        return out
