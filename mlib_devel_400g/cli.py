"""The `casper400g` command line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from . import __version__
from .paths import NotACheckout


def _regenerate(command: str, files: dict[Any, str], check: bool) -> int:
    """Write ``files`` where they changed, or with ``check`` only report the stale ones."""
    from .generated import stale_files, write_files

    if check:
        stale = stale_files(files)
        if stale:
            print(f"stale generated files (run `casper400g {command}` and commit them):")
            for rel in stale:
                print(f"  {rel}")
            return 1
        print(f"{len(files)} generated files are up to date")
        return 0
    changed = write_files(files)
    for rel in files:
        print(f"  {'wrote' if rel in changed else 'same '} {rel}")
    return 0


def _cmd_simulink_gen(args: argparse.Namespace) -> int:
    from . import paths, simulink_gen

    paths.require_source_tree()
    return _regenerate("simulink-gen", simulink_gen.render_all(), args.check)


def _dev_tools() -> None:
    """Put the checkout's developer tools on sys.path, or say why they are not there."""
    from . import paths

    paths.require_source_tree()


def _cmd_regs(args: argparse.Namespace) -> int:
    _dev_tools()
    from casper400g_dev import checkout, regs_gen

    from . import paths

    print(f"compiling {paths.REGS_RDL.relative_to(checkout.ROOT)}", flush=True)
    return _regenerate("regs", regs_gen.render_all(), args.check)


def _cmd_demo(args: argparse.Namespace) -> int:
    _dev_tools()
    from casper400g_dev import demo

    return demo.run(verbose=args.verbose)


def _cmd_twin(args: argparse.Namespace) -> int:
    _dev_tools()
    from casper400g_dev.twin import run

    return run.run(args)


def _cmd_soak(args: argparse.Namespace) -> int:
    _dev_tools()
    from casper400g_dev.twin import soak

    return soak.run(args)


def _cmd_bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    _dev_tools()
    if args.what == "twin":
        from casper400g_dev.twin import bench as bench_twin

        return bench_twin.run(
            seconds=args.seconds,
            threads=args.threads,
            network=args.network,
            out_json=Path(args.json) if args.json else None,
        )
    from casper400g_dev import bench_tx

    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else None
    return bench_tx.run(
        sizes=sizes,
        frames=args.frames,
        verbose=args.verbose,
        out_json=Path(args.json) if args.json else None,
    )


def _cmd_synth(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from . import synth

    if args.timing:
        return _synth_timing(args)
    try:
        result = synth.run(top=args.top, flatten=args.flatten)
    except synth.SynthError as exc:
        print(f"synth: {exc}", file=sys.stderr)
        return 1
    synth.print_table(result)
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def _synth_timing(args: argparse.Namespace) -> int:
    """`synth --timing`: logic levels between registers, per top (`--top core`: all)."""
    import json
    from pathlib import Path

    from . import synth, timing

    tops = list(synth.TIMING_TOPS) if args.top == "core" else [args.top]
    limit = args.limit or timing.LIMIT
    results: dict[str, dict] = {}
    for top in tops:
        try:
            results[top] = timing.estimate(
                top,
                limit=limit,
                flatten=args.flatten,
                cache_dir=Path(args.cache) if args.cache else None,
            )
        except (synth.SynthError, timing.TimingError) as exc:
            print(f"synth: {exc}", file=sys.stderr)
            return 1
        synth.print_table(results[top]["synth"])
        timing.print_report(results[top]["timing"])
    if len(tops) > 1:
        timing.print_summary({t: r["timing"] for t, r in results.items()})
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        data = results[tops[0]] if len(tops) == 1 else results
        out.write_text(json.dumps(data, indent=2) + "\n")
    return 0 if not any(r["timing"]["over_limit"] for r in results.values()) else 1


def _cmd_build(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .design import Design
    from .toolflow import Toolflow, ToolflowError

    src = Path(args.design)
    if not src.is_file():
        print(f"build: {src}: no such design file", file=sys.stderr)
        return 1
    plat_dirs = [Path(p) for p in args.platform_dir or []]
    try:
        if src.name.endswith(".per"):
            if args.platform:
                print(
                    "build: --platform applies to a design YAML; a jasper.per names its "
                    "platform in the XSG block's hw_sys",
                    file=sys.stderr,
                )
                return 1
            per = src
            out = Path(args.output or src.parent).resolve()
        else:
            design = Design(src, plat_dirs, platform=args.platform)
            default = design.name if not args.platform else f"{design.name}_{args.platform}"
            out = Path(args.output or Path("build") / default).resolve()
            print(f"[design] {src} -> {out / 'jasper.per'}", flush=True)
            per = design.to_jasper_per(out)
        result = Toolflow(per, out, plat_dirs, progress=lambda m: print(m, flush=True)).run(
            backend=args.backend
        )
    except ToolflowError as exc:
        print(f"build: {exc}", file=sys.stderr)
        return 1
    if args.lint:
        from .toolflow import lint

        try:
            proc = lint(result.build_dir)
        except ToolflowError as exc:
            print(f"build: {exc}", file=sys.stderr)
            return 1
        print(
            f"[lint]   verilator --lint-only -Wall: {'clean' if proc.returncode == 0 else 'FAILED'}"
        )
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
    if args.synth:
        from . import synth as yosys
        from .toolflow import synth

        try:
            res = synth(
                result.build_dir,
                progress=lambda m: print(f"[synth]  {m}", flush=True),
                blackboxes=args.synth_blackbox or (),
            )
        except ToolflowError as exc:
            print(f"build: {exc}", file=sys.stderr)
            return 1
        yosys.print_table(res)
        print("         (fhg_core blackboxed: `casper400g synth` estimates the core's TX path)")
    return 0


def _cmd_mkfpg(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .toolflow import ToolflowError, mkfpg

    try:
        mkfpg(Path(args.build_dir), Path(args.image) if args.image else None)
    except (ToolflowError, OSError) as exc:
        print(f"mkfpg: {exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_install(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .mlib_install import InstallError, install

    try:
        install(Path(args.path), dry_run=args.dry_run)
    except InstallError as exc:
        print(f"install-mlib-devel: {exc}", file=sys.stderr)
        return 1
    return 0


def _run_rx(argv: list[str]) -> int:
    # Imported only here: the receiver pulls in NumPy and its C++ extension.
    from casper400g_rx import cli as rx_cli

    return rx_cli.main(argv)


def _cmd_rx(args: argparse.Namespace) -> int:
    return _run_rx(args.rx_args)


# A file-backed window's sys_clkcounter counts the example design's user clock.
DEFAULT_FILE_CLOCK_MHZ = 390.625
# The PL address range the VPK180 platform decodes from its base (jasper_library/platforms/
# vpk180.yaml, mmbus_address_window): board-server maps nothing beyond it.
PL_APERTURE = 0x4000000


def _cmd_board_server(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from casperfpga_ext.board_server import (
        BoardServer,
        MmapWindow,
        ServerPolicy,
        check_memory_map,
        design_span,
    )
    from casperfpga_ext.fpg import parse_fpg

    def fail(message: str) -> int:
        print(f"board-server: {message}", file=sys.stderr)
        return 1

    fpg = Path(args.fpg)
    if not fpg.is_file():
        return fail(f"{fpg}: no such .fpg file")
    try:
        header = parse_fpg(fpg)
        # Nothing outside what the platform decodes for the PL: there /dev/mem reaches the
        # processor's own registers.
        platform = "the platform's PL address space (--aperture)"
        check_memory_map(header.devices.values(), args.base, args.aperture, platform)
        size = design_span(header.devices.values(), args.base) if args.size is None else args.size
        if not 0 < size <= args.aperture:
            raise ValueError(f"window size {size:#x} is outside 1..{args.aperture:#x} (--aperture)")
        limits = ("max_upload", "max_bitstream", "max_clients")
        given = {k: getattr(args, k) for k in limits if getattr(args, k) is not None}
        policy = ServerPolicy(allow_upload=args.allow_upload, **given)
    except (OSError, ValueError) as exc:
        return fail(str(exc))
    clock_hz = None
    if args.sys_clk_mhz is not None:
        clock_hz = args.sys_clk_mhz * 1e6
    elif Path(args.mem).is_file():
        clock_hz = DEFAULT_FILE_CLOCK_MHZ * 1e6
    try:
        window = MmapWindow(args.mem, args.base, size, clock_hz=clock_hz if clock_hz else None)
        server = BoardServer(
            window,
            args.host,
            args.port,
            program_cmd=args.program_cmd,
            fpg=fpg,
            fpg_dir=args.fpg_dir or fpg.parent,
            policy=policy,
        )
    except PermissionError:
        return fail(f"permission denied opening {args.mem} (run as root, or use a UIO device)")
    except FileNotFoundError:
        return fail(f"{args.mem}: no such file")
    except (OSError, ValueError) as exc:
        return fail(f"cannot map {args.mem} at {args.base:#x}: {exc}")
    print(
        f"mapped {args.mem} at {args.base:#x} ({size:#x} bytes): {len(header.devices)} "
        f"devices of {fpg}"
    )
    for d in header.devices.values():
        print(f"  {d.name:<32} {d.address:#010x} {d.size:#x}")

    async def serve() -> int:
        try:
            await server.start()
        except OSError as exc:
            await server.close()
            return fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror}")
        uploads = "uploads allowed" if policy.allow_upload else "uploads off"
        print(f"listening on {args.host}:{server.port} (KATCP, {uploads})", flush=True)
        try:
            await server.serve_forever()
        finally:
            await server.close()
        return 0

    return asyncio.run(serve())


def _dev_tools_args(p: argparse.ArgumentParser) -> None:
    """The twin's options; they live with the twin (a checkout's developer tool)."""
    try:
        _dev_tools()
    except NotACheckout:
        p.add_argument("rest", nargs=argparse.REMAINDER)
        return
    from casper400g_dev.twin import run

    run.add_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="casper400g", description="casper400g: the CASPER 400GbE block library toolflow."
    )
    parser.add_argument("--version", action="version", version=f"casper400g {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    regs = sub.add_parser(
        "regs", help="regenerate the register block, Python map and docs from fhg_regs.rdl"
    )
    regs.add_argument(
        "--check", action="store_true", help="only check that the committed files are current"
    )
    regs.set_defaults(func=_cmd_regs)

    sgen = sub.add_parser(
        "simulink-gen",
        help="regenerate the .m copies of the 400GbE block's interface (xps_library/)",
    )
    sgen.add_argument(
        "--check", action="store_true", help="only check that the committed files are current"
    )
    sgen.set_defaults(func=_cmd_simulink_gen)

    demo = sub.add_parser(
        "demo", help="simulate the register block, configure a core over AXI4-Lite, dump it"
    )
    demo.add_argument("-v", "--verbose", action="store_true", help="show simulator output")
    demo.set_defaults(func=_cmd_demo)

    twin = sub.add_parser(
        "twin",
        help="run a build's design as a live board: Verilated top.v behind board-server "
        "(KATCP), its MAC on a TAP device in a network namespace",
    )
    _dev_tools_args(twin)
    twin.set_defaults(func=_cmd_twin)

    soak = sub.add_parser(
        "soak",
        help="the twin streaming into a capture for --minutes, link faults injected, the "
        "FPGA's, the link's and the receiver's counters reconciled every 10 s (root: TAP)",
    )
    try:
        _dev_tools()
        from casper400g_dev.twin import soak as soak_mod

        soak_mod.add_arguments(soak)
    except NotACheckout:
        soak.add_argument("rest", nargs=argparse.REMAINDER)
    soak.set_defaults(func=_cmd_soak)

    bench = sub.add_parser("bench", help="benchmarks: tx (the core's TX goodput), twin")
    bench.add_argument(
        "what", choices=["tx", "twin"], help="tx: the core's TX goodput; twin: the twin's speed"
    )
    bench.add_argument("--seconds", type=float, default=20.0, help="twin: measuring time")
    bench.add_argument("--threads", type=int, default=1, help="twin: Verilator threads")
    bench.add_argument(
        "--network", default="auto", help="twin: auto, tap, pcap (see casper400g twin)"
    )
    bench.add_argument("--frames", type=int, default=200, help="frames per payload size")
    bench.add_argument("--sizes", help="comma-separated payload sizes (0 = random mix)")
    bench.add_argument("--json", help="also write the results to this JSON file")
    bench.add_argument("-v", "--verbose", action="store_true", help="show simulator output")
    bench.set_defaults(func=_cmd_bench)

    synth_p = sub.add_parser(
        "synth", help="Yosys resource estimate (LUT/FF/BRAM/CARRY) of the TX path or a module"
    )
    synth_p.add_argument(
        "--top",
        default="fhg_tx_path",
        help="top module (default fhg_tx_path); with --timing, `core` runs every top that "
        "together covers fhg_core.f",
    )
    synth_p.add_argument(
        "--flatten",
        action="store_true",
        help="optimise across modules (total only); with --timing, flatten before LUT mapping "
        "(slow: hours for the receive path)",
    )
    synth_p.add_argument("--json", help="also write the full results to this JSON file")
    synth_p.add_argument(
        "--timing",
        action="store_true",
        help="timing estimate: logic levels on every register-to-register path (modules "
        "mapped one by one, then flattened), worst 20 named, per module, carry chains "
        "(docs/resources.md)",
    )
    synth_p.add_argument(
        "--limit",
        type=int,
        default=None,
        help="with --timing: most logic levels a path may have (default 6); exit 1 above it",
    )
    synth_p.add_argument(
        "--cache",
        help="with --timing: keep each top's estimate in this folder, keyed by a digest of "
        "its sources, and reuse it while they are unchanged",
    )
    synth_p.set_defaults(func=_cmd_synth)

    build_p = sub.add_parser(
        "build", help="build a design (design YAML or jasper.per) into a build directory"
    )
    build_p.add_argument("design", help="design .yaml, or a jasper.per from MATLAB's frontend")
    build_p.add_argument("-o", "--output", help="build directory (default build/<design>)")
    build_p.add_argument(
        "--backend",
        choices=["auto", "vivado", "none"],
        default="auto",
        help="vivado: run Vivado and pack the .fpg; none: only write the project script; "
        "auto (default): vivado when it is on PATH",
    )
    build_p.add_argument(
        "--platform",
        help="build the design YAML for this platform instead of its own `platform:` "
        "(e.g. vpk180; default build directory build/<design>_<platform>)",
    )
    build_p.add_argument(
        "--platform-dir", action="append", help="also look for platforms/<name>.yaml here"
    )
    build_p.add_argument(
        "--lint", action="store_true", help="also lint top.v with verilator --lint-only -Wall"
    )
    build_p.add_argument(
        "--synth",
        action="store_true",
        help="also synthesise top.v with Yosys (synth_xilinx -family xcup; core blackboxed)",
    )
    build_p.add_argument(
        "--synth-blackbox",
        action="append",
        metavar="MODULE",
        help="with --synth: keep this module of the design as an empty box too",
    )
    build_p.set_defaults(func=_cmd_build)

    mk = sub.add_parser("mkfpg", help="pack a build's .fpg: its header + the gzipped image")
    mk.add_argument("build_dir", help="the build directory")
    mk.add_argument("--image", help="device image (default vivado/top.pdi or top.bit)")
    mk.set_defaults(func=_cmd_mkfpg)

    inst = sub.add_parser(
        "install-mlib-devel",
        help="copy the 400GbE yellow block, platform and HDL into an mlib_devel checkout",
    )
    inst.add_argument("path", help="the mlib_devel checkout")
    inst.add_argument("--dry-run", action="store_true", help="only list the changes")
    inst.set_defaults(func=_cmd_install)

    rx = sub.add_parser(
        "rx",
        help="receiver: capture|monitor|send|bench|hwcheck|cluster (see `casper400g rx --help`)",
        add_help=False,
    )
    rx.add_argument("rx_args", nargs=argparse.REMAINDER)
    rx.set_defaults(func=_cmd_rx)

    board = sub.add_parser(
        "board-server", help="serve a .fpg's devices over KATCP (casperfpga) from /dev/mem"
    )
    board.add_argument("--fpg", required=True, help="the design's .fpg file")
    board.add_argument("--mem", default="/dev/mem", help="memory device (default /dev/mem)")
    board.add_argument(
        "--base",
        type=lambda x: int(x, 0),
        default=0xA4000000,
        help="bus address of the PL AXI window (default 0xA4000000)",
    )
    board.add_argument(
        "--size",
        type=lambda x: int(x, 0),
        help="bytes from --base the server may map (default: the --fpg's memory map, from "
        "--base to the end of its last device); a later design's devices must lie inside",
    )
    board.add_argument(
        "--aperture",
        type=lambda x: int(x, 0),
        default=PL_APERTURE,
        help=f"bytes of PL address space the platform decodes from --base (default "
        f"{PL_APERTURE:#x}, the VPK180's); no device or window may reach beyond it",
    )
    board.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: clients on the board only); 0.0.0.0 "
        "lets every host that reaches the board read and write the design's registers "
        "(docs/hardware.md, Security)",
    )
    board.add_argument("--port", type=int, default=7147, help="KATCP port (default 7147)")
    board.add_argument(
        "--allow-upload",
        action="store_true",
        help="serve ?progremote (casperfpga's upload_to_ram_and_program): a client may load "
        "a bitstream of its own; off by default",
    )
    board.add_argument(
        "--max-upload",
        type=lambda x: int(x, 0),
        help="bytes of .fpg taken per upload or ?progdev (default 256 MiB)",
    )
    board.add_argument(
        "--max-bitstream",
        type=lambda x: int(x, 0),
        help="bytes an .fpg's gzipped bitstream may inflate to (default 1 GiB)",
    )
    board.add_argument("--max-clients", type=int, help="KATCP connections at once (default 32)")
    board.add_argument(
        "--program-cmd",
        help="command that loads a bitstream, {pdi} = its path (e.g. 'fpgautil -b {pdi}')",
    )
    board.add_argument("--fpg-dir", help="where ?progdev finds .fpg files (default: --fpg's)")
    board.add_argument(
        "--sys-clk-mhz",
        type=float,
        help="advance sys_clkcounter at this clock on reads (default: "
        f"{DEFAULT_FILE_CLOCK_MHZ} when --mem is a regular file, where nothing else moves it; "
        "off for a memory device; 0: off)",
    )
    board.set_defaults(func=_cmd_board_server)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["rx"]:
        # Everything after `rx`, options included, belongs to the receiver's own parser.
        return _run_rx(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except NotACheckout as exc:
        print(f"casper400g {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
