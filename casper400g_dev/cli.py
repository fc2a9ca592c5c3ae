"""The developer command line of a casper400g checkout: ``python -m casper400g_dev``.

What only a checkout can do, kept out of the installed ``casper400g`` command: regenerate
the committed files (``regs`` from the SystemRDL, ``simulink-gen`` from the yellow blocks'
interfaces), the demo, the twin's soak and the benchmarks of the RTL and the twin
(``bench``), and the Yosys estimates of the core (``synth``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mlib_devel_400g import __version__


def _regenerate(command: str, files: dict[Any, str], check: bool) -> int:
    """Write ``files`` where they changed, or with ``check`` only report the stale ones."""
    from .generated import stale_files, write_files

    if check:
        stale = stale_files(files)
        if stale:
            print(
                f"stale generated files (run `python -m casper400g_dev {command}` and commit them):"
            )
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
    from . import simulink_gen

    return _regenerate("simulink-gen", simulink_gen.render_all(), args.check)


def _cmd_regs(args: argparse.Namespace) -> int:
    from mlib_devel_400g import paths

    from . import checkout, regs_gen

    print(f"compiling {paths.REGS_RDL.relative_to(checkout.ROOT)}", flush=True)
    return _regenerate("regs", regs_gen.render_all(), args.check)


def _cmd_demo(args: argparse.Namespace) -> int:
    from . import demo

    return demo.run(verbose=args.verbose)


def _cmd_soak(args: argparse.Namespace) -> int:
    from .twin import soak

    return soak.run(args)


def _cmd_bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    if args.what == "twin":
        from .twin import bench as bench_twin

        return bench_twin.run(
            seconds=args.seconds,
            threads=args.threads,
            network=args.network,
            out_json=Path(args.json) if args.json else None,
        )
    from . import bench_tx

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

    from mlib_devel_400g import synth

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

    from mlib_devel_400g import synth, timing

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m casper400g_dev",
        description="casper400g's developer commands (a checkout only): regenerate the "
        "committed files, the demo, the soak, benchmarks, Yosys estimates.",
    )
    parser.add_argument("--version", action="version", version=f"casper400g {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    # The soak's options live with it.
    from .twin import soak as soak_mod

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

    soak = sub.add_parser(
        "soak",
        help="the twin streaming into a capture for --minutes, link faults injected, the "
        "FPGA's, the link's and the receiver's counters reconciled every 10 s (root: TAP)",
    )
    soak_mod.add_arguments(soak)
    soak.set_defaults(func=_cmd_soak)

    bench = sub.add_parser("bench", help="benchmarks: tx (the core's TX goodput), twin")
    bench.add_argument(
        "what", choices=["tx", "twin"], help="tx: the core's TX goodput; twin: the twin's speed"
    )
    bench.add_argument("--seconds", type=float, default=20.0, help="twin: measuring time")
    bench.add_argument("--threads", type=int, default=1, help="twin: Verilator threads")
    bench.add_argument(
        "--network", default="auto", help="twin: auto, tap, pcap (see `casper400g twin --help`)"
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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
