"""A casperfpga-like Fpga object for use without casperfpga, and the casperfpga plugin hook.

Standalone: ``Fpga(transport, "design.fpg").gbes.gbe0.configure_core(...)``. With
casperfpga installed, ``register_with_casperfpga()`` adds FourHundredGbe to its table of
memory-mapped device classes, so casperfpga's own ``fpga.gbes`` holds our cores.
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Any

from .fpg import GBE_TAG, FpgHeader, find_gbes, parse_fpg
from .gbe import FourHundredGbe
from .transport import KatcpTransport, Transport, read_uint, write_uint


class DeviceContainer(dict):
    """Devices by name, reachable as items or attributes (``gbes.gbe0``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no device {name!r}; known: {sorted(self)}") from None


class Fpga:
    """Register access and the 400GbE cores of one design on one board.

    ``host_or_transport``: a host name (a KATCP connection to ``port`` is opened, as
    casperfpga does) or a ready ``Transport``. The cores come from ``fpg`` (a file or a
    parsed header), or later from ``get_system_information()``.
    """

    def __init__(
        self,
        host_or_transport: Transport | str,
        fpg: FpgHeader | str | os.PathLike[str] | None = None,
        port: int = 7147,
        timeout: float = 5.0,
    ) -> None:
        if isinstance(host_or_transport, str):
            self.host = host_or_transport
            self.transport: Transport = KatcpTransport(host_or_transport, port, timeout)
        else:
            self.transport = host_or_transport
            self.host = getattr(host_or_transport, "host", "")
        self.gbes = DeviceContainer()
        # casperfpga's containers a core looks into (post_create_update): none here.
        self.registers = DeviceContainer()
        self.snapshots = DeviceContainer()
        self.header: FpgHeader | None = None
        if fpg is not None:
            self.get_system_information(fpg)

    def get_system_information(
        self, filename: FpgHeader | str | os.PathLike[str] | None = None
    ) -> None:
        """Learn the design's cores from an .fpg, or (None) from the board server.

        Without a file the transport must describe the running design (KATCP:
        ``?listdev detail`` and ``?meta``), as casperfpga does.
        """
        if filename is None:
            read_header = getattr(self.transport, "read_header", None)
            if read_header is None:
                raise ValueError(
                    f"{type(self.transport).__name__} cannot describe the running design: "
                    "give the .fpg file"
                )
            header = read_header()
        else:
            header = filename if isinstance(filename, FpgHeader) else parse_fpg(filename)
        self.header = header
        self.gbes = DeviceContainer()
        for info in find_gbes(header):
            self.gbes[info.name] = FourHundredGbe(
                self, info.name, info.address, info.size, info.meta
            )
        for gbe in self.gbes.values():
            gbe.post_create_update(header.blocks)

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        return self.transport.read(device_name, size, offset)

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        self.transport.blindwrite(device_name, data, offset)

    def listdev(self) -> list[str]:
        return self.transport.listdev()

    def write(self, device_name: str, data: bytes, offset: int = 0) -> None:
        """Write and check that the data read back (casperfpga's ``write``)."""
        self.transport.blindwrite(device_name, data, offset)
        got = self.transport.read(device_name, len(data), offset)
        if got != data:
            raise OSError(f"{device_name}+{offset:#x}: wrote {data.hex()}, read {got.hex()}")

    def is_connected(self) -> bool:
        return self.transport.is_connected()

    def disconnect(self) -> None:
        """Close the connection to the board (casperfpga's ``disconnect``)."""
        close = getattr(self.transport, "close", None)
        if close is not None:
            close()

    def read_uint(self, device_name: str, word_offset: int = 0) -> int:
        return read_uint(self.transport, device_name, 4 * word_offset)

    def read_int(self, device_name: str, word_offset: int = 0) -> int:
        """Signed 32-bit word, as casperfpga's read_int."""
        value = self.read_uint(device_name, word_offset)
        return value - (1 << 32) if value & 0x80000000 else value

    def write_int(
        self, device_name: str, integer: int, blindwrite: bool = False, word_offset: int = 0
    ) -> None:
        """Write a signed or unsigned 32-bit word; unless ``blindwrite``, check it reads back."""
        if not -(1 << 31) <= integer <= 0xFFFFFFFF:
            raise ValueError(f"value {integer!r} for {device_name} does not fit 32 bits")
        value = integer & 0xFFFFFFFF
        write_uint(self.transport, device_name, value, 4 * word_offset)
        if not blindwrite:
            got = self.read_uint(device_name, word_offset)
            if got != value:
                raise OSError(
                    f"{device_name} word {word_offset}: wrote {value:#010x}, read {got:#010x}"
                )


def register_with_casperfpga() -> bool:
    """Make casperfpga build FourHundredGbe for blocks tagged ``xps:fourhundred_gbe``.

    casperfpga keeps a module-level table ``CASPER_MEMORY_DEVICES`` in
    ``casperfpga.casperfpga``: tag -> {"class": ..., "container": ...}; Gbe classes go to
    the ``gbes`` container and are built with ``from_device_info``. Returns False when
    casperfpga is not installed.
    """
    try:
        module = importlib.import_module("casperfpga.casperfpga")
    except ModuleNotFoundError as exc:
        if exc.name not in ("casperfpga", "casperfpga.casperfpga"):
            raise  # casperfpga is there but one of its dependencies is missing
        return False
    table = getattr(module, "CASPER_MEMORY_DEVICES", None)
    if not isinstance(table, dict):
        raise RuntimeError("casperfpga.casperfpga has no CASPER_MEMORY_DEVICES table")
    table[GBE_TAG] = {"class": FourHundredGbe, "container": "gbes"}
    return True


def register_on_import() -> bool:
    """``register_with_casperfpga()`` for ``import casperfpga_ext``: a casperfpga that is
    installed but fails to import must not stop casperfpga_ext from working without it."""
    try:
        return register_with_casperfpga()
    except Exception as exc:  # casperfpga's own import error, whatever its type
        warnings.warn(
            f"casperfpga is installed but could not be imported ({type(exc).__name__}: "
            f"{exc}); FourHundredGbe is not registered with it",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
