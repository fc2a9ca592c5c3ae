"""The register-map classes: the generator's model of the map, and the text every
generated map (casperfpga_ext/fhg_regmap.py and the yellow block's copy) carries from
here, since those must import nothing of ours. Keep it Python 3.8 and standalone."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """A bit field: bits [lsb + width - 1 : lsb] of its register (or region entry)."""

    name: str
    lsb: int
    width: int
    sw: str  # software access: "rw", "r" or "w"
    hw: str  # hardware access: "rw", "r", "w" or "-"
    reset: int | None  # None: value is driven by the core, not stored
    singlepulse: bool  # writing 1 gives a one-cycle pulse; always reads 0
    counter: bool
    desc: str

    @property
    def msb(self) -> int:
        return self.lsb + self.width - 1

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    def get(self, reg_value: int) -> int:
        """Extract this field from a register value."""
        return (reg_value >> self.lsb) & ((1 << self.width) - 1)

    def put(self, reg_value: int, value: int) -> int:
        """Return reg_value with this field replaced by value."""
        if not 0 <= value < (1 << self.width):
            raise ValueError(
                f"value {value!r} does not fit field {self.name} ({self.width} bits)"
            )
        return (reg_value & ~self.mask) | (value << self.lsb)


@dataclass(frozen=True)
class Register:
    name: str
    title: str
    offset: int
    width: int  # bits: 32, or 64 for counters read as two words
    sw: str
    desc: str
    fields: tuple[Field, ...]

    @property
    def nbytes(self) -> int:
        return self.width // 8

    @property
    def reset(self) -> int:
        """Reset value of the stored fields (core-driven fields count as 0)."""
        value = 0
        for f in self.fields:
            if f.reset is not None:
                value |= f.reset << f.lsb
        return value

    @property
    def is_counter(self) -> bool:
        return any(f.counter for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}")


@dataclass(frozen=True)
class Region:
    """An external region whose storage belongs to the core (RAMs, buffers)."""

    name: str
    title: str
    offset: int
    size: int
    sw: str
    desc: str
    entries: int
    entry_bytes: int
    entry_fields: tuple[Field, ...]
