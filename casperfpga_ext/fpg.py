"""The ``.fpg`` file: a KATCP script header describing the design, then the bitstream.

Header lines (tab separated): ``#!/bin/kcpfpg``, ``?uploadbin``, one
``?register <name> 0x<addr> 0x<size>`` per memory-mapped device, ``?meta <block> <tag>
<param> <value>`` per block parameter (spaces in the value written as ``\\_``), ``?quit``;
the gzipped bitstream follows. Only the header is parsed here.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

SHEBANG = "#!/bin/kcpfpg"
GBE_TAG = "xps:fourhundred_gbe"
# Addresses and sizes are bus quantities, at most 64 bits; the digits are bounded before
# the value is taken (leading zeros allowed).
_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]{1,32}|[0-9]{1,40})$")
ADDRESS_LIMIT = 1 << 64
# Bytes of the bitstream inflated per step: the cap is checked between steps.
INFLATE_STEP = 1 << 20


@dataclass(frozen=True)
class FpgDevice:
    name: str
    address: int
    size: int


@dataclass
class FpgBlock:
    """The ``?meta`` lines of one block: its tag and its parameters (unescaped)."""

    name: str
    tag: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass
class FpgHeader:
    source: str
    devices: dict[str, FpgDevice]
    blocks: dict[str, FpgBlock]
    bitstream_offset: int  # where the gzipped bitstream starts


@dataclass(frozen=True)
class GbeInfo:
    name: str
    address: int
    size: int
    meta: dict[str, str]


def unescape(value: str) -> str:
    return value.replace("\\_", " ")


def escape(value: str) -> str:
    if "\t" in value or "\n" in value:
        raise ValueError(f"meta value {value!r} contains a tab or newline")
    return value.replace(" ", "\\_")


def _number(text: str, source: str, lineno: int, what: str) -> int:
    # Stricter than int(): no sign, underscores or spaces, and no more digits than 64 bits.
    if not _NUMBER.match(text):
        raise ValueError(f"{source}:{lineno}: {what} {text[:40]!r} is not a number")
    value = int(text, 16) if text[:2] in ("0x", "0X") else int(text)
    if value >= ADDRESS_LIMIT:
        raise ValueError(f"{source}:{lineno}: {what} {text!r} exceeds the 64-bit address space")
    return value


def parse_fpg_header(data: bytes, source: str = "<fpg>") -> FpgHeader:
    """Parse the header of ``.fpg`` file contents; ``source`` names it in errors."""
    devices: dict[str, FpgDevice] = {}
    blocks: dict[str, FpgBlock] = {}
    pos = 0
    lineno = 0
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            raise ValueError(f"{source}:{lineno + 1}: header ends without ?quit")
        lineno += 1
        try:
            line = data[pos:end].decode("ascii").rstrip("\r")
        except UnicodeDecodeError:
            raise ValueError(f"{source}:{lineno}: header line is not ASCII text") from None
        pos = end + 1
        if lineno == 1:
            if line != SHEBANG:
                raise ValueError(f"{source}:1: expected {SHEBANG!r}, found {line[:40]!r}")
            continue
        parts = line.split("\t")
        command = parts[0]
        if command == "?quit":
            return FpgHeader(source, devices, blocks, pos)
        if command == "?uploadbin" or line == "":
            continue
        if command == "?register":
            if len(parts) != 4:
                raise ValueError(f"{source}:{lineno}: ?register needs name, address and size")
            name = parts[1]
            if name in devices:
                raise ValueError(f"{source}:{lineno}: device {name!r} registered twice")
            address = _number(parts[2], source, lineno, "address")
            size = _number(parts[3], source, lineno, "size")
            devices[name] = FpgDevice(name, address, size)
        elif command == "?meta":
            if len(parts) < 4:
                raise ValueError(f"{source}:{lineno}: ?meta needs block, tag, param and value")
            name, tag, param = parts[1], parts[2], parts[3]
            value = unescape("\t".join(parts[4:]))
            block = blocks.setdefault(name, FpgBlock(name, tag))
            if block.tag != tag:
                raise ValueError(
                    f"{source}:{lineno}: block {name!r} tagged {tag!r}, earlier {block.tag!r}"
                )
            block.params[param] = value
        else:
            raise ValueError(f"{source}:{lineno}: unknown header command {command!r}")


def parse_fpg(path: str | os.PathLike[str]) -> FpgHeader:
    return parse_fpg_header(Path(path).read_bytes(), str(path))


def find_gbes(fpg: FpgHeader | str | os.PathLike[str]) -> list[GbeInfo]:
    """The 400GbE blocks of a design, each with the ``?register`` of the same name."""
    header = fpg if isinstance(fpg, FpgHeader) else parse_fpg(fpg)
    gbes = []
    for block in header.blocks.values():
        if block.tag != GBE_TAG:
            continue
        device = header.devices.get(block.name)
        if device is None:
            raise ValueError(f"{header.source}: {GBE_TAG} block {block.name!r} has no ?register")
        gbes.append(GbeInfo(block.name, device.address, device.size, dict(block.params)))
    return gbes


def write_fpg_header(
    devices: Iterable[FpgDevice],
    blocks: Iterable[FpgBlock],
) -> bytes:
    """The header ``mkfpg`` writes, up to and including ``?quit``."""
    lines = [SHEBANG, "?uploadbin"]
    for d in devices:
        lines.append(f"?register\t{d.name}\t{d.address:#010x}\t{d.size:#x}")
    for b in blocks:
        for param, value in b.params.items():
            lines.append(f"?meta\t{b.name}\t{b.tag}\t{param}\t{escape(value)}")
    lines.append("?quit")
    return ("\n".join(lines) + "\n").encode("ascii")


def write_fpg(
    path: str | os.PathLike[str],
    devices: Iterable[FpgDevice],
    blocks: Iterable[FpgBlock],
    bitstream: bytes,
) -> None:
    Path(path).write_bytes(write_fpg_header(devices, blocks) + gzip.compress(bitstream))


def read_bitstream(path: str | os.PathLike[str]) -> bytes:
    data = Path(path).read_bytes()
    header = parse_fpg_header(data, str(path))
    return gzip.decompress(data[header.bitstream_offset :])


class BitstreamError(ValueError):
    """The gzipped bitstream of an ``.fpg`` is not gzip data (``reason`` ``not_gzip``) or
    inflates past the limit (``too_large``)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def inflate_bitstream(data: bytes, offset: int, out: BinaryIO, limit: int) -> int:
    """Gunzip ``data[offset:]`` into ``out``, as ``gzip.decompress`` reads it (members one
    after another, zero padding between them), a step at a time: more than ``limit`` bytes
    raises ``BitstreamError`` before the excess is written, so a small file that inflates
    without end costs at most ``limit`` bytes. Returns the bytes written."""
    stream = io.BytesIO(data)  # shares ``data``'s buffer
    stream.seek(offset)
    total = 0
    with gzip.GzipFile(fileobj=stream, mode="rb") as unzipped:
        while True:
            try:
                piece = unzipped.read(min(INFLATE_STEP, limit + 1 - total))
            except (OSError, EOFError, zlib.error) as exc:
                raise BitstreamError(
                    f"the bitstream is not gzip data ({exc})", "not_gzip"
                ) from None
            if not piece:
                return total
            total += len(piece)
            if total > limit:
                raise BitstreamError(f"the bitstream inflates past {limit} bytes", "too_large")
            out.write(piece)
