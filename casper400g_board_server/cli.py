"""The ``casper400g-board-server`` command: serve a ``.fpg``'s devices over KATCP.

Runs on the board (Python 3.8 and later, the standard library and ``casperfpga_ext``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from casperfpga_ext.fpg import parse_fpg

from . import __version__
from .server import BoardServer, MmapWindow, ServerPolicy, check_memory_map, design_span

# A file-backed window's sys_clkcounter counts the example design's user clock.
DEFAULT_FILE_CLOCK_MHZ = 390.625
# The PL address range the VPK180 platform decodes from its base (jasper_library/platforms/
# vpk180.yaml, mmbus_address_window): the server maps nothing beyond it.
PL_APERTURE = 0x4000000


def run(args: argparse.Namespace) -> int:
    """Map ``args.mem`` for the design of ``args.fpg`` and serve it until interrupted."""

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


def build_parser() -> argparse.ArgumentParser:
    board = argparse.ArgumentParser(
        prog="casper400g-board-server",
        description="Serve a .fpg's devices over KATCP (casperfpga) from /dev/mem.",
    )
    board.add_argument(
        "--version", action="version", version=f"casper400g-board-server {__version__}"
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
    return board


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
