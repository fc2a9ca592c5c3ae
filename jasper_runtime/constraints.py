"""Constraints a yellow block returns from ``gen_constraints`` and their XDC text.

``PortConstraint`` needs the platform to resolve pin names to locations; the others
render on their own.
"""

from __future__ import annotations

from typing import Any


class ConstraintError(ValueError):
    """A constraint refers to something the platform does not have."""


class PortConstraint:
    """Top-level port ``portname`` (``width`` bits, bits ``port_index``) on platform pins
    ``iogroup`` (a name in the platform's ``pins`` section), bits ``iogroup_index``."""

    def __init__(
        self,
        portname: str,
        iogroup: str,
        port_index: list[int] | int | None = None,
        iogroup_index: list[int] | int = 0,
        loc: str | None = None,
        iostd: str | None = None,
    ) -> None:
        self.portname = portname
        self.iogroup = iogroup
        self.port_index = [] if port_index is None else _as_list(port_index)
        self.iogroup_index = _as_list(iogroup_index)
        self.loc = loc
        self.iostd = iostd

    def resolve(self, platform: Any) -> None:
        pins = platform.conf.get("pins") or {}
        if self.iogroup not in pins:
            raise ConstraintError(
                f"port {self.portname}: platform {platform.name} has no pin group "
                f"{self.iogroup!r} (known: {', '.join(sorted(pins)) or 'none'})"
            )
        group = pins[self.iogroup]
        locs = _as_list(group.get("loc", []))
        self.iostd = group.get("iostd")
        for i in self.iogroup_index:
            if i >= len(locs):
                raise ConstraintError(
                    f"port {self.portname}: pin group {self.iogroup} has {len(locs)} pins, "
                    f"bit {i} requested"
                )
        self.locs = [locs[i] for i in self.iogroup_index]

    def gen_xdc(self) -> list[str]:
        lines = []
        if self.port_index:
            if len(self.port_index) != len(self.locs):
                raise ConstraintError(
                    f"port {self.portname}: {len(self.port_index)} bits for {len(self.locs)} pins"
                )
            targets = [f"{self.portname}[{i}]" for i in self.port_index]
        else:
            if len(self.locs) != 1:
                raise ConstraintError(f"port {self.portname}: scalar port on {len(self.locs)} pins")
            targets = [self.portname]
        for t, loc in zip(targets, self.locs, strict=True):
            lines.append(f"set_property PACKAGE_PIN {loc} [get_ports {{{t}}}]")
            if self.iostd:
                lines.append(f"set_property IOSTANDARD {self.iostd} [get_ports {{{t}}}]")
        return lines


class ClockConstraint:
    """A primary clock on a top-level port (``signal``) or a pin, ``freq`` in MHz."""

    def __init__(
        self, signal: str, name: str | None = None, freq: float = 100.0, port: bool = True
    ) -> None:
        if freq <= 0:
            raise ConstraintError(f"clock {signal}: frequency {freq} MHz is not positive")
        self.signal = signal
        self.name = name or signal
        self.freq = float(freq)
        self.port = port

    @property
    def period_ns(self) -> float:
        return 1000.0 / self.freq

    def gen_xdc(self) -> list[str]:
        target = f"[get_ports {{{self.signal}}}]" if self.port else f"[get_pins {{{self.signal}}}]"
        # mlib_devel's text for a 50 % duty-cycle clock.
        return [
            f"create_clock -period {self.period_ns:4.3f} -name {self.name} "
            f"-waveform {{0.000 {self.period_ns / 2:4.3f}}} {target}"
        ]


class ClockGroupConstraint:
    """Clocks that share no timing paths (``asynchronous``) or never run together."""

    def __init__(
        self,
        clock_domain1: str,
        clock_domain2: str,
        clock_group_type: str = "asynchronous",
    ) -> None:
        if clock_group_type not in ("asynchronous", "logically_exclusive", "physically_exclusive"):
            raise ConstraintError(f"clock group type {clock_group_type!r} is not known")
        self.domain1 = clock_domain1
        self.domain2 = clock_domain2
        self.kind = clock_group_type
        self.refs: dict[str, str] = {}

    def resolve(self, platform: Any) -> None:
        """Clocks a platform creates inside IP (e.g. a block design's clocking wizard) have
        no name of ours: the platform's ``clock_refs`` gives the Tcl that finds them."""
        self.refs = dict((getattr(platform, "conf", None) or {}).get("clock_refs") or {})

    def _group(self, name: str) -> str:
        if name in self.refs:
            return str(self.refs[name])
        return f"[get_clocks -include_generated_clocks {{{name}}}]"

    def gen_xdc(self) -> list[str]:
        return [
            f"set_clock_groups -{self.kind} -group {self._group(self.domain1)} "
            f"-group {self._group(self.domain2)}"
        ]


class FalsePathConstraint:
    def __init__(self, sourcepath: str | None = None, destpath: str | None = None) -> None:
        if not sourcepath and not destpath:
            raise ConstraintError("a false path needs a source or a destination")
        self.src = sourcepath
        self.dst = destpath

    def gen_xdc(self) -> list[str]:
        parts = ["set_false_path"]
        if self.src:
            parts.append(f"-from {self.src}")
        if self.dst:
            parts.append(f"-to {self.dst}")
        return [" ".join(parts)]


class RawConstraint:
    """XDC text passed through unchanged."""

    def __init__(self, raw: str) -> None:
        self.raw = raw

    def gen_xdc(self) -> list[str]:
        return [self.raw]


def _as_list(value: list[int] | int) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]
