"""Designs without MATLAB: a design YAML -> the ``jasper.per`` MATLAB's frontend writes.

A design file::

    name: pktgen_400g            # the model name (prefix of every gateway)
    platform: generic400g        # platforms/<name>.yaml (`build --platform` overrides it)
    platform_options: {}         # optional: values merged over the platform's YAML
    clock_mhz: 390.625           # the user clock (the XSG block's clk_rate)
    blocks:                      # yellow blocks: name -> type and mask parameters
      gbe0: {type: fourhundred_gbe, port: 0, fab_ip: 10.0.0.10, ...}
      size: {type: sw_reg, io_dir: From Processor, init_val: 8192}
    user_module:                 # the user's HDL in place of the Simulink diagram
      module: fhg_pktgen
      sources: [fhg_pktgen.sv]   # relative to the design file
      clock: clk                 # its clock input (driven by user_clk)
      parameters: {}             # optional HDL parameters
      ports:                     # module port: <block>/<gateway port>
        tx_data: gbe0/tx_data
        size: size/user_data_out

The frontend checks every key (an unknown one is reported with its file, line and the
closest known key), fills in each block's mask defaults, and writes a wrapper module named
after the model whose ports are every block's gateways — as System Generator's netlist
has — connecting the mapped ones to the user module, tying unmapped block inputs to 0.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .toolflow import ToolflowError, jasper_imports

TOP_KEYS = (
    "name",
    "description",
    "platform",
    "platform_options",
    "clock_mhz",
    "blocks",
    "user_module",
)
USER_MODULE_KEYS = ("module", "sources", "clock", "parameters", "ports")


class DesignError(ToolflowError):
    """The design file is invalid; the message names the file, line and key."""


@dataclass
class Node:
    value: Any
    line: int
    keys: dict[str, int]  # mapping key -> its line


def _load(path: Path) -> Any:
    """The YAML document with line numbers: mappings become Node objects."""
    try:
        root = yaml.compose(path.read_text())
    except yaml.YAMLError as exc:
        raise DesignError(f"{path}: not valid YAML: {exc}") from None
    if root is None:
        raise DesignError(f"{path}: empty design file")

    def conv(node: yaml.Node) -> Any:
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            lines: dict[str, int] = {}
            for k, v in node.value:
                key = str(yaml.safe_load(yaml.serialize(k)))
                if key in out:
                    raise DesignError(f"{path}:{k.start_mark.line + 1}: key {key!r} given twice")
                out[key] = conv(v)
                lines[key] = k.start_mark.line + 1
            return Node(out, node.start_mark.line + 1, lines)
        if isinstance(node, yaml.SequenceNode):
            return [conv(v) for v in node.value]
        return yaml.safe_load(yaml.serialize(node))

    return conv(root)


def _plain(value: Any) -> Any:
    if isinstance(value, Node):
        return {k: _plain(v) for k, v in value.value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Design:
    def __init__(
        self, path: Path, platform_dirs: list[Path] | None = None, platform: str | None = None
    ) -> None:
        self.path = Path(path).resolve()
        self.platform_dirs = platform_dirs
        doc = _load(self.path)
        if not isinstance(doc, Node):
            raise DesignError(f"{self.path}: expected a mapping at the top level")
        self._check_keys(doc, TOP_KEYS, "", required=("name", "platform", "blocks"))
        self.name = str(doc.value["name"])
        if not self.name.isidentifier():
            raise DesignError(
                f"{self.path}:{doc.keys['name']}: name {self.name!r} is not a valid identifier"
            )
        # `casper400g build --platform` builds the same design for another platform.
        self.platform = platform or str(doc.value["platform"])
        opts = doc.value.get("platform_options")
        self.platform_options: dict[str, Any] | None = _plain(opts) if opts is not None else None
        self.clock_mhz = doc.value.get("clock_mhz")
        self.doc = doc

    def where(self, line: int) -> str:
        return f"{self.path}:{line}"

    def _check_keys(
        self,
        node: Node,
        allowed: tuple[str, ...] | list[str],
        ctx: str,
        required: tuple[str, ...] = (),
    ) -> None:
        """No key of ``node`` outside ``allowed``, every key of ``required`` present."""
        place = f"{ctx}: " if ctx else ""
        for key, line in node.keys.items():
            if key not in allowed:
                close = difflib.get_close_matches(key, list(allowed), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                known = f"; known keys: {', '.join(allowed)}" if not close else ""
                raise DesignError(f"{self.where(line)}: {place}unknown key {key!r}{hint}{known}")
        for key in required:
            if key not in node.value:
                raise DesignError(f"{self.where(node.line)}: {place}missing key {key!r}")

    # ------------------------------------------------------------------ jasper.per
    def to_jasper_per(self, build_dir: Path) -> Path:
        """Write ``<build_dir>/jasper.per`` (and the wrapper module); return its path."""
        jasper_imports()
        from hw_platform import Platform, PlatformError  # type: ignore[import-not-found]
        from yellow_blocks.yellow_block import BlockError, YellowBlock

        from . import paths

        try:
            plat = Platform(self.platform, self.platform_dirs)
        except PlatformError as exc:
            raise DesignError(f"{self.where(self.doc.keys['platform'])}: {exc}") from None
        if self.platform_options is not None:
            line = self.doc.keys["platform_options"]
            try:
                plat.apply_options(self.platform_options, self.where(line))
            except PlatformError as exc:
                raise DesignError(str(exc)) from None
        if self.clock_mhz is not None:
            plat.user_clk_rate = float(self.clock_mhz)
        clk_rate = float(self.clock_mhz if self.clock_mhz is not None else plat.user_clk_rate)
        blocks_node = self.doc.value["blocks"]
        if not isinstance(blocks_node, Node) or not blocks_node.value:
            raise DesignError(f"{self.where(self.doc.keys['blocks'])}: blocks: expected a mapping")
        model = self.name
        per_blocks: dict[str, dict[str, Any]] = {
            f"{model}/XSG": {
                "name": "XSG",
                "fullpath": f"{model}/XSG",
                "tag": "xps:xsg",
                "hw_sys": f"{plat.name}:{plat.fpga}",
                "clk_src": str(plat.conf.get("clk_src", "user_clk")),
                "clk_rate": clk_rate,
            }
        }
        if self.platform_options is not None:
            per_blocks[f"{model}/XSG"]["platform_options"] = self.platform_options
        gateways: dict[str, tuple[str, int]] = {}  # signal -> (dir seen from block, width)
        for bname, bnode in blocks_node.value.items():
            line = blocks_node.keys[bname]
            ctx = f"blocks.{bname}"
            if not bname.isidentifier():
                raise DesignError(f"{self.where(line)}: block name {bname!r} is not an identifier")
            if not isinstance(bnode, Node) or "type" not in bnode.value:
                raise DesignError(f"{self.where(line)}: {ctx}: needs a mapping with a 'type'")
            btype = str(bnode.value["type"])
            blk = {"name": bname, "fullpath": f"{model}/{bname}", "tag": f"xps:{btype}"}
            try:
                cls = _block_class(btype)
            except BlockError as exc:
                raise DesignError(f"{self.where(bnode.keys['type'])}: {ctx}: {exc}") from None
            allowed = ["type", *(cls.PARAMETERS or {})]
            self._check_keys(bnode, allowed, ctx)
            params = dict(cls.PARAMETERS or {})
            params.update({k: _plain(v) for k, v in bnode.value.items() if k != "type"})
            blk.update(params)
            try:
                obj = YellowBlock.make_block(blk, plat, str(paths.HDL_ROOT))
                obj.drc()
            except (BlockError, ValueError) as exc:
                raise DesignError(f"{self.where(line)}: {exc}") from None
            for suffix, direction, width in obj.gateways():
                gateways[f"{obj.fullname}_{suffix}"] = (direction, width)
            per_blocks[f"{model}/{bname}"] = blk
        user = self._user_module(build_dir, model, gateways)
        build_dir.mkdir(parents=True, exist_ok=True)
        per = {"yellow_blocks": per_blocks, "user_modules": user}
        out = build_dir / "jasper.per"
        text = (
            f"# written by `casper400g build` from {self.path.name} -- the same structure\n"
            "# MATLAB's jasper_frontend writes; `casper400g build` also accepts this file.\n"
        )
        out.write_text(text + yaml.safe_dump(per, sort_keys=False))
        return out

    def _user_module(
        self, build_dir: Path, model: str, gateways: dict[str, tuple[str, int]]
    ) -> dict[str, Any]:
        node = self.doc.value.get("user_module")
        if node is None:
            if gateways:
                raise DesignError(
                    f"{self.path}: the blocks have gateways but the design has no user_module"
                )
            return {}
        if not isinstance(node, Node):
            raise DesignError(f"{self.where(self.doc.keys['user_module'])}: expected a mapping")
        self._check_keys(
            node, USER_MODULE_KEYS, "user_module", required=("module", "sources", "ports")
        )
        module = str(node.value["module"])
        if module == model:
            raise DesignError(
                f"{self.where(node.keys['module'])}: user_module: module may not be named "
                f"like the design ({model}): that name is the generated wrapper's"
            )
        sources = []
        for src in node.value["sources"]:
            p = (self.path.parent / str(src)).resolve()
            if not p.is_file():
                raise DesignError(
                    f"{self.where(node.keys['sources'])}: user_module: source {src} not found "
                    f"(looked for {p})"
                )
            sources.append(p)
        ports_node = node.value["ports"]
        if not isinstance(ports_node, Node):
            raise DesignError(f"{self.where(node.keys['ports'])}: user_module.ports: a mapping")
        conns: dict[str, str] = {}
        used: set[str] = set()
        for port, target in ports_node.value.items():
            line = ports_node.keys[port]
            text = str(target)
            if "/" not in text:
                raise DesignError(
                    f"{self.where(line)}: user_module.ports.{port}: {text!r} is not <block>/<port>"
                )
            blk, gw = text.split("/", 1)
            sig = f"{model}_{blk}_{gw}"
            if sig not in gateways:
                blk_gws = sorted(
                    s[len(model) + len(blk) + 2 :]
                    for s in gateways
                    if s.startswith(f"{model}_{blk}_")
                )
                if not blk_gws:
                    raise DesignError(
                        f"{self.where(line)}: user_module.ports.{port}: no block {blk!r}"
                    )
                close = difflib.get_close_matches(gw, blk_gws, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise DesignError(
                    f"{self.where(line)}: user_module.ports.{port}: block {blk} has no port "
                    f"{gw!r}{hint}"
                )
            if sig in used:
                raise DesignError(
                    f"{self.where(line)}: user_module.ports.{port}: {text} used twice"
                )
            used.add(sig)
            conns[port] = sig
        clock = str(node.value.get("clock", "clk"))
        params = _plain(node.value.get("parameters") or {})
        wrapper = build_dir / "user" / f"{model}.v"
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text(_wrapper_verilog(model, module, clock, params, conns, gateways))
        return {
            model: {
                "clock": "clk",
                "ports": list(gateways),
                "sources": [str(wrapper), *(str(s) for s in sources)],
            }
        }


def _block_class(btype: str) -> Any:
    import importlib

    from yellow_blocks.yellow_block import BlockError

    try:
        module = importlib.import_module(f"yellow_blocks.{btype}")
    except ModuleNotFoundError:
        raise BlockError(f"unknown block type {btype!r} (no yellow_blocks/{btype}.py)") from None
    cls = getattr(module, btype, None)
    if cls is None:
        raise BlockError(f"yellow_blocks/{btype}.py has no class {btype}")
    return cls


def _wrapper_verilog(
    model: str,
    module: str,
    clock: str,
    params: dict[str, Any],
    conns: dict[str, str],
    gateways: dict[str, tuple[str, int]],
) -> str:
    lines = [
        f"// {model}: the design's user logic seen from the toolflow, written by casper400g from",
        "// the design file -- regenerate, do not edit. Its ports are every block's gateways",
        "// (as a System Generator netlist's); unmapped block inputs are tied to 0.",
        "`default_nettype none",
        f"module {model} (",
    ]
    decl = ["    input  wire clk"]
    for sig, (direction, width) in gateways.items():
        # A block input is driven by the user logic: an output here.
        kind = "output" if direction == "in" else "input "
        rng = f"[{width - 1}:0] " if width > 1 else ""
        decl.append(f"    {kind} wire {rng}{sig}")
    lines.append(",\n".join(decl))
    lines.append(");")
    mapped = set(conns.values())
    unused = [s for s, (d, _w) in gateways.items() if d == "out" and s not in mapped]
    for sig, (direction, width) in gateways.items():
        if direction == "in" and sig not in mapped:
            lines.append(f"    assign {sig} = {width}'d0;")
    if unused:
        lines.append("    wire unused_gateways;")
        lines.append(f"    assign unused_gateways = ^{{{', '.join(unused)}}};")
    head = f"    {module}"
    if params:
        plist = ",\n".join(f"        .{k}({v})" for k, v in params.items())
        head += f" #(\n{plist}\n    )"
    lines.append(f"{head} u_user (")
    pl = [f"        .{clock}(clk)"] + [f"        .{p}({s})" for p, s in conns.items()]
    lines.append(",\n".join(pl))
    lines.append("    );")
    lines.append("endmodule")
    lines.append("`default_nettype wire")
    return "\n".join(lines) + "\n"
