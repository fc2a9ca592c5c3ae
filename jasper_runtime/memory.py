"""Memory-mapped registers of a yellow block (the jasper ``memory.Register`` API)."""

from __future__ import annotations


class Register:
    """One register or RAM region of an AXI4-Lite interface.

    ``offset`` is in bytes from the interface's base; ``mode`` is ``"r"`` (read by software)
    or ``"rw"``; ``ram`` regions span ``ram_size`` bytes of ``data_width``-bit words. The
    signature is mlib_devel's (``axi4lite_mode="raw"`` marks a whole raw device).
    """

    def __init__(
        self,
        name: str,
        nbytes: int = 4,
        offset: int = 0,
        mode: str = "r",
        default_val: int = 0,
        ram: bool = False,
        ram_size: int = -1,
        data_width: int = 32,
        axi4lite_mode: str = "",
    ) -> None:
        if "\n" in name or "\t" in name or " " in name or not name:
            raise ValueError(f"register name {name!r} must be one word")
        if mode not in ("r", "rw"):
            raise ValueError(f"register {name}: mode {mode!r} is not 'r' or 'rw'")
        if offset < 0 or offset % 4:
            raise ValueError(f"register {name}: offset {offset:#x} is not word aligned")
        if ram and ram_size <= 0:
            raise ValueError(f"register {name}: a RAM region needs ram_size > 0")
        self.name = name
        self.nbytes = ram_size if ram else nbytes
        self.offset = offset
        self.mode = mode
        self.default_val = default_val
        self.ram = ram
        self.ram_size = ram_size
        self.data_width = data_width
        # mlib_devel's flag for an entry that is a whole raw AXI4-Lite device.
        self.axi4lite_mode = axi4lite_mode

    def __repr__(self) -> str:
        kind = "ram" if self.ram else "reg"
        return f"<Register {self.name} {kind} {self.mode} @{self.offset:#x}+{self.nbytes:#x}>"
