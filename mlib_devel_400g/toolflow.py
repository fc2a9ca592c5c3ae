"""The jasper middleware and backend: ``jasper.per`` -> build directory.

Stages (each reported through ``progress``):

1. blocks     — the platform (from the ``xps:xsg`` block's ``hw_sys``), one yellow block per
                ``jasper.per`` entry (and their children), design rule checks, requirements;
2. top        — every block's ``modify_top``/``finalize_top``, the user module, the AXI4-Lite
                address map (2^n-aligned, largest first from the platform base) and its
                interconnect -> ``top.v``;
3. software   — ``core_info.tab``, ``memory_map.json`` and the ``.fpg`` header
                (``fpg_header.txt``: ``?register``/``?meta`` lines as casperfpga reads them);
4. constraints and Tcl — ``top.xdc``, ``vivado/build.tcl`` (a Vivado project script with
                every block's commands spliced into its stage);
5. backend    — with ``vivado`` on PATH: run it and pack ``<model>.fpg``; otherwise the
                script is left ready to run (``casper400g mkfpg`` packs the result).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from casperfpga_ext.fpg import FpgBlock, FpgDevice, write_fpg_header

from . import __version__, paths

Progress = Callable[[str], None]


class ToolflowError(RuntimeError):
    """The design cannot be built; the message names the block, key or file at fault."""


def jasper_imports() -> None:
    """Make the stand-in runtime importable the way mlib_devel's is (its dir on sys.path);
    its ``yellow_blocks`` package also holds the overlay's blocks (jasper_library/)."""
    lib = str(paths.JASPER_RUNTIME)
    if lib not in sys.path:
        sys.path.insert(0, lib)


@dataclass
class BuildResult:
    build_dir: Path
    model: str
    platform: str
    blocks: list[Any]
    top_v: Path
    sources: list[Path]
    devices: list[FpgDevice]
    fpg_header: Path
    fpg: Path | None = None
    script: Path | None = None
    interfaces: list[Any] = field(default_factory=list)


def load_jasper_per(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ToolflowError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("yellow_blocks"), dict):
        raise ToolflowError(f"{path}: no 'yellow_blocks' mapping (is this a jasper.per file?)")
    return data


class Toolflow:
    def __init__(
        self,
        jasper_per: Path,
        build_dir: Path,
        platform_dirs: list[Path] | None = None,
        progress: Progress | None = print,
    ) -> None:
        self.jasper_per = Path(jasper_per)
        self.build_dir = Path(build_dir)
        self.platform_dirs = platform_dirs
        self.say: Progress = progress or (lambda _m: None)
        jasper_imports()

    # ------------------------------------------------------------------ stage 1
    def make_blocks(self) -> tuple[Any, list[Any], dict[str, Any]]:
        from hw_platform import Platform, PlatformError  # type: ignore[import-not-found]
        from yellow_blocks.yellow_block import BlockError, YellowBlock

        per = load_jasper_per(self.jasper_per)
        entries: dict[str, dict[str, Any]] = per["yellow_blocks"]
        xsg = [(k, v) for k, v in entries.items() if v.get("tag") == "xps:xsg"]
        if len(xsg) != 1:
            raise ToolflowError(
                f"{self.jasper_per}: a design needs exactly one platform block (xps:xsg), "
                f"found {len(xsg)}"
            )
        xsg_path, xsg_blk = xsg[0]
        hw_sys = str(xsg_blk.get("hw_sys", ""))
        # MATLAB's platform blocks name the board in capitals (VPK180:xcvp1802); mlib_devel
        # looks the YAML up in lower case, as here.
        plat_name = hw_sys.split(":")[0].lower()
        if not plat_name:
            raise ToolflowError(f"{xsg_path}: hw_sys {hw_sys!r} names no platform")
        try:
            plat = Platform(plat_name, self.platform_dirs)
            plat.apply_options(xsg_blk.get("platform_options"), f"{xsg_path}")
        except PlatformError as exc:
            raise ToolflowError(str(exc)) from None
        if "clk_rate" in xsg_blk:
            try:
                plat.user_clk_rate = float(xsg_blk["clk_rate"])
            except (TypeError, ValueError):
                raise ToolflowError(
                    f"{xsg_path}: clk_rate {xsg_blk['clk_rate']!r} is not a number (MHz)"
                ) from None
        hdl_root = str(paths.HDL_ROOT)
        for key, blk in entries.items():
            if blk.get("tag") == "xps:ip":
                raise ToolflowError(
                    f"{key}: System Generator IP (xps:ip) needs MATLAB/Vivado's sysgen; "
                    "write the user logic as a user module (HDL) instead"
                )
        # mlib_devel's order: the jasper.per blocks sorted by path (the XSG block among
        # them), then their children generation by generation (the platform's block is the
        # XSG block's child, the system block the platform block's). Blocks add their bus
        # devices in this order, which the address map follows.
        blocks: list[Any] = []
        try:
            parents = [YellowBlock.make_block(entries[k], plat, hdl_root) for k in sorted(entries)]
            while parents:
                blocks.extend(parents)
                parents = [c for b in parents for c in b.gen_children()]
            for blk in blocks:
                support = blk.platform_support
                if not (
                    support in ("all", plat.name)
                    or (isinstance(support, (list, tuple)) and plat.name in support)
                ):
                    raise BlockError(f"{blk.fullpath}: not supported on platform {plat.name}")
                blk.drc()
        except (BlockError, ValueError) as exc:
            raise ToolflowError(str(exc)) from None
        self._check_requirements(plat, blocks)
        return plat, blocks, per

    @staticmethod
    def _check_requirements(plat: Any, blocks: list[Any]) -> None:
        provided = set(plat.provides)
        for b in blocks:
            provided.update(b.provides)
        for b in blocks:
            # mlib_devel's rule: exclusive requirements must be provided too.
            for req in [*b.requires, *b.exc_requires]:
                if req not in provided:
                    raise ToolflowError(f"{b.fullpath}: requires {req!r}, which nothing provides")
        owner: dict[str, Any] = {}
        for b in blocks:
            for res in b.exc_requires:
                if res in owner:
                    raise ToolflowError(
                        f"{res} is used by both {owner[res].fullpath} and {b.fullpath}; "
                        "each may be used by one block only"
                    )
                owner[res] = b

    # ------------------------------------------------------------------ stage 2
    def make_top(self, plat: Any, blocks: list[Any], per: dict[str, Any]) -> Any:
        from verilog import VerilogError, VerilogModule  # type: ignore[import-not-found]

        top = VerilogModule("top")
        try:
            for b in blocks:
                b.modify_top(top)
            # mlib_devel's order: the interconnect takes the maps, then the user module and
            # every finalize_top.
            top.hand_maps_to_bus()
            self._user_modules(top, per)
            for b in blocks:
                top = b.finalize_top(top)
                if top is None:
                    raise ToolflowError(
                        f"{b.fullpath}: finalize_top returned nothing (mlib_devel's contract: "
                        "it returns the top level, usually the one it was given)"
                    )
            top.assign_addresses(plat.mmbus_base_address, plat.mmbus_address_window)
            top.add_axi4lite_interconnect("M_AXI_", "axil_clk", "axil_rst_n")
        except (VerilogError, ValueError) as exc:  # blocks' own errors name the block
            raise ToolflowError(str(exc)) from None
        return top

    def _user_modules(self, top: Any, per: dict[str, Any]) -> None:
        for name, mod in (per.get("user_modules") or {}).items():
            inst = top.get_instance(name, f"{name}_inst")
            clock = mod.get("clock")
            if clock:
                inst.add_port(str(clock), "user_clk", parent_sig=False)
            for port in mod.get("ports") or []:
                if port not in top.signals and port not in top.ports:
                    raise ToolflowError(
                        f"user module {name}: port {port} matches no block's gateway "
                        "(gateways are <model>_<block>_<port>)"
                    )
                inst.add_port(port, port)

    # ------------------------------------------------------------------ all of it
    def run(self, backend: str = "auto") -> BuildResult:
        t0 = time.monotonic()
        out = self.build_dir
        out.mkdir(parents=True, exist_ok=True)
        copy = out / "jasper.per"
        if not copy.exists() or not copy.samefile(self.jasper_per):
            shutil.copyfile(self.jasper_per, copy)
        self.say(f"[blocks] reading {self.jasper_per}")
        plat, blocks, per = self.make_blocks()
        model = blocks[0].fullpath.split("/")[0]
        for b in blocks:
            self.say(f"         {b.fullpath:<32} {b.tag}")
        self.say(f"         platform {plat.name} ({plat.fpga}); design rule checks passed")

        self.say("[top]    building top.v")
        top = self.make_top(plat, blocks, per)
        header = (
            f"top level of {model} on {plat.name}, written by casper400g {__version__} "
            "from jasper.per -- regenerate, do not edit"
        )
        top_v = out / "top.v"
        top_v.write_text(top.gen_top_verilog(header))
        sources = self._sources(blocks, per)
        (out / "sources.txt").write_text("".join(f"{p}\n" for p in sources))
        self.say(
            f"         {len(top.instances)} instances, {len(top.ports)} top-level ports, "
            f"{len(sources)} HDL sources"
        )
        ifaces = sorted(top.axi4lite_interfaces.values(), key=lambda i: i.base)
        for i in ifaces:
            self.say(f"         {i.regname:<24} {i.base:#010x}  {i.size:#8x} bytes")

        self.say("[sw]     core_info.tab, memory_map.json, fpg_header.txt")
        entries = core_info_entries(ifaces)
        devices = [FpgDevice(name, base, nbytes) for name, _m, base, nbytes, _t, _a in entries]
        self._write_core_info(out, entries)
        self._write_memory_map(out / "memory_map.json", ifaces)
        # The XSG and platform blocks and the system block carry no ?meta of their own.
        metas = [
            FpgBlock(b.unique_name, b.tag, meta)
            for b in blocks
            if b.tag not in ("xps:xsg", f"xps:{plat.name}") and (meta := b.meta())
        ]
        metas.append(FpgBlock("77777", "77777", {"77777": "77777"}))
        fpg_header = out / "fpg_header.txt"
        header_bytes = write_fpg_header(devices, metas)
        fpg_header.write_bytes(header_bytes)
        # What MATLAB's frontend writes beside jasper.per for mlib_devel's mkfpg: the ?meta
        # lines without their prefix (design_info.tab) and the revision lines (none here).
        prefix = "?meta\t"
        meta_lines = [ln for ln in header_bytes.decode().splitlines() if ln.startswith(prefix)]
        (out / "design_info.tab").write_text("".join(ln[len(prefix) :] + "\n" for ln in meta_lines))
        (out / "git_info.tab").write_text("")

        stubs = self._write_lint_stubs(blocks)
        if stubs:
            self.say(f"         {len(stubs)} black box(es) of vendor IP for lint: lint/stubs/")
        self.say("[xdc]    constraints and Vivado Tcl")
        xdc = self._constraints(plat, blocks)
        (out / "top.xdc").write_text(xdc)
        script = self._vivado_script(plat, blocks, sources, model)
        result = BuildResult(
            out,
            model,
            plat.name,
            blocks,
            top_v,
            sources,
            devices,
            fpg_header,
            script=script,
            interfaces=ifaces,
        )
        self._backend(result, backend)
        self.say(f"done in {time.monotonic() - t0:.1f} s: {out}")
        return result

    def _write_lint_stubs(self, blocks: list[Any]) -> list[Path]:
        """Port-only modules of vendor IP (block design wrappers) that a block instantiates,
        from its ``lint_stubs()`` ({file name: Verilog}); :func:`lint` reads them."""
        d = self.build_dir / "lint" / "stubs"
        if d.is_dir():
            for old in d.glob("*.v"):
                old.unlink()
        out: list[Path] = []
        for b in blocks:
            for name, text in (getattr(b, "lint_stubs", dict)() or {}).items():
                d.mkdir(parents=True, exist_ok=True)
                path = d / name
                if path in out:
                    raise ToolflowError(f"{b.fullpath}: lint stub {name} written twice")
                path.write_text(text)
                out.append(path)
        return out

    def _sources(self, blocks: list[Any], per: dict[str, Any]) -> list[Path]:
        from yellow_blocks.yellow_block import BlockError

        seen: dict[Path, None] = {}
        try:
            for b in blocks:
                for p in b.source_files():
                    seen[p.resolve()] = None
        except BlockError as exc:
            raise ToolflowError(str(exc)) from None
        # The runtime's bus decoder (mlib_devel generates its own with xml2vhdl) and the
        # AXI4-Lite pair the top joins it to every slave with.
        seen[(paths.RUNTIME_HDL / "fhg_toolflow" / "fhg_axil_interconnect.sv").resolve()] = None
        seen[(paths.FHG_HDL / "common" / "fhg_bus_pkg.sv").resolve()] = None
        base = self.jasper_per.parent
        for name, mod in (per.get("user_modules") or {}).items():
            for src in mod.get("sources") or []:
                p = Path(src) if Path(src).is_absolute() else base / src
                if not p.is_file():
                    raise ToolflowError(f"user module {name}: source {src} not found")
                seen[p.resolve()] = None
        # Packages first: Vivado and Verilator read files in order.
        return sorted(seen, key=lambda p: (not p.name.endswith("_pkg.sv"),))

    @staticmethod
    def _write_core_info(out: Path, entries: list[CoreInfo]) -> None:
        """``core_info.tab`` and ``core_info.jam.tab`` in mlib_devel's layout (name, mode
        1/2/3 for r/w/rw, base and size in hex; the .jam table adds the typecode)."""
        # Column width from the devices, not their register aliases (as mlib_devel's).
        width = max((len(n) for n, _m, _b, _s, _t, alias in entries if not alias), default=1)
        tab = "".join(f"{n:{width}} {m:1} {b:<16x} {sz:<16x}\n" for n, m, b, sz, _t, _a in entries)
        jam = "".join(
            f"{n:{width}} {m:1} {b:<16x} {sz:<16x} {t:<2x}\n" for n, m, b, sz, t, _a in entries
        )
        (out / "core_info.tab").write_text(tab)
        (out / "core_info.jam.tab").write_text(jam)

    @staticmethod
    def _write_memory_map(path: Path, ifaces: list[Any]) -> None:
        doc = []
        for i in ifaces:
            doc.append(
                {
                    "name": i.regname,
                    "base": i.base,
                    "size": i.size,
                    "mode": i.mode,
                    "typecode": i.typecode,
                    "registers": [
                        {
                            "name": r.name,
                            "address": i.base + r.offset,
                            "offset": r.offset,
                            "nbytes": r.nbytes,
                            "mode": r.mode,
                            "ram": r.ram,
                            "default": r.default_val,
                        }
                        # Software's names for them, or for a device listed as one
                        # entry what its bus took.
                        for r in (i.memory_map or i.bus_map)
                    ],
                }
            )
        path.write_text(json.dumps(doc, indent=1) + "\n")

    @staticmethod
    def _constraints(plat: Any, blocks: list[Any]) -> str:
        from constraints import (  # type: ignore[import-not-found]
            ClockGroupConstraint,
            ConstraintError,
            PortConstraint,
        )

        lines: list[str] = []
        try:
            for b in blocks:
                cons = b.gen_constraints()
                if not cons:
                    continue
                lines.append(f"# {b.fullpath} ({b.tag})")
                for c in cons:
                    if isinstance(c, (PortConstraint, ClockGroupConstraint)):
                        c.resolve(plat)
                    for line in c.gen_xdc():
                        if line not in lines:
                            lines.append(line)
        except ConstraintError as exc:
            raise ToolflowError(str(exc)) from None
        for extra in plat.constraints:
            lines.append(f"# platform constraints: {extra}")
            lines.append(f"read_xdc {extra}")
        return "\n".join(lines) + "\n"

    def _vivado_script(self, plat: Any, blocks: list[Any], sources: list[Path], model: str) -> Path:
        from yellow_blocks.yellow_block import TCL_STAGES

        stages: dict[str, list[str]] = {s: [] for s in TCL_STAGES}
        for b in blocks:
            for stage, cmds in (b.gen_tcl_cmds() or {}).items():
                if stage not in stages:
                    raise ToolflowError(
                        f"{b.fullpath}: Tcl stage {stage!r} is not one of {', '.join(TCL_STAGES)}"
                    )
                stages[stage].extend(cmds)
        versal = plat.family == "versal"
        image = "top.pdi" if versal else "top.bit"
        # mlib_devel's backend variables, which blocks' Tcl uses: the implementation run's
        # directory, the image mkfpg packs, the .xsa, and the platform block design.
        jbd = f"{plat.name}_bd"
        t: list[str] = [
            f"# Vivado project for {model} on {plat.name}: vivado -mode batch -source build.tcl",
            "# Stages are marked `casper400g-stage: <name>` in the log.",
            "set here [file dirname [file normalize [info script]]]",
            'proc stage {name} { puts "casper400g-stage: $name" }',
            "stage init",
            "set impl_dir $here",
            "set bin_file [file join $impl_dir top.bin]",
            "set bit_file [file join $impl_dir top.bit]",
            "set xsa_file [file join $impl_dir top.xsa]",
            f'set jbd_name "{jbd}"',
            f"create_project -force {model} $here/project -part {plat.fpga}",
            "set_property target_language Verilog [current_project]",
        ]
        if stages["create_bd"]:
            # As mlib_devel: the platform's block design exists from the start; blocks fill
            # it in create_bd; it is saved, validated and generated before synthesis.
            t += ["create_bd_design $jbd_name", "current_bd_design $jbd_name"]
        for src in sources:
            t.append(f"add_files -norecurse {{{src}}}")
        t.append("add_files -norecurse $here/../top.v")
        # The top joins the bus decoder to its slaves with fhg_bus_pkg's AXI4-Lite pair.
        t.append("set_property file_type SystemVerilog [get_files $here/../top.v]")
        t.append("set_property top top [current_fileset]")
        t.append("add_files -fileset constrs_1 -norecurse $here/../top.xdc")

        def stage(name: str, default: list[str] | None = None) -> None:
            # A stage's own commands (the blocks' Tcl), else what the toolflow runs there.
            t.append(f"stage {name}")
            t.extend(stages[name] or default or [])

        def require_complete(run: str, what: str) -> None:
            t.append(
                f'if {{[get_property PROGRESS [get_runs {run}]] != "100%"}} '
                f'{{ error "{what} failed" }}'
            )

        t.extend(stages["init"])
        stage("create_bd")
        t.append("stage pre_synth")
        if stages["create_bd"]:
            t += [
                "current_bd_design [get_bd_designs $jbd_name]",
                "save_bd_design",
                "validate_bd_design",
                "generate_target all [get_files $jbd_name.bd]",
            ]
        t.extend(stages["pre_synth"])
        stage("synth", ["launch_runs synth_1 -jobs 8", "wait_on_run synth_1"])
        require_complete("synth_1", "synthesis")
        stage("post_synth")
        stage("pre_impl")
        stage("impl", ["launch_runs impl_1 -to_step route_design -jobs 8", "wait_on_run impl_1"])
        require_complete("impl_1", "implementation")
        t.append("open_run impl_1")
        t.append("report_timing_summary -file $here/timing_summary.rpt")
        stage("post_impl")
        stage("pre_bitgen")
        write_image = "write_device_image" if versal else "write_bitstream"
        stage("bitgen", [f"{write_image} -force $impl_dir/{image}"])
        stage("post_bitgen")
        stage("prom_gen")
        t.append("stage done")
        vdir = self.build_dir / "vivado"
        vdir.mkdir(exist_ok=True)
        path = vdir / "build.tcl"
        path.write_text("\n".join(t) + "\n")
        return path

    def _backend(self, result: BuildResult, backend: str) -> None:
        vivado = shutil.which("vivado")
        if backend == "vivado" and vivado is None:
            raise ToolflowError("--backend vivado: no `vivado` on PATH (source settings64.sh)")
        if backend == "none" or (backend == "auto" and vivado is None):
            rel = result.script
            self.say("[backend] Vivado not run" + (" (not on PATH)" if vivado is None else ""))
            self.say(
                f"          ready to run: cd {rel.parent} && vivado -mode batch -source build.tcl"
            )
            self.say(f"          then pack the image: casper400g mkfpg {result.build_dir}")
            return
        self.say(f"[backend] running {vivado} (log: {result.script.parent / 'vivado.log'})")
        with (result.script.parent / "vivado.log").open("w") as log:
            proc = subprocess.Popen(
                [vivado, "-mode", "batch", "-nojournal", "-source", "build.tcl"],
                cwd=result.script.parent,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                if line.startswith("casper400g-stage:"):
                    self.say(f"          {line.split(':', 1)[1].strip()}")
            if proc.wait() != 0:
                raise ToolflowError(f"Vivado failed; see {result.script.parent / 'vivado.log'}")
        result.fpg = mkfpg(result.build_dir, progress=self.say)


MODES = {"rw": 3, "r": 1, "w": 2}


# (name, mode, base, nbytes, typecode, is a register alias)
CoreInfo = tuple[str, int, int, int, int, bool]


def core_info_entries(ifaces: list[Any]) -> list[CoreInfo]:
    """One entry per device in address order, each followed by ``<device>_<register>`` for
    every register its map holds (mlib_devel's core_info rule; the bus has emptied the
    maps of raw devices, software registers and RAMs, see ``hand_maps_to_bus``). A name
    given twice, or a register outside its device, is an error."""
    out: list[CoreInfo] = []
    for i in sorted(ifaces, key=lambda i: i.base):
        out.append((i.regname, MODES[i.mode], i.base, i.nbytes, i.typecode, False))
        for r in i.memory_map:
            if r.offset + r.nbytes > i.nbytes:
                raise ToolflowError(
                    f"{i.regname}: register {r.name} at {r.offset:#x}+{r.nbytes:#x} lies "
                    f"outside the device's {i.nbytes:#x} bytes"
                )
            name = f"{i.regname}_{r.name}"
            out.append((name, MODES[r.mode], i.base + r.offset, r.nbytes, i.typecode, True))
    seen: dict[str, int] = {}
    for name, *_ in out:
        seen[name] = seen.get(name, 0) + 1
    twice = sorted(n for n, count in seen.items() if count > 1)
    if twice:
        raise ToolflowError(f"two memory-mapped devices are called {', '.join(twice)}")
    return out


def image_path(build_dir: Path) -> Path:
    """The device image: ``top.bin`` (mlib_devel's ``$bin_file``, which a platform block
    fills), else ``top.pdi`` or ``top.bit`` as written."""
    for name in ("top.bin", "top.pdi", "top.bit"):
        p = build_dir / "vivado" / name
        if p.is_file():
            return p
    raise ToolflowError(f"{build_dir / 'vivado'}: no top.bin, top.pdi or top.bit (has Vivado run?)")


def mkfpg(build_dir: Path, image: Path | None = None, progress: Progress | None = print) -> Path:
    """``<model>.fpg`` = the build's header + the gzipped device image."""
    import gzip

    build_dir = Path(build_dir)
    header = build_dir / "fpg_header.txt"
    if not header.is_file():
        raise ToolflowError(f"{build_dir}: no fpg_header.txt (not a casper400g build directory)")
    image = image or image_path(build_dir)
    per = load_jasper_per(build_dir / "jasper.per")
    model = next(
        (k.split("/")[0] for k, v in per["yellow_blocks"].items() if v.get("tag") == "xps:xsg"),
        "design",
    )
    stamp = time.strftime("%Y-%m-%d_%H%M", time.localtime())
    out = build_dir / f"{model}_{stamp}.fpg"
    out.write_bytes(header.read_bytes() + gzip.compress(image.read_bytes()))
    if progress:
        progress(f"[mkfpg]  {out} ({out.stat().st_size:,} bytes)")
    return out


# The core's own RTL (and PeakRDL's register block) is checked by its tests with the
# project's warning set; these -Wall style rules are waived for it here, nothing else.
CORE_LINT_WAIVERS = (
    "WIDTHEXPAND",
    "WIDTHTRUNC",
    "UNUSEDSIGNAL",
    "UNUSEDPARAM",
    "PINCONNECTEMPTY",
    "MULTIDRIVEN",  # PeakRDL's struct-field always_comb blocks
)


def lint(build_dir: Path, stubs: list[Path] | None = None) -> subprocess.CompletedProcess[str]:
    """``verilator --lint-only -Wall`` of a build's ``top.v`` with every source.

    The generated top, the user wrapper, the toolflow's and the user's RTL get -Wall with no
    exception; the core's library RTL gets :data:`CORE_LINT_WAIVERS`. ``stubs`` are
    blackbox modules (vendor IP with its port list) read in place of the IP; the build's own
    ``lint/stubs/*.v`` (written from the blocks' ``lint_stubs()``) are always read.
    """
    from . import verilator

    build_dir = Path(build_dir)
    try:
        verilator.setup_verilator_env()
    except verilator.VerilatorNotFound as exc:
        raise ToolflowError(f"lint: {exc}") from None
    listing = build_dir / "sources.txt"
    if not listing.is_file():
        raise ToolflowError(f"{build_dir}: no sources.txt (run the build first)")
    sources = [Path(line) for line in listing.read_text().splitlines() if line]
    waiver = build_dir / "lint" / "core_waivers.vlt"
    waiver.parent.mkdir(exist_ok=True)
    lines = ["`verilator_config"]
    core_dir = paths.FHG_HDL
    for rule in CORE_LINT_WAIVERS:
        lines.append(f'lint_off -rule {rule} -file "{core_dir}/*"')
    waiver.write_text("\n".join(lines) + "\n")
    cmd = [
        "verilator",
        "--lint-only",
        "-Wall",
        "--top-module",
        "top",
        str(waiver),
        *(str(s) for s in [*sorted((build_dir / "lint" / "stubs").glob("*.v")), *(stubs or [])]),
        *(str(s) for s in sources),
        str(build_dir / "top.v"),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=build_dir)


# Read by Yosys only as blackboxes: the core's top carries PeakRDL's unpacked structs,
# which the Yosys front end cannot read (in a checkout `python -m casper400g_dev synth`
# estimates the core's TX path).
SYNTH_BLACKBOXES = (("fourhundred_gbe/fhg_core.sv", "fhg_core"),)


def synth(
    build_dir: Path,
    progress: Progress | None = print,
    flatten: bool = True,
    blackboxes: Sequence[str] = (),
) -> dict[str, Any]:
    """Yosys ``synth_xilinx -family xcup`` of a build's ``top.v`` (core blackboxed).

    ``blackboxes`` keeps further modules of the design as empty boxes: an estimate of the
    rest that does not wait for a large user block (its own figure is a separate run)."""
    from . import synth as yosys

    jasper_imports()
    from yellow_blocks.fourhundred_gbe_hdl import blackbox_stub

    build_dir = Path(build_dir)
    sources = [Path(p) for p in (build_dir / "sources.txt").read_text().split()]
    skip = {(paths.HDL_ROOT / rel).resolve() for rel, _m in SYNTH_BLACKBOXES}
    files = _reachable(
        [s for s in sources if s not in skip and s.parent != paths.REGS_DIR],
        build_dir / "top.v",
    )
    stub_dir = build_dir / "synth"
    stub_dir.mkdir(exist_ok=True)
    for rel, module in SYNTH_BLACKBOXES:
        stub = stub_dir / f"{module}_blackbox.v"
        stub.write_text(blackbox_stub(paths.HDL_ROOT / rel, module))
        files.append(stub)
    files.append(build_dir / "top.v")
    try:
        return yosys.run(
            top="top",
            params={},
            flatten=flatten,
            blackboxes=tuple(blackboxes),
            files=files,
            progress=progress,
            log_file=stub_dir / "yosys.log",
        )
    except yosys.SynthError as exc:
        raise ToolflowError(f"Yosys: {exc}") from None


def _reachable(files: list[Path], top: Path) -> list[Path]:
    """The files defining modules that ``top`` instantiates, directly or below, after the
    packages any of them use (``pkg::name`` or ``import pkg::*``), packages in the order
    of ``files`` so one package may use another."""
    import re

    from .synth import defined_modules

    where = defined_modules(files)
    packages: dict[str, Path] = {}
    for path in files:
        for m in re.finditer(r"^\s*package\s+(\w+)\s*;", path.read_text(), re.M):
            packages[m.group(1)] = path
    inst = re.compile(r"^\s*(\w+)\s+(?:#\s*\(|\w+\s*\()", re.M)
    uses = re.compile(r"\b(\w+)::")
    need: list[Path] = []
    used: set[Path] = set()
    todo = [top]
    while todo:
        text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", todo.pop().read_text(), flags=re.S)
        for m in uses.finditer(text):
            pkg = packages.get(m.group(1))
            if pkg is not None and pkg not in used:
                used.add(pkg)
                todo.append(pkg)
        for m in inst.finditer(text):
            path = where.get(m.group(1))
            if path is not None and path not in need:
                need.append(path)
                todo.append(path)
    return [f for f in files if f in used] + [f for f in need if f not in used]
