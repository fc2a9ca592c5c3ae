"""atheris fuzz target: the board server's request parser, one client connection per input.

Run: python tests/fuzz/fuzz_board_requests.py -runs=100000   (libFuzzer flags apply)

An input becomes a byte stream (raw, or request lines assembled from the server's request
names and arguments that reach its devices, escapes, numbers at their limits) cut into
reads at places the input chooses; the server (uploads off, a design mapped from a bus
file) serves it to the end. The line limit is lowered so that short inputs reach the
overlong-line path. Conservation: every line the stream completes is counted under
exactly one outcome, and the client got exactly one reply (``!...``) per request counted
``ok``, ``fail`` or ``invalid``; the server writes only whole lines, each a reply or an
inform, and the bus file keeps its size.
"""

from __future__ import annotations

import asyncio
import sys

import atheris
from board_harness import WINDOW, Files, RecordingWriter, ScriptedReader, instrument

from casper400g_board_server import server as board_server
from casper400g_board_server.server import LINE_OUTCOMES, BoardServer, MmapWindow

instrument("casperfpga_ext")

board_server.MAX_LINE = 200
REQUESTS = (
    b"read wordread write wordwrite listdev meta progdev progremote help sensor-value "
    b"sensor-list sensor-sampling log-level fpgastatus halt client-list watchdog nosuch read[7]"
)
NAMES = [b"?" + n for n in REQUESTS.split()]
NAMES += [b"!read", b"#log", b"", b"?", b"?[1]", b"? read"]
WORDS = [
    b"gbe0", b"sys_scratch", b"nope", b"0", b"4", b"0x10000", b"65532", b"65536", b"-4",
    b"0xFFFFFFFF", b"99999999999999999999999", b"5:8", b"5:32", b"\\_", b"\\q", b"\\0\\0\\0\\0",
    b"design.fpg", b"v2.fpg", b"far.fpg", b"nogz.fpg", b"../bus.bin", b"off", b"error",
    b"gbe0.link-up", b"none", b"size", b"detail", b"x" * 300,
]  # fmt: skip
FILES = Files()
LOOP = asyncio.new_event_loop()


def stream(fdp: atheris.FuzzedDataProvider) -> bytes:
    if fdp.ConsumeIntInRange(0, 3) == 0:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 2048))
    lines = []
    for _ in range(fdp.ConsumeIntInRange(0, 12)):
        words = [NAMES[fdp.ConsumeIntInRange(0, len(NAMES) - 1)]]
        for _ in range(fdp.ConsumeIntInRange(0, 4)):
            if fdp.ConsumeIntInRange(0, 4):
                words.append(WORDS[fdp.ConsumeIntInRange(0, len(WORDS) - 1)])
            else:
                words.append(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 12)))
        sep = b"\t" if fdp.ConsumeIntInRange(0, 7) == 0 else b" "
        lines.append(sep.join(words) + (b"\r" if fdp.ConsumeIntInRange(0, 7) == 0 else b""))
    tail = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 16))
    return b"\n".join(lines) + (b"\n" if lines else b"") + tail


def cut(fdp: atheris.FuzzedDataProvider, data: bytes) -> list[bytes]:
    pieces, k = [], 0
    while k < len(data):
        n = fdp.ConsumeIntInRange(1, 300) if fdp.remaining_bytes() else len(data)
        pieces.append(data[k : k + n])
        k += n
    return pieces


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    sent = stream(fdp)
    pieces = cut(fdp, sent)
    server = BoardServer(MmapWindow(FILES.bus, 0, WINDOW), fpg=FILES.fpg, fpg_dir=FILES.root)
    writer = RecordingWriter()

    async def serve() -> None:
        await server._serve_client(ScriptedReader(pieces), writer)  # type: ignore[arg-type]
        await server.close()

    LOOP.run_until_complete(serve())
    counts = server.counts
    lines = writer.lines()
    assert sum(counts[o] for o in LINE_OUTCOMES) == sent.count(b"\n"), (dict(counts), sent)
    replies = [line for line in lines if line.startswith(b"!")]
    assert len(replies) == counts["ok"] + counts["fail"] + counts["invalid"], (
        dict(counts),
        lines,
    )
    assert all(line[:1] in (b"!", b"#") for line in lines), lines
    assert FILES.bus.stat().st_size == WINDOW
    assert not counts["upload"], "uploads are off"


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
