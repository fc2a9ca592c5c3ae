"""Generate everything derived from the core's SystemRDL register map.

One source (``fhg_regs.rdl``) produces, and the repository commits:

* ``fhg_regs.sv`` / ``fhg_regs_pkg.sv``: the AXI4-Lite register block (peakrdl-regblock),
* ``fhg_regs_hwif.rpt``: the list of the block's hardware-side signals,
* ``casperfpga_ext/fhg_regmap.py``: the Python map (names, offsets, fields, access),
* ``docs/registers.md``: the operator's register reference.

``casper400g regs`` rewrites them; ``casper400g regs --check`` fails when any is stale.
The generator pins exact versions of systemrdl-compiler and peakrdl-regblock (see
pyproject.toml) because their output is committed and compared byte for byte.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mlib_devel_400g import paths

from . import checkout, regmap_types
from .regmap_types import Field, Region, Register

BLOCK_NAME = "fhg_regs"

# Files produced, relative to the repository root.
SV_FILES = ("fhg_regs.sv", "fhg_regs_pkg.sv", "fhg_regs_hwif.rpt")
PY_MAP = Path("casperfpga_ext") / "fhg_regmap.py"
# The same map for the yellow block, which runs inside mlib_devel where casperfpga_ext is
# not importable (jasper_library/ holds only what goes into an mlib_devel checkout).
BLOCK_MAP = Path("jasper_library") / "yellow_blocks" / "fourhundred_gbe_regmap.py"
# The address parser the yellow block shares with casperfpga_ext: the overlay runs inside
# mlib_devel, where casperfpga_ext is not importable, so it carries a copy.
ADDRESSING = Path("casperfpga_ext") / "addressing.py"
BLOCK_ADDRESSING = Path("jasper_library") / "yellow_blocks" / "fourhundred_gbe_addressing.py"
MD_DOC = Path("docs") / "registers.md"


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class RegMap:
    name: str
    desc: str
    size: int
    registers: tuple[Register, ...]
    regions: tuple[Region, ...]


def _clean(text: str | None) -> str:
    return " ".join((text or "").split())


def _access(prop: object) -> str:
    name = getattr(prop, "name", str(prop))
    return {"na": "-", "rw1": "rw", "w1": "w"}.get(name, name)


def _field_info(node) -> Field:  # noqa: ANN001 - systemrdl FieldNode
    return Field(
        name=node.inst_name,
        lsb=node.lsb,
        width=node.width,
        sw=_access(node.get_property("sw")),
        hw=_access(node.get_property("hw")),
        reset=node.get_property("reset"),
        singlepulse=bool(node.get_property("singlepulse")),
        counter=bool(node.get_property("counter")),
        desc=_clean(node.get_property("desc")),
    )


def compile_rdl(rdl: Path | None = None):  # noqa: ANN201 - systemrdl RootNode
    """Compile and elaborate the register description (with peakrdl-regblock's UDPs)."""
    from peakrdl_regblock.udps import ALL_UDPS
    from systemrdl import RDLCompiler

    compiler = RDLCompiler()
    for udp in ALL_UDPS:
        compiler.register_udp(udp, soft=False)
    compiler.compile_file(str(rdl or paths.REGS_RDL))
    return compiler.elaborate(top_def_name=BLOCK_NAME)


def build_model(root) -> RegMap:  # noqa: ANN001 - systemrdl RootNode
    """Turn the elaborated SystemRDL tree into the plain model the exporters use."""
    from systemrdl.node import MemNode, RegNode

    top = root.top
    registers: list[Register] = []
    regions: list[Region] = []
    for node in top.children():
        if isinstance(node, RegNode):
            fields = tuple(_field_info(f) for f in node.fields())
            registers.append(
                Register(
                    name=node.inst_name,
                    title=_clean(node.get_property("name")),
                    offset=node.address_offset,
                    width=node.get_property("regwidth"),
                    sw="rw" if any("w" in f.sw for f in fields) else "r",
                    desc=_clean(node.get_property("desc")),
                    fields=fields,
                )
            )
        elif isinstance(node, MemNode):
            vregs = list(node.registers())
            entry_fields: tuple[Field, ...] = ()
            entry_bytes = node.get_property("memwidth") // 8
            if vregs:
                first = vregs[0]
                if first.is_array:
                    first = next(first.unrolled())
                entry_fields = tuple(_field_info(f) for f in first.fields())
                entry_bytes = first.get_property("regwidth") // 8
            regions.append(
                Region(
                    name=node.inst_name,
                    title=_clean(node.get_property("name")),
                    offset=node.address_offset,
                    size=node.size,
                    sw=_access(node.get_property("sw")),
                    desc=_clean(node.get_property("desc")),
                    entries=node.get_property("mementries"),
                    entry_bytes=entry_bytes,
                    entry_fields=entry_fields,
                )
            )
        else:
            raise TypeError(f"unsupported component {node.get_path()} in {BLOCK_NAME}")
    registers.sort(key=lambda r: r.offset)
    regions.sort(key=lambda r: r.offset)
    return RegMap(
        name=BLOCK_NAME,
        desc=_clean(top.get_property("desc")),
        # The block decodes a power-of-two window, as jasper allocates AXI slaves.
        size=1 << (top.size - 1).bit_length(),
        registers=tuple(registers),
        regions=tuple(regions),
    )


# --------------------------------------------------------------------------- SystemVerilog


def export_sv(root, out_dir: Path) -> None:  # noqa: ANN001 - systemrdl RootNode
    """Write the AXI4-Lite register block: flat AXI ports, active-low reset (aresetn)."""
    from peakrdl_regblock import RegblockExporter
    from peakrdl_regblock.cpuif.axi4lite import AXI4Lite_Cpuif_flattened

    out_dir.mkdir(parents=True, exist_ok=True)
    RegblockExporter().export(
        root,
        str(out_dir),
        cpuif_cls=AXI4Lite_Cpuif_flattened,
        module_name=BLOCK_NAME,
        package_name=f"{BLOCK_NAME}_pkg",
        default_reset_activelow=True,
        generate_hwif_report=True,
        # A SLVERR on the Versal APU becomes an SError/SIGBUS that takes down the board
        # server, so unmapped reads return 0 and unmapped writes are ignored.
        err_if_bad_addr=False,
        err_if_bad_rw=False,
    )


# --------------------------------------------------------------------------- Python map

# The generated map's docstring and imports; its classes follow, as regmap_types.py has them.
_PY_HEADER = '''\
"""Register map of the casper400g 400GbE core ({name}).

GENERATED by `casper400g regs` from
jasper_library/hdl_sources/fourhundred_gbe/regs/fhg_regs.rdl -- do not edit; change the
SystemRDL source and regenerate. Offsets are bytes from the core's base address; all CPU
accesses are 32-bit words. 64-bit registers are read low word first: that read snapshots
the whole value, so the following high-word read is consistent (never torn).
"""

from __future__ import annotations

from dataclasses import dataclass


'''


def _map_classes() -> str:
    text = Path(regmap_types.__file__).read_text()
    return text[text.index("@dataclass") :]


def _py_field(f: Field, indent: str) -> str:
    return (
        f"{indent}Field({f.name!r}, {f.lsb}, {f.width}, {f.sw!r}, {f.hw!r}, "
        f"{f.reset if f.reset is None else hex(f.reset)}, {f.singlepulse}, {f.counter},\n"
        f"{indent}      {f.desc!r}),\n"
    )


def _py_fields(fields: tuple[Field, ...]) -> str:
    """The fields argument of a generated Register or Region, and the call's end."""
    inner = "".join(_py_field(f, "            ") for f in fields)
    return f"        (\n{inner}        ),\n    ),\n"


def render_python(model: RegMap) -> str:
    out = [_PY_HEADER.format(name=model.name), _map_classes(), "\n\n"]
    out.append(f"BLOCK_NAME = {model.name!r}\n")
    out.append(f"BLOCK_SIZE = {model.size:#x}\n")
    out.append("WORD_BYTES = 4\n\n")
    out.append("REGISTERS: dict[str, Register] = {\n")
    for r in model.registers:
        out.append(f"    {r.name!r}: Register(\n")
        out.append(f"        {r.name!r}, {r.title!r}, {r.offset:#06x}, {r.width}, {r.sw!r},\n")
        out.append(f"        {r.desc!r},\n")
        out.append(_py_fields(r.fields))
    out.append("}\n\n")
    out.append("REGIONS: dict[str, Region] = {\n")
    for g in model.regions:
        out.append(f"    {g.name!r}: Region(\n")
        out.append(f"        {g.name!r}, {g.title!r}, {g.offset:#06x}, {g.size:#06x}, {g.sw!r},\n")
        out.append(f"        {g.desc!r},\n")
        out.append(f"        {g.entries}, {g.entry_bytes},\n")
        out.append(_py_fields(g.entry_fields))
    out.append("}\n\n")
    out.append(
        "COUNTERS: tuple[str, ...] = tuple(n for n, r in REGISTERS.items() if r.is_counter)\n"
    )
    return "".join(out)


# --------------------------------------------------------------------------- Markdown

_ACCESS_WORDS = {
    "rw": "read/write",
    "r": "read-only",
    "w": "write-only",
}


def _bits(f: Field) -> str:
    return f"{f.lsb}" if f.width == 1 else f"{f.lsb + f.width - 1}:{f.lsb}"


def _reset_text(f: Field) -> str:
    if f.reset is None:
        return "core"
    return f"{f.reset:#x}" if f.width > 4 else str(f.reset)


def _field_access(f: Field) -> str:
    if f.singlepulse:
        return "W1P"
    if f.counter:
        return "R (counter)"
    if f.sw == "r" and f.hw == "w":
        return "R (core)"
    return f.sw.upper()


def _reg_reset(r: Register) -> str:
    if all(f.reset is None for f in r.fields):
        return "core"
    return f"0x{r.reset:0{r.width // 4}X}"


def render_markdown(model: RegMap) -> str:
    out: list[str] = []
    out.append("# fourhundred_gbe register reference\n\n")
    out.append(
        "<!-- GENERATED by `casper400g regs` from "
        "jasper_library/hdl_sources/fourhundred_gbe/regs/fhg_regs.rdl; do not edit. -->\n\n"
    )
    out.append(f"{model.desc}\n\n")
    out.append(
        "Offsets are bytes from the block's base address (the `?register` line of the\n"
        "block in the `.fpg`). Every access is a 32-bit word. Offsets 0x00-0x78 are where\n"
        "casperfpga's 10/40/100 GbE cores keep the same registers; 0x80 and above are 400G\n"
        "additions. Unmapped offsets read 0 and ignore writes (no bus error: on the Versal\n"
        "APU an AXI error would crash the board's server).\n\n"
        "Access: **RW** read/write; **R (core)** status driven by the core; **R (counter)**\n"
        "counter, cleared by `count_reset`; **W1P** write 1 for a one-cycle pulse, reads 0.\n\n"
        "**64-bit counters** occupy two words, low word first. Reading the low word takes a\n"
        "snapshot of all 64 bits; the high word then returns the snapshot's upper half. Read\n"
        "low then high and the value is never torn, even while the counter runs. Counters\n"
        "are exact: the datapath hands its increments to this block as deltas across the\n"
        "clock domains, and `count_reset` clears every counter at once.\n\n"
    )
    out.append("## Summary\n\n")
    out.append("| Offset | Name | Access | Reset | Description |\n")
    out.append("|---|---|---|---|---|\n")
    for r in model.registers:
        width = "" if r.width == 32 else " (64-bit)"
        title = r.title if r.title != r.name else r.desc
        out.append(
            f"| 0x{r.offset:04X} | [`{r.name}`](#{r.name}){width} | {_ACCESS_WORDS[r.sw]} | "
            f"{_reg_reset(r)} | {title} |\n"
        )
    for g in model.regions:
        out.append(
            f"| 0x{g.offset:04X} | [`{g.name}`](#{g.name}) ({g.size} B) | "
            f"{_ACCESS_WORDS.get(g.sw, g.sw)} | - | {g.title} |\n"
        )
    out.append("\n## Registers\n")
    for r in model.registers:
        out.append(f"\n### {r.name}\n\n")
        head = f"**0x{r.offset:04X}**"
        if r.width == 64:
            head += f" (low word), **0x{r.offset + 4:04X}** (high word)"
        if r.title != r.name:
            head += f" — {r.title}"
        out.append(f"{head}\n\n{r.desc}\n\n")
        out.append("| Bits | Field | Access | Reset | Description |\n")
        out.append("|---|---|---|---|---|\n")
        for f in sorted(r.fields, key=lambda f: -f.lsb):
            out.append(
                f"| {_bits(f)} | `{f.name}` | {_field_access(f)} | {_reset_text(f)} | {f.desc} |\n"
            )
    out.append(
        "\n## External regions\n\nThese regions are RAMs owned by the core; "
        "the register block forwards\nevery access to them.\n"
    )
    for g in model.regions:
        out.append(f"\n### {g.name}\n\n")
        out.append(
            f"**0x{g.offset:04X}-0x{g.offset + g.size - 1:04X}** — {g.title}, "
            f"{_ACCESS_WORDS.get(g.sw, g.sw)}, {g.entries} × {g.entry_bytes} B\n\n{g.desc}\n\n"
        )
        if g.entry_fields:
            out.append(
                f"Entry *i* is at 0x{g.offset:04X} + {g.entry_bytes}·*i*; "
                "bit 0 of the entry is bit 0 of its first word.\n\n"
            )
            out.append("| Bits | Field | Description |\n|---|---|---|\n")
            for f in sorted(g.entry_fields, key=lambda f: -f.lsb):
                out.append(f"| {_bits(f)} | `{f.name}` | {f.desc} |\n")
    return "".join(out)


# --------------------------------------------------------------------------- flat wrapper

_HWIF_LINE = re.compile(r"^(hwif_(?:in|out))\.([\w.]+?)(?:\[(\d+):(\d+)\])?$")
_PORT_LINE = re.compile(r"^\s*(input|output)\s+(?:wire|logic)\s*(\[[^\]]+\])?\s*(s_axil_\w+)")


def render_flat_wrapper(regblock_sv: str, hwif_report: str, module: str = "fhg_regs_flat") -> str:
    """A wrapper exposing every hwif struct member as a plain port.

    Simulators' foreign interfaces (cocotb on Verilator) cannot reach into packed structs,
    so register-block tests drive the flat ports, named ``hwif_in__<reg>__<field>__<sig>``.
    """
    ports: list[str] = ["    input  wire clk", "    input  wire rst_n"]
    axi_conns: list[str] = []
    for line in regblock_sv.splitlines():
        m = _PORT_LINE.match(line)
        if m:
            direction, rng, name = m.groups()
            ports.append(f"    {direction:6} wire {rng or ''} {name}".rstrip())
            axi_conns.append(f"        .{name}({name})")
    assigns: list[str] = []
    for line in hwif_report.splitlines():
        m = _HWIF_LINE.match(line.strip())
        if not m:
            continue
        struct, path, msb, lsb = m.groups()
        flat = f"{struct}__{path.replace('.', '__')}"
        rng = f"[{msb}:{lsb}] " if msb is not None else ""
        if struct == "hwif_in":
            ports.append(f"    input  wire {rng}{flat}")
            assigns.append(f"    assign hwif_in.{path} = {flat};")
        else:
            ports.append(f"    output wire {rng}{flat}")
            assigns.append(f"    assign {flat} = hwif_out.{path};")
    return (
        "// Test wrapper generated from the register block's hwif report; not for synthesis.\n"
        f"module {module} (\n" + ",\n".join(ports) + "\n);\n"
        f"    {BLOCK_NAME}_pkg::{BLOCK_NAME}__in_t hwif_in;\n"
        f"    {BLOCK_NAME}_pkg::{BLOCK_NAME}__out_t hwif_out;\n"
        + "\n".join(assigns)
        + f"\n    {BLOCK_NAME} u_regs (\n        .clk(clk),\n        .rst_n(rst_n),\n"
        + ",\n".join(axi_conns)
        + ",\n        .hwif_in(hwif_in),\n        .hwif_out(hwif_out)\n    );\nendmodule\n"
    )


# --------------------------------------------------------------------------- driver


def render_all(rdl: Path | None = None) -> dict[Path, str]:
    """Render every generated file; keys are paths relative to the repository root."""
    root = compile_rdl(rdl)
    model = build_model(root)
    files: dict[Path, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        export_sv(root, Path(tmp))
        rel_dir = paths.REGS_DIR.relative_to(checkout.ROOT)
        for name in SV_FILES:
            files[rel_dir / name] = (Path(tmp) / name).read_text()
    files[PY_MAP] = render_python(model)
    files[BLOCK_MAP] = files[PY_MAP]
    files[BLOCK_ADDRESSING] = (checkout.ROOT / ADDRESSING).read_text()
    files[MD_DOC] = render_markdown(model)
    return files
