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
            raise ValueError(f"value {value!r} does not fit field {self.name} ({self.width} bits)")
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
    # The name mlib_devel's 100GbE block gives the register at this offset, where this
    # register is that one (casperfpga users read it as "<block>_<name>").
    onehundred_gbe_name: str | None = None

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


@dataclass(frozen=True)
class Device:
    """A register or region as software reaches it by name: the device ``<block>_<name>``
    in core_info.tab, memory_map.json and the .fpg, where jasper lists every entry of a
    block's memory map. ``target`` names the register or region in this map."""

    name: str
    target: str
    offset: int
    nbytes: int
    mode: str  # "r" or "rw", as jasper's memory.Register has it
    reset: int
    ram: bool


def named_devices(registers: dict[str, Register], regions: dict[str, Region]) -> dict[str, Device]:
    """Every register, under the 100GbE's name where it has one and its own otherwise, and
    every region, in address order; a name given twice is an error."""
    found = [
        Device(
            r.onehundred_gbe_name or r.name,
            r.name,
            r.offset,
            r.nbytes,
            "r" if r.sw == "r" else "rw",
            r.reset,
            False,
        )
        for r in registers.values()
    ]
    found += [
        Device(g.name, g.name, g.offset, g.size, "r" if g.sw == "r" else "rw", 0, True)
        for g in regions.values()
    ]
    devices: dict[str, Device] = {}
    for d in sorted(found, key=lambda d: d.offset):
        if d.name in devices:
            raise ValueError(f"{devices[d.name].target} and {d.target} are both named {d.name!r}")
        devices[d.name] = d
    return devices
