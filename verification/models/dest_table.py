"""The example design's destination table (examples/pktgen_400g/fhg_dest_table.sv) as its
contract states it: the destination, channel and SPEAD timestamp of every packet, from the
tables switched in and the packet numbers the design reports for the switches."""

from __future__ import annotations

from dataclasses import dataclass, field

Entry = tuple[int, int, int]  # IP, UDP port, channel


@dataclass(frozen=True)
class Route:
    """Where packet n goes: IP, port, its channel, the spectrum it belongs to (its SPEAD
    timestamp is that times the step) and its table entry (None with the table off)."""

    ip: int
    port: int
    channel: int
    spectrum: int
    entry: int | None


@dataclass
class Routes:
    """Table t is in force from packet ``starts[t]``; packet k of each spectrum of G goes to
    entry k; an empty table (off) sends every packet to ``default`` as a spectrum of its own."""

    default: Entry
    starts: list[int] = field(default_factory=list)
    tables: list[list[Entry]] = field(default_factory=list)

    def switched(self, first: int, table: list[Entry]) -> None:
        """Table ``table`` in force from packet ``first`` (the design's dest_tbl_switch)."""
        if self.starts:
            prev, start = self.tables[-1], self.starts[-1]
            if first < start:
                raise ValueError(f"switch at packet {first}, before the last one at {start}")
            if prev and (first - start) % len(prev):
                raise ValueError(
                    f"switch at packet {first} is not on a spectrum boundary of the table "
                    f"of {len(prev)} in force from packet {start}"
                )
        self.starts.append(first)
        self.tables.append(list(table))

    def routes(self, count: int) -> list[Route]:
        """The routes of packets 0 .. count-1."""
        out = []
        spectrum = 0
        t = -1
        for n in range(count):
            while t + 1 < len(self.starts) and self.starts[t + 1] <= n:
                t += 1
            table = self.tables[t] if t >= 0 else []
            if not table:
                out.append(Route(*self.default, spectrum, None))
                spectrum += 1
                continue
            k = (n - self.starts[t]) % len(table)
            out.append(Route(*table[k], spectrum, k))
            spectrum += k == len(table) - 1
        return out

    def per_entry(self, count: int, entries: int) -> list[int]:
        """Packets of 0 .. count-1 sent through each entry index (either copy)."""
        out = [0] * entries
        for r in self.routes(count):
            if r.entry is not None:
                out[r.entry] += 1
        return out
