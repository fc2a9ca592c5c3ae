"""The `casper400g` command line: the toolflow's (``build``, ``mkfpg``,
``install-mlib-devel``) and the digital twin's (``twin``).

The other packages have commands of their own (``casper400g-board-server`` on the board,
``casper400g-rx`` on the receiving host); a checkout's developer commands (regenerating
the committed files, the demo, the soak, benchmarks, Yosys estimates of the core) are
``python -m casper400g_dev``.
"""

from __future__ import annotations

import argparse
import sys

from . import __version__


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
        print("         (fhg_core blackboxed: docs/resources.md estimates the core itself)")
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


def _cmd_twin(args: argparse.Namespace) -> int:
    from casper400g_twin import run

    return run.run(args)


def build_parser() -> argparse.ArgumentParser:
    # The twin's options live with it.
    from casper400g_twin import run as twin_run

    parser = argparse.ArgumentParser(
        prog="casper400g", description="casper400g: the CASPER 400GbE block library toolflow."
    )
    parser.add_argument("--version", action="version", version=f"casper400g {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

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

    twin = sub.add_parser(
        "twin",
        help="run a build's design as a live board: Verilated top.v behind the board server "
        "(KATCP), its MAC on a TAP device in a network namespace",
    )
    twin_run.add_arguments(twin)
    twin.set_defaults(func=_cmd_twin)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
