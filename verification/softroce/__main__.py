"""Run shell commands in the soft-RoCE VM and print its console (a debugging aid).

    python -m verification.softroce 'rdma link show; ibv_devinfo -d rxe0'

The commands run in the VM once rxe0 is ACTIVE, from the host's filesystem (read-only)
with the exchange folder at /run/softroce; their output goes to the console printed here.
"""

from __future__ import annotations

import argparse
import sys

from .image import ImageError, build_image
from .vm import SoftRoceVm, VmError, qemu_available


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verification.softroce")
    parser.add_argument("commands", help="shell commands to run in the VM")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds (default 300)")
    args = parser.parse_args(argv)
    if not qemu_available():
        print("qemu-system-x86_64 not found (Debian package qemu-system-x86)", file=sys.stderr)
        return 2
    try:
        image = build_image()
        with SoftRoceVm(image, args.commands) as vm:
            status = vm.finish(timeout=args.timeout)
            print(vm.serial_log.read_text(errors="replace"))
    except (ImageError, VmError) as exc:
        print(exc, file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
