"""Read a module's ANSI port list from its source, so the 400GbE block wires exactly the
ports the core declares (the DCMAC-side ports grow with the core)."""

from __future__ import annotations

import re
from pathlib import Path

_DIRS = {"input": "in", "output": "out", "inout": "inout"}


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)


def balanced(text: str, start: int) -> tuple[str, int]:
    """The text inside the parentheses opening at ``start`` and the index after them (also
    what the tests' reader of generated tops uses)."""
    if text[start] != "(":
        raise ValueError("expected '('")
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
    raise ValueError("unbalanced parentheses")


def module_ports(path: Path, module: str) -> dict[str, tuple[str, int]]:
    """``{port: (dir, width)}`` of ``module`` in ``path``, in declaration order.

    Handles the ANSI style the project's RTL uses: ``input wire [N:0] a, b,`` with literal
    ranges. A range that is not two integers raises ValueError naming the port.
    """
    text = _strip_comments(Path(path).read_text())
    m = re.search(rf"\bmodule\s+{re.escape(module)}\b", text)
    if m is None:
        raise ValueError(f"{path}: no module {module}")
    pos = m.end()
    while text[pos].isspace():
        pos += 1
    if text[pos] == "#":
        pos = text.index("(", pos)
        _params, pos = balanced(text, pos)
        while text[pos].isspace():
            pos += 1
    body, _ = balanced(text, pos)
    ports: dict[str, tuple[str, int]] = {}
    direction, width = None, 1
    for item in (s.strip() for s in body.split(",")):
        if not item:
            continue
        words = item.split()
        if words[0] in _DIRS:
            direction = _DIRS[words[0]]
            rng = re.search(r"\[\s*([^:\]]+)\s*:\s*([^\]]+)\]", item)
            if rng:
                try:
                    width = abs(int(rng.group(1)) - int(rng.group(2))) + 1
                except ValueError:
                    raise ValueError(
                        f"{path}: port {words[-1]} of {module} has a non-literal range "
                        f"[{rng.group(1)}:{rng.group(2)}]"
                    ) from None
            else:
                width = 1
        if direction is None:
            raise ValueError(f"{path}: {module}: port {item!r} has no direction")
        name = re.sub(r"\[.*?\]", " ", item).split()[-1]
        ports[name] = (direction, width)
    return ports


def module_parameters(path: Path, module: str) -> list[str]:
    """Names of the (non-local) parameters in ``module``'s ``#(...)`` header."""
    text = _strip_comments(Path(path).read_text())
    m = re.search(rf"\bmodule\s+{re.escape(module)}\b\s*#", text)
    if m is None:
        return []
    params, _ = balanced(text, text.index("(", m.end() - 1))
    names = []
    for item in re.split(r",(?![^(]*\))", params):
        words = re.sub(r"\[.*?\]", " ", item.split("=")[0]).split()
        if words and words[0] == "parameter":
            names.append(words[-1])
    return names


def blackbox_stub(path: Path, module: str) -> str:
    """An empty module with ``module``'s real parameters and ports (for tools that cannot
    or should not read its body, e.g. Yosys and vendor IP)."""
    params = module_parameters(path, module)
    ports = module_ports(path, module)
    kinds = {"in": "input", "out": "output", "inout": "inout"}
    lines = ["(* blackbox *)", f"module {module}"]
    if params:
        lines.append("#(" + ", ".join(f"parameter {p} = 0" for p in params) + ")")
    decl = []
    for name, (direction, width) in ports.items():
        rng = f"[{width - 1}:0] " if width > 1 else ""
        decl.append(f"    {kinds[direction]} wire {rng}{name}")
    lines.append("(\n" + ",\n".join(decl) + "\n);")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


# The 400GbE block's one source list, relative to hdl_sources/.
CORE_FILE_LIST = "fourhundred_gbe/fhg_core.f"


def file_list(path: Path) -> list[Path]:
    """The sources a Verilator ``-F`` style list names, in order: one path per line,
    relative to the list's folder; ``//`` comments and blank lines are skipped. A missing
    source raises ValueError naming the list's line."""
    path = Path(path)
    sources = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        entry = line.split("//", 1)[0].strip()
        if not entry:
            continue
        src = path.parent / entry
        if not src.is_file():
            raise ValueError(f"{path}:{number}: {entry}: no such file")
        sources.append(src)
    return sources
