"""Reading the two generators' top.v files (mlib_devel's and the stand-in runtime's) into
comparable structures, and VHDL entities into Verilog black boxes for Verilator.

Both generators write plain structural Verilog: an ANSI port list, wire declarations,
``assign`` statements and named-port instances (``.port(signal)``); this reads that subset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlib_devel_400g.toolflow import jasper_imports

jasper_imports()
from yellow_blocks.fourhundred_gbe_hdl import balanced  # noqa: E402

_IDENT = r"[A-Za-z_][A-Za-z0-9_$]*"
_KEYWORDS = {"module", "wire", "assign", "input", "output", "inout", "endmodule", "reg"}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"\(\*.*?\*\)", " ", text, flags=re.S)  # attributes (* keep = "true" *)
    return re.sub(r"//[^\n]*", " ", text)


def _width(rng: str | None) -> int:
    if not rng:
        return 1
    hi, lo = (int(x) for x in re.fullmatch(r"\[\s*(\d+)\s*:\s*(\d+)\s*\]", rng.strip()).groups())
    return abs(hi - lo) + 1


def _named(body: str) -> dict[str, str]:
    """``.name(value), ...`` -> {name: value} (values with spaces squeezed)."""
    out = {}
    i = 0
    while True:
        m = re.compile(rf"\.\s*({_IDENT})\s*").search(body, i)
        if m is None:
            return out
        value, i = balanced(body, m.end())
        out[m.group(1)] = " ".join(value.split())


@dataclass
class Instance:
    module: str
    params: dict[str, str] = field(default_factory=dict)
    conns: dict[str, str] = field(default_factory=dict)


@dataclass
class Top:
    ports: dict[str, tuple[str, int]]  # name -> (in/out/inout, width)
    wires: dict[str, int]
    assigns: list[tuple[str, str]]
    instances: dict[str, Instance]


def parse_top(text: str, module: str = "top") -> Top:
    text = strip_comments(text)
    m = re.search(rf"\bmodule\s+{module}\s*", text)
    assert m, f"no module {module}"
    header, pos = balanced(text, m.end())
    ports: dict[str, tuple[str, int]] = {}
    for item in header.split(","):
        pm = re.fullmatch(
            rf"\s*(input|output|inout)\s+(?:wire\s+)?(\[\s*\d+\s*:\s*\d+\s*\])?\s*({_IDENT})\s*",
            item,
        )
        assert pm, f"port declaration {item!r}"
        ports[pm.group(3)] = (
            {"input": "in", "output": "out"}.get(pm.group(1), "inout"),
            _width(pm.group(2)),
        )
    body = text[pos : text.index("endmodule", pos)]
    wires = {
        w.group(2): _width(w.group(1))
        for w in re.finditer(rf"\bwire\s+(\[\s*\d+\s*:\s*\d+\s*\])?\s*({_IDENT})\s*;", body)
    }
    assigns = [
        (a.group(1).strip(), " ".join(a.group(2).split()))
        for a in re.finditer(r"\bassign\s+([^=]+?)\s*=\s*([^;]+);", body)
    ]
    instances: dict[str, Instance] = {}
    for im in re.finditer(rf"(?m)^\s*({_IDENT})\s*(#\s*\(|{_IDENT}\s*\()", body):
        if im.group(1) in _KEYWORDS:
            continue
        i = im.end(1)
        params: dict[str, str] = {}
        rest = body[i:].lstrip()
        i = len(body) - len(rest)
        if rest.startswith("#"):
            inner, i = balanced(body, body.index("(", i))
            params = _named(inner)
        nm = re.compile(rf"\s*({_IDENT})\s*").match(body, i)
        assert nm, body[i : i + 80]
        conns, _end = balanced(body, nm.end())
        instances[nm.group(1)] = Instance(im.group(1), params, _named(conns))
    return Top(ports, wires, assigns, instances)


def vhdl_blackbox(text: str, entity: str) -> str:
    """A Verilog black box with the ports (and integer/vector generics) of VHDL ``entity``."""
    text = re.sub(r"--[^\n]*", " ", text)
    m = re.search(rf"(?is)\bentity\s+{entity}\s+is\b", text)
    assert m, f"no entity {entity}"
    params: list[str] = []
    pos = m.end()
    g = re.compile(r"(?is)\s*generic\s*").match(text, pos)
    if g:
        inner, pos = balanced(text, g.end())
        for item in inner.split(";"):
            gm = re.fullmatch(r"(?is)\s*(\w+)\s*:\s*[\w\s]+?(?::=\s*(.+?))?\s*", item)
            if not gm:
                continue
            value = (gm.group(2) or "0").strip()
            hexv = re.fullmatch(r'(?i)x"([0-9a-f]+)"', value)
            if hexv:
                value = f"{4 * len(hexv.group(1))}'h{hexv.group(1)}"
            elif not re.fullmatch(r"-?\d+", value):
                value = "0"
            params.append(f"parameter {gm.group(1)} = {value}")
        pos = text.index(";", pos) + 1
    p = re.compile(r"(?is)\s*port\s*").match(text, pos)
    assert p, f"entity {entity}: no port list"
    inner, _ = balanced(text, p.end())
    decls = []
    for item in inner.split(";"):
        pm = re.fullmatch(r"(?is)\s*([\w\s,]+?)\s*:\s*(in|out|inout)\s+(.+?)\s*", item)
        if not pm:
            continue
        rng = ""
        vm = re.search(r"(?is)\((.+?)\s+downto\s+(.+?)\)", pm.group(3))
        if vm:
            rng = f"[{vm.group(1).strip()}:{vm.group(2).strip()}] "
        kind = {"in": "input", "out": "output", "inout": "inout"}[pm.group(2).lower()]
        for name in pm.group(1).split(","):
            decls.append(f"    {kind} wire {rng}{name.strip()}")
    head = f"module {entity}" + (" #(" + ", ".join(params) + ")" if params else "")
    return (
        "/* verilator lint_off UNDRIVEN */\n/* verilator lint_off UNUSEDSIGNAL */\n"
        "/* verilator lint_off UNUSEDPARAM */\n"
        f"(* blackbox *)\n{head} (\n" + ",\n".join(decls) + "\n);\nendmodule\n"
        "/* verilator lint_on UNUSEDPARAM */\n"
        "/* verilator lint_on UNUSEDSIGNAL */\n/* verilator lint_on UNDRIVEN */\n"
    )
