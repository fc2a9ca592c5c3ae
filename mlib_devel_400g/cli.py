"""The `casper400g` command line."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def _cmd_regs(args: argparse.Namespace) -> int:
    from . import paths, regs_gen

    paths.require_source_tree()
    print(f"compiling {paths.REGS_RDL.relative_to(paths.REPO_ROOT)}", flush=True)
    files = regs_gen.render_all()
    if args.check:
        stale = regs_gen.stale_files(files)
        if stale:
            print("stale generated files (run `casper400g regs` and commit them):")
            for rel in stale:
                print(f"  {rel}")
            return 1
        print(f"{len(files)} generated files are up to date")
        return 0
    changed = regs_gen.write_files(files)
    for rel in files:
        print(f"  {'wrote' if rel in changed else 'same '} {rel}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from . import demo

    return demo.run(verbose=args.verbose)


def _run_rx(argv: list[str]) -> int:
    # Imported only here: the receiver pulls in NumPy and its C++ extension.
    from casper400g_rx import cli as rx_cli

    return rx_cli.main(argv)


def _cmd_rx(args: argparse.Namespace) -> int:
    return _run_rx(args.rx_args)


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

    demo = sub.add_parser(
        "demo", help="simulate the register block, configure a core over AXI4-Lite, dump it"
    )
    demo.add_argument("-v", "--verbose", action="store_true", help="show simulator output")
    demo.set_defaults(func=_cmd_demo)

    rx = sub.add_parser(
        "rx",
        help="receiver: capture | monitor | bench | send (see `casper400g rx --help`)",
        add_help=False,
    )
    rx.add_argument("rx_args", nargs=argparse.REMAINDER)
    rx.set_defaults(func=_cmd_rx)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["rx"]:
        # Everything after `rx`, options included, belongs to the receiver's own parser.
        return _run_rx(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
