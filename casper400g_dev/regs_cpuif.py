"""The register block's bus: AXI4-Lite as ``fhg_bus_pkg``'s struct pair.

The core's AXI4-Lite slaves take one port type, ``axil_req_t`` in and ``axil_rsp_t`` out
(jasper_library/hdl_sources/fourhundred_gbe/common/fhg_bus_pkg.sv, the one place their
fields are written). :func:`cpuif_class` gives peakrdl-regblock a CPU interface with those
two ports; the regblock's own AXI4-Lite logic reads the request's fields and drives the
response's as flat signals joined into the port.
:func:`flat_ports`, :func:`pack_flat` and :func:`flat_wrapper` serve the places that need the
flat signals back (simulation wrappers, whose AXI4-Lite master drives ``s_axil_*``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from mlib_devel_400g import paths

BUS_PKG = paths.FHG_HDL / "common" / "fhg_bus_pkg.sv"
REQ_TYPE = "axil_req_t"
RSP_TYPE = "axil_rsp_t"
ADDRESS_FIELDS = ("awaddr", "araddr")

_STRUCT = r"typedef\s+struct\s+packed\s*\{{(?P<body>[^}}]*)\}}\s*{name}\s*;"
_FIELD = re.compile(r"^\s*logic\s*(?:\[(\d+):0\])?\s*(\w+)\s*;", re.M)


@dataclass(frozen=True)
class BusField:
    name: str
    width: int


def struct_fields(type_name: str, text: str | None = None) -> tuple[BusField, ...]:
    """The fields of a packed struct of fhg_bus_pkg, MSB first (its declaration order)."""
    text = BUS_PKG.read_text() if text is None else text
    m = re.search(_STRUCT.format(name=re.escape(type_name)), text)
    if m is None:
        raise ValueError(f"{BUS_PKG.name}: no packed struct {type_name}")
    body = re.sub(r"//[^\n]*", "", m.group("body"))
    fields = tuple(BusField(name, int(msb) + 1 if msb else 1) for msb, name in _FIELD.findall(body))
    if not fields:
        raise ValueError(f"{BUS_PKG.name}: {type_name} has no fields")
    return fields


def _range(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def flat_ports(addr_width: int) -> list[tuple[str, str, str]]:
    """(direction, range, name) of the flat AXI4-Lite slave port, as ``s_axil_<field>``;
    addresses ``addr_width`` bits wide."""
    out = []
    for direction, type_name in (("input", REQ_TYPE), ("output", RSP_TYPE)):
        for f in struct_fields(type_name):
            width = addr_width if f.name in ADDRESS_FIELDS else f.width
            out.append((direction, _range(width), f"s_axil_{f.name}"))
    return out


def pack_flat(req: str, rsp: str) -> str:
    """Assignments joining flat ``s_axil_*`` signals to the struct pair ``req``/``rsp``
    (addresses zero-extended to the field's width)."""
    parts = []
    for f in struct_fields(REQ_TYPE):
        sig = f"s_axil_{f.name}"
        parts.append(f"{f.width}'({sig})" if f.name in ADDRESS_FIELDS else sig)
    outs = [f"s_axil_{f.name}" for f in struct_fields(RSP_TYPE)]
    return (
        f"    assign {req} = {{{', '.join(parts)}}};\n    assign {{{', '.join(outs)}}} = {rsp};\n"
    )


def flat_wrapper(
    module: str,
    name: str,
    addr_width: int,
    ports: Sequence[str],
    parameters: Mapping[str, object] | None = None,
) -> str:
    """A test wrapper ``name`` of ``module``, whose slave port ``s_axil_req``/``s_axil_rsp``
    it offers as the flat ``s_axil_*`` (addresses ``addr_width`` bits): ``ports`` are the
    module's other port declarations (``"input wire clk"``), passed through by name;
    ``parameters`` are given to the module as written."""
    decls = [f"    {p}" for p in ports]
    decls += [
        f"    {direction:6} wire {rng}{sig}".rstrip()
        for direction, rng, sig in flat_ports(addr_width)
    ]
    params = ", ".join(f".{k}({v})" for k, v in (parameters or {}).items())
    return (
        "// Test wrapper: the AXI4-Lite pair as flat signals; not for synthesis.\n"
        f"module {name} (\n" + ",\n".join(decls) + "\n);\n"
        f"    fhg_bus_pkg::{REQ_TYPE} s_axil_req;\n"
        f"    fhg_bus_pkg::{RSP_TYPE} s_axil_rsp;\n"
        + pack_flat("s_axil_req", "s_axil_rsp")
        + f"    {module} {'#(' + params + ') ' if params else ''}u_dut (.*);\nendmodule\n"
    )


def _glue() -> str:
    """The response fields as the flat signals peakrdl's AXI4-Lite logic drives (in its
    procedural blocks, which must each own whole variables), joined into the response
    port; the request fields are read where they are (:meth:`signal`)."""
    by_width: dict[int, list[str]] = {}
    for f in struct_fields(RSP_TYPE):
        by_width.setdefault(f.width, []).append(f"s_axil_{f.name}")
    lines = ["// AXI4-Lite: fhg_bus_pkg's struct pair; the response assembled from its fields."]
    lines += [f"logic {_range(w)}{', '.join(names)};" for w, names in sorted(by_width.items())]
    outs = ", ".join(f"s_axil_{f.name}" for f in struct_fields(RSP_TYPE))
    lines.append(f"assign s_axil_rsp = {{{outs}}};")
    return "\n".join(lines) + "\n\n"


@cache
def _request_fields() -> frozenset[str]:
    return frozenset(f.name for f in struct_fields(REQ_TYPE))


@cache
def cpuif_class() -> type[Any]:
    """peakrdl-regblock's flattened AXI4-Lite interface with the struct pair as its ports."""
    from peakrdl_regblock.cpuif.axi4lite import AXI4Lite_Cpuif_flattened

    class StructAxi4LiteCpuif(AXI4Lite_Cpuif_flattened):
        @property
        def port_declaration(self) -> str:
            return (
                f"input fhg_bus_pkg::{REQ_TYPE} s_axil_req,\n"
                f"output fhg_bus_pkg::{RSP_TYPE} s_axil_rsp"
            )

        def signal(self, name: str) -> str:
            if name in _request_fields():
                return f"s_axil_req.{name}"
            return f"s_axil_{name}"

        def get_implementation(self) -> str:
            return _glue() + super().get_implementation()

    return StructAxi4LiteCpuif
