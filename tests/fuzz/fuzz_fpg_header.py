"""atheris fuzz target: the .fpg header parser on arbitrary bytes.

Run: python tests/fuzz/fuzz_fpg_header.py -runs=100000   (libFuzzer flags apply)

An input is taken as it is, or assembled into header lines from its pieces (so that a run
reaches past the first line). The parser refuses with a ValueError naming the source and
line, or returns a header that agrees with an independent count of its lines: every line
up to ``?quit`` is the shebang, a ``?uploadbin`` or blank line, a ``?register`` (one
device each) or a ``?meta`` (one parameter per distinct block and name); the bitstream
starts right after ``?quit``; every address and size fits 64 bits. A header without tabs
in its values, written again, parses to the same devices and blocks.
"""

from __future__ import annotations

import sys

import atheris
from board_harness import instrument

from casperfpga_ext.fpg import SHEBANG, parse_fpg_header, write_fpg_header

instrument("casperfpga_ext")

SOURCE = "fuzz.fpg"
COMMANDS = ["?register", "?meta", "?uploadbin", "", "?quit", "?bogus", "?register "]
NUMBERS = ["0x0", "0x10000", "4", "0xFFFFFFFFFFFFFFFF", "0x10000000000000000", "-4", "1_0", "0x"]


def assembled(fdp: atheris.FuzzedDataProvider) -> bytes:
    lines = [SHEBANG if fdp.ConsumeIntInRange(0, 15) else fdp.ConsumeUnicode(12)]
    for _ in range(fdp.ConsumeIntInRange(0, 12)):
        parts = [COMMANDS[fdp.ConsumeIntInRange(0, len(COMMANDS) - 1)]]
        for _ in range(fdp.ConsumeIntInRange(0, 5)):
            if fdp.ConsumeBool():
                parts.append(NUMBERS[fdp.ConsumeIntInRange(0, len(NUMBERS) - 1)])
            else:
                parts.append(fdp.ConsumeUnicode(8))
        lines.append("\t".join(parts))
    if fdp.ConsumeBool():
        lines.append("?quit")
    eol = "\r\n" if fdp.ConsumeIntInRange(0, 7) == 0 else "\n"
    text = eol.join(lines) + eol
    return text.encode("utf-8", "surrogatepass") + fdp.ConsumeBytes(fdp.remaining_bytes())


def independent_count(data: bytes, end: int) -> tuple[int, set[tuple[str, str]]]:
    """Devices and distinct (block, parameter) pairs of the header ``data[:end]``, counted
    from its lines alone."""
    lines = data[:end].split(b"\n")
    assert lines[-1] == b"", "the header ends with a newline"
    lines = [line.rstrip(b"\r").decode("ascii").split("\t") for line in lines[:-1]]
    assert lines[0] == [SHEBANG] and lines[-1][0] == "?quit", (lines[0], lines[-1])
    registers, params = 0, set()
    for parts in lines[1:-1]:
        if parts[0] == "?register":
            registers += 1
        elif parts[0] == "?meta":
            params.add((parts[1], parts[3]))
        else:
            assert parts[0] == "?uploadbin" or parts == [""], parts
    return registers, params


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    raw = data if fdp.ConsumeIntInRange(0, 3) == 0 else assembled(fdp)
    try:
        header = parse_fpg_header(raw, SOURCE)
    except ValueError as exc:
        assert str(exc).startswith(f"{SOURCE}:"), exc
        return
    registers, params = independent_count(raw, header.bitstream_offset)
    assert len(header.devices) == registers, (registers, header.devices)
    assert sum(len(b.params) for b in header.blocks.values()) == len(params)
    assert {(b.name, p) for b in header.blocks.values() for p in b.params} == params
    for d in header.devices.values():
        assert 0 <= d.address < 1 << 64 and 0 <= d.size < 1 << 64, d
    if any("\t" in v for b in header.blocks.values() for v in b.params.values()):
        return
    again = parse_fpg_header(
        write_fpg_header(header.devices.values(), header.blocks.values()), SOURCE
    )
    assert again.devices == header.devices
    assert {n: (b.tag, b.params) for n, b in again.blocks.items()} == {
        n: (b.tag, b.params) for n, b in header.blocks.items()
    }


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
