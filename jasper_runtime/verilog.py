"""The top-level Verilog module a design's yellow blocks build together (jasper's
``VerilogModule`` API), and the AXI4-Lite address map.

Blocks call ``top.get_instance(entity, name)`` and wire the instance with
``add_port(port, signal, dir=, width=, parent_port=, parent_sig=)``; ``parent_port=True``
makes ``signal`` a port of the top level, ``parent_sig=True`` (the default) declares it as
a wire of the top level, ``parent_sig=False`` passes an expression (a constant, a slice, an
existing signal) through as written. Memory-mapped blocks call
``top.add_axi4lite_interface(regname, ...)``: the toolflow packs every interface into the
platform's address window and connects it to the bus decoder. This runtime's own register
blocks take fhg_bus_pkg's AXI4-Lite struct pair (``Instance.add_axi4lite_slave``: the wires
``m_axi4lite_<regname>_req``/``_rsp``); any other block (the overlay's, written against
mlib_devel) wires its slave port signal by signal to mlib_devel's raw-device bus
``m_axi4lite_<regname>_<sig>`` (see :data:`RAW_DEVICE_SIGNALS`; 32-bit addresses relative to
the device's base), which the top joins to the decoder's port for that device.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from yellow_blocks.fhg_axi4lite import (
    ADDRESS_SIGNALS,
    AXIL_SIGNALS,
    PROT_SIGNALS,
    RAW_DEVICE_SIGNALS,
)
from yellow_blocks.yellow_block_typecodes import TYPECODE_BRAM, TYPECODE_SWREG

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
# fhg_bus_pkg's AXI4-Lite pair: its types, and its widths for a packed array of them.
AXIL_REQ_T = "fhg_bus_pkg::axil_req_t"
AXIL_RSP_T = "fhg_bus_pkg::axil_rsp_t"
AXIL_REQ_W = "fhg_bus_pkg::AXIL_REQ_W"
AXIL_RSP_W = "fhg_bus_pkg::AXIL_RSP_W"
_VERILOG_KEYWORDS = frozenset(
    [
        "always",
        "and",
        "assign",
        "begin",
        "case",
        "default",
        "else",
        "end",
        "endcase",
        "endmodule",
        "for",
        "function",
        "if",
        "initial",
        "inout",
        "input",
        "integer",
        "logic",
        "module",
        "negedge",
        "or",
        "output",
        "parameter",
        "posedge",
        "reg",
        "signed",
        "wire",
        "localparam",
        "generate",
        "endgenerate",
    ]
)


class VerilogError(ValueError):
    """Conflicting or malformed wiring of the top level."""


def check_identifier(name: str, what: str) -> str:
    if not _IDENT.match(name) or name in _VERILOG_KEYWORDS:
        raise VerilogError(f"{what} {name!r} is not a valid Verilog identifier")
    return name


@dataclass
class Port:
    name: str
    signal: str
    dir: str | None
    width: int | None
    parent_port: bool
    parent_sig: bool


@dataclass
class Instance:
    """One module instance of the top level."""

    entity: str
    name: str
    owner: VerilogModule
    ports: dict[str, Port] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)
    comment: str | None = None

    def add_port(
        self,
        name: str,
        signal: str,
        dir: str | None = None,
        width: int | None = None,
        parent_port: bool = False,
        parent_sig: bool = True,
    ) -> None:
        check_identifier(name, f"port of {self.name}")
        if name in self.ports:
            raise VerilogError(f"instance {self.name}: port {name} connected twice")
        if width is not None and width < 1:
            raise VerilogError(f"instance {self.name}: port {name} width {width} < 1")
        self.ports[name] = Port(name, signal, dir, width, parent_port, parent_sig)
        if parent_port:
            if dir not in ("in", "out", "inout"):
                raise VerilogError(
                    f"instance {self.name}: top-level port {signal} needs dir in/out/inout"
                )
            self.owner.add_port(signal, dir, width or 1)
        elif parent_sig and signal:
            self.owner.add_signal(signal, width)

    def add_parameter(self, name: str, value: object) -> None:
        check_identifier(name, f"parameter of {self.name}")
        self.parameters[name] = str(value)

    def add_axi4lite_slave(self, regname: str, prefix: str = "s_axil_") -> None:
        """Connect this instance's AXI4-Lite slave port, fhg_bus_pkg's struct pair
        ``<prefix>req``/``<prefix>rsp``, to interface ``regname`` (added with
        ``top.add_axi4lite_interface``). The slave sees 32-bit addresses relative to its
        base and decodes the low bits of its span."""
        iface = self.owner.axi4lite_interfaces.get(regname)
        if iface is None:
            raise VerilogError(f"{self.name}: no AXI4-Lite interface {regname!r} in the top")
        if iface.struct_slave:
            raise VerilogError(f"{self.name}: AXI4-Lite interface {regname!r} connected twice")
        iface.struct_slave = True
        self.owner.add_typed_signal(iface.req, AXIL_REQ_T)
        self.owner.add_typed_signal(iface.rsp, AXIL_RSP_T)
        self.add_port(prefix + "req", iface.req, parent_sig=False)
        self.add_port(prefix + "rsp", iface.rsp, parent_sig=False)


@dataclass
class Axi4LiteInterface:
    regname: str
    mode: str
    nbytes: int  # requested size
    default_val: int
    memory_map: list
    typecode: int
    data_width: int = 32
    axi4lite_mode: str = "raw"
    base: int | None = None  # assigned by the address map
    # The map the bus took from a raw, software-register or RAM device (hand_maps_to_bus).
    bus_map: list = field(default_factory=list)
    # Whether the slave takes the struct pair (add_axi4lite_slave); else the block wires
    # mlib_devel's flat raw-device bus.
    struct_slave: bool = False

    @property
    def bus_owned(self) -> bool:
        """Whether the bus takes this device's map (mlib_devel: raw devices, software
        registers and RAMs); a register-level device keeps it."""
        return self.axi4lite_mode == "raw" or self.typecode in (TYPECODE_SWREG, TYPECODE_BRAM)

    @property
    def size(self) -> int:
        """Decoded span: the request rounded up to a power of two, at least one word."""
        return max(4, 1 << (max(self.nbytes, 1) - 1).bit_length())

    def signal(self, sig: str) -> str:
        return f"m_axi4lite_{self.regname}_{sig}"

    @property
    def req(self) -> str:
        """The device's request wire (fhg_bus_pkg::axil_req_t)."""
        return self.signal("req")

    @property
    def rsp(self) -> str:
        """The device's response wire (fhg_bus_pkg::axil_rsp_t)."""
        return self.signal("rsp")


class VerilogModule:
    """A module built from instances, wires and assignments, rendered by
    :meth:`gen_top_verilog`."""

    def __init__(self, name: str = "top", topfile: str | None = None) -> None:
        self.name = check_identifier(name, "module name")
        self.topfile = topfile
        self.ports: dict[str, tuple[str, int]] = {}
        # A wire's width (None: 1 bit unless declared wider elsewhere), or its SystemVerilog
        # type (str) for fhg_bus_pkg's AXI4-Lite pair.
        self.signals: dict[str, int | str | None] = {}
        self.instances: dict[str, Instance] = {}
        self.assignments: list[tuple[str, str]] = []
        self.axi4lite_interfaces: dict[str, Axi4LiteInterface] = {}
        self.raw_lines: list[str] = []

    # ------------------------------------------------------------------ building
    def get_instance(self, entity: str, name: str, comment: str | None = None) -> Instance:
        """The instance ``name`` of ``entity``, created on first use."""
        check_identifier(entity, "module")
        check_identifier(name, "instance name")
        inst = self.instances.get(name)
        if inst is None:
            inst = Instance(entity, name, self, comment=comment)
            self.instances[name] = inst
        elif inst.entity != entity:
            raise VerilogError(
                f"instance name {name} used for {inst.entity} and {entity} (two blocks "
                "with the same name?)"
            )
        return inst

    def add_port(self, name: str, dir: str, width: int = 1) -> None:
        check_identifier(name, "top-level port")
        if dir not in ("in", "out", "inout"):
            raise VerilogError(f"top-level port {name}: dir {dir!r} is not in/out/inout")
        old = self.ports.get(name)
        if old is not None and old != (dir, width):
            raise VerilogError(
                f"top-level port {name} declared as {old[0]}[{old[1]}] and {dir}[{width}]"
            )
        if name in self.signals:
            raise VerilogError(f"{name} is both a top-level port and an internal signal")
        self.ports[name] = (dir, width)

    def add_signal(self, name: str, width: int | None = None) -> None:
        """Declare wire ``name``; ``width`` None means 1 bit unless declared wider elsewhere.

        Expressions (constants, slices) are not declared: only plain identifiers are.
        """
        if not _IDENT.match(name):
            return
        if name in self.ports:
            pwidth = self.ports[name][1]
            if width is not None and width != pwidth:
                raise VerilogError(f"signal {name}: width {width} but port is {pwidth} bits")
            return
        old = self.signals.get(name)
        if isinstance(old, str):
            raise VerilogError(f"signal {name} is of type {old}, not a {width}-bit wire")
        if old is not None and width is not None and old != width:
            raise VerilogError(f"signal {name} declared with widths {old} and {width}")
        if old is None:
            self.signals[name] = width

    def add_typed_signal(self, name: str, type_: str) -> None:
        """Declare wire ``name`` of SystemVerilog type ``type_`` (a packed type, e.g.
        ``fhg_bus_pkg::axil_req_t`` or ``[3:0][7:0]``)."""
        check_identifier(name, "signal")
        if name in self.ports:
            raise VerilogError(f"{name} is both a top-level port and an internal signal")
        old = self.signals.get(name, type_)
        if old != type_:
            raise VerilogError(f"signal {name} declared as {old} and {type_}")
        self.signals[name] = type_

    def assign_signal(self, lhs: str, rhs: str) -> None:
        self.assignments.append((lhs, rhs))

    def add_raw_string(self, text: str) -> None:
        self.raw_lines.append(text)

    def add_axi4lite_interface(
        self,
        regname: str,
        mode: str = "rw",
        nbytes: int = 4,
        default_val: int = 0,
        memory_map: Iterable | None = None,
        typecode: int = 0xFF,
        data_width: int = 32,
        axi4lite_mode: str = "raw",
        **_unused: object,
    ) -> Axi4LiteInterface:
        """Reserve ``nbytes`` of the bus for ``regname`` (the software name of the device).

        Every block brings its own register logic here: its slave takes the struct pair
        (``Instance.add_axi4lite_slave``) or mlib_devel's flat bus ``m_axi4lite_<regname>_*``.
        ``axi4lite_mode`` (mlib_devel's: ``'raw'``
        or ``''`` for a register-level device) decides only how software sees it (see
        :meth:`VerilogModule.hand_maps_to_bus`); ``memory_map`` documents the registers.
        """
        if axi4lite_mode not in ("raw", ""):
            raise VerilogError(
                f"{regname}: axi4lite_mode {axi4lite_mode!r} is not 'raw' or '' (register-level)"
            )
        check_identifier(regname, "register name")
        if regname in self.axi4lite_interfaces:
            raise VerilogError(f"two memory-mapped devices are called {regname!r}")
        if mode not in ("r", "rw", "w"):
            raise VerilogError(f"{regname}: mode {mode!r} is not r, w or rw")
        if nbytes <= 0:
            raise VerilogError(f"{regname}: size {nbytes} is not positive")
        if data_width != 32:
            raise VerilogError(f"{regname}: only 32-bit AXI4-Lite slaves are supported")
        mm = list(memory_map or [])
        for reg in mm:
            if reg.offset + reg.nbytes > nbytes:
                raise VerilogError(
                    f"{regname}: register {reg.name} at {reg.offset:#x}+{reg.nbytes:#x} "
                    f"lies outside the interface's {nbytes:#x} bytes"
                )
        iface = Axi4LiteInterface(
            regname, mode, nbytes, default_val, mm, typecode, data_width, axi4lite_mode
        )
        self.axi4lite_interfaces[regname] = iface
        return iface

    def hand_maps_to_bus(self) -> None:
        """What mlib_devel's ``axi4lite_memory_map`` does to the maps once every block's
        ``modify_top`` has run: a raw, software-register or RAM device's map goes to the
        bus (``bus_map``) and the device keeps an empty one. ``core_info.tab`` lists every
        entry of the map a device holds at the end as ``<regname>_<entry>``, so those
        devices are one entry unless a block names registers in its ``finalize_top``."""
        for iface in self.axi4lite_interfaces.values():
            if iface.bus_owned:
                iface.bus_map, iface.memory_map = iface.memory_map, []

    # ------------------------------------------------------------------ address map
    def assign_addresses(self, base: int, window: int | None = None) -> list[Axi4LiteInterface]:
        """Give every interface its base address, as mlib_devel's ``axi4lite_memory_map``.

        The software registers (typecode SWREG) form one region, one word each in the order
        they were added; every other interface is a region of its own. Regions are sized up
        to a power of two and packed from ``base`` largest first (equal sizes in the order
        their first interface was added), which aligns each to its size.
        """
        regions: dict[str, list[Axi4LiteInterface]] = {}
        for iface in self.axi4lite_interfaces.values():
            key = "sw_reg" if iface.typecode == TYPECODE_SWREG else f"dev:{iface.regname}"
            regions.setdefault(key, []).append(iface)

        def span(members: list[Axi4LiteInterface]) -> int:
            total = sum(m.nbytes for m in members) if len(members) > 1 else members[0].size
            return max(4, 1 << (max(total, 1) - 1).bit_length())

        ordered = sorted(regions.values(), key=lambda members: -span(members))
        cursor = base
        for members in ordered:
            size = span(members)
            cursor = -(-cursor // size) * size
            offset = 0
            for iface in members:
                iface.base = cursor + offset
                offset += iface.size
            cursor += size
        ifaces = sorted(self.axi4lite_interfaces.values(), key=lambda i: i.base)
        if window is not None and cursor > base + window:
            raise VerilogError(
                f"the memory-mapped devices need {cursor - base:#x} bytes, more than the "
                f"platform's {window:#x}-byte window at {base:#x}"
            )
        return ifaces

    def add_axi4lite_interconnect(self, master_prefix: str, clk: str, rst_n: str) -> None:
        """Decode the bus ``<master_prefix><sig>`` (the platform's flat master, 32-bit
        addresses) to every interface: struct slaves on their pair, the others on
        mlib_devel's flat raw-device bus."""
        ifaces = sorted(
            self.axi4lite_interfaces.values(),
            key=lambda i: i.base if i.base is not None else -1,
        )
        if not ifaces:
            return
        if any(i.base is None for i in ifaces):
            raise VerilogError("assign_addresses must run before the interconnect is built")
        n = len(ifaces)
        inst = self.get_instance("fhg_axil_interconnect", "axil_interconnect")
        inst.add_parameter("N", n)
        masks = ",".join(f"32'h{(~(i.size - 1)) & 0xFFFFFFFF:08x}" for i in reversed(ifaces))
        # Slave k sits in bits [32k +: 32]: the concatenation lists slave N-1 first.
        bases = ",".join(f"32'h{i.base:08x}" for i in reversed(ifaces))
        inst.add_parameter("BASES", "{" + bases + "}")
        inst.add_parameter("MASKS", "{" + masks + "}")
        inst.add_port("clk", clk, parent_sig=False)
        inst.add_port("rst_n", rst_n, parent_sig=False)
        self._join_flat("axil_ic_s_req", "axil_ic_s_rsp", master_prefix, AXIL_SIGNALS, True)
        inst.add_port("s_req", "axil_ic_s_req", parent_sig=False)
        inst.add_port("s_rsp", "axil_ic_s_rsp", parent_sig=False)
        self.add_typed_signal("axil_ic_m_req", f"[{n - 1}:0][{AXIL_REQ_W}-1:0]")
        self.add_typed_signal("axil_ic_m_rsp", f"[{n - 1}:0][{AXIL_RSP_W}-1:0]")
        inst.add_port("m_req", "axil_ic_m_req", parent_sig=False)
        inst.add_port("m_rsp", "axil_ic_m_rsp", parent_sig=False)
        unused: list[str] = []
        for k, iface in enumerate(ifaces):
            if not iface.struct_slave:
                # A block wired signal by signal, as mlib_devel's top wires it: the bus it
                # sees is mlib_devel's raw-device bus, from the decoder's pair for it.
                for sig, _d, width in RAW_DEVICE_SIGNALS:
                    self.add_signal(iface.signal(sig), width)
                self._join_flat(
                    iface.req, iface.rsp, iface.signal(""), RAW_DEVICE_SIGNALS, master=False
                )
                # Its slave decodes only its own span, and takes no protection bits.
                unused += [iface.signal(s) for s in ADDRESS_SIGNALS]
                unused += [f"{iface.req}.{s}" for s in PROT_SIGNALS]
            self.assign_signal(iface.req, f"axil_ic_m_req[{k}]")
            self.assign_signal(f"axil_ic_m_rsp[{k}]", iface.rsp)
        if unused:
            self.add_signal("unused_axil_ic_addr", 1)
            self.assign_signal("unused_axil_ic_addr", "^{" + ", ".join(unused) + "}")

    def _join_flat(
        self,
        req: str,
        rsp: str,
        prefix: str,
        flat: Iterable[tuple[str, str, int]],
        master: bool,
    ) -> None:
        """Declare the pair ``req``/``rsp`` and join it to the flat signals ``<prefix><sig>``
        of ``flat`` (rows of AXIL_SIGNALS): a master's signals drive the request and take
        the response, a slave's the other way round."""
        self.add_typed_signal(req, AXIL_REQ_T)
        self.add_typed_signal(rsp, AXIL_RSP_T)
        for sig, direction, _width in flat:
            member = f"{req if direction == 'in' else rsp}.{sig}"
            if (direction == "in") == master:
                self.assign_signal(member, prefix + sig)
            else:
                self.assign_signal(prefix + sig, member)

    # ------------------------------------------------------------------ rendering
    def gen_top_verilog(self, header: str = "") -> str:
        self._check_connected()
        out: list[str] = []
        if header:
            out.extend(f"// {line}".rstrip() for line in header.splitlines())
        out.append("`default_nettype none")
        out.append(f"module {self.name} (")
        plist = []
        for name, (d, width) in self.ports.items():
            kind = {"in": "input", "out": "output", "inout": "inout"}[d]
            rng = f" [{width - 1}:0]" if width > 1 else ""
            plist.append(f"    {kind} wire{rng} {name}")
        out.append(",\n".join(plist))
        out.append(");")
        out.append("")
        for name, width in self.signals.items():
            if isinstance(width, str):
                out.append(f"    wire {width} {name};")
                continue
            w = width or 1
            rng = f"[{w - 1}:0] " if w > 1 else ""
            out.append(f"    wire {rng}{name};")
        if self.assignments:
            out.append("")
        for lhs, rhs in self.assignments:
            out.append(f"    assign {lhs} = {rhs};")
        for inst in self.instances.values():
            out.append("")
            if inst.comment:
                out.append(f"    // {inst.comment}")
            head = f"    {inst.entity}"
            if inst.parameters:
                params = ",\n".join(f"        .{k}({v})" for k, v in inst.parameters.items())
                head += f" #(\n{params}\n    )"
            out.append(f"{head} {inst.name} (")
            conns = ",\n".join(f"        .{p.name}({p.signal})" for p in inst.ports.values())
            out.append(conns)
            out.append("    );")
        for raw in self.raw_lines:
            out.append("")
            out.extend(f"    {line}" if line else "" for line in raw.splitlines())
        out.append("")
        out.append("endmodule")
        out.append("`default_nettype wire")
        return "\n".join(out) + "\n"

    def _check_connected(self) -> None:
        """Every declared wire must be used somewhere (catches typo'd signal names)."""
        text = " ".join(
            [p.signal for i in self.instances.values() for p in i.ports.values()]
            + [f"{lhs} {rhs}" for lhs, rhs in self.assignments]
            + self.raw_lines
        )
        used = set(re.findall(r"[A-Za-z_][A-Za-z0-9_$]*", text))
        for name in self.signals:
            if name not in used:
                raise VerilogError(f"wire {name} is declared but connected to nothing")
