"""KATCP's byte stream cut into lines, in time linear in its length.

A client controls how its bytes are cut into reads: a line may come one byte per read, or
thousands of lines in one. Each byte is therefore searched for the newline once (the search
resumes where the last one stopped) and copied a bounded number of times; the consumed
lines leave the buffer once per read, not once per line. A line longer than the limit is
not kept: its first bytes are, to name it in the refusal, and the rest is skipped up to
its newline.
"""

from __future__ import annotations

from dataclasses import dataclass

# Enough of an overlong line to name the request it started.
KEEP = 64


@dataclass(frozen=True)
class Overlong:
    """A line longer than the limit, ended: ``start`` holds its first bytes."""

    start: bytes


class LineSplitter:
    """``feed(chunk)`` returns the lines ``chunk`` completes (without their newline), an
    ``Overlong`` for each line over ``max_line`` bytes. ``scanned`` counts the bytes
    searched for a newline: at most ``fed``, whatever the cuts."""

    def __init__(self, max_line: int) -> None:
        if max_line < 1:
            raise ValueError(f"line limit {max_line!r}: must be at least 1 byte")
        self.max_line = max_line
        self.fed = 0
        self.scanned = 0
        self._buf = bytearray()
        self._searched = 0  # the buffer's first bytes that hold no newline
        self._overlong: bytes | None = None  # the start of a line being skipped

    @property
    def pending(self) -> int:
        """Bytes held of a line not yet ended."""
        return len(self._buf)

    def feed(self, chunk: bytes) -> list[bytes | Overlong]:
        self.fed += len(chunk)
        buf = self._buf
        buf += chunk
        out: list[bytes | Overlong] = []
        start = 0
        while True:
            end = buf.find(b"\n", self._searched)
            if end < 0:
                self.scanned += len(buf) - self._searched
                break
            self.scanned += end + 1 - self._searched
            if self._overlong is not None:
                out.append(Overlong(self._overlong))
                self._overlong = None
            elif end - start > self.max_line:
                out.append(Overlong(bytes(buf[start : start + KEEP])))
            else:
                out.append(bytes(buf[start:end]))
            start = self._searched = end + 1
        del buf[:start]
        if self._overlong is None and len(buf) > self.max_line:
            self._overlong = bytes(buf[:KEEP])
        if self._overlong is not None:
            buf.clear()
        self._searched = len(buf)
        return out
