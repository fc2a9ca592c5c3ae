"""The AXI4-Lite signal set, in one place, for every block and the toolflow runtime.

``AXIL_SIGNALS`` lists the 19 signals of one AXI4-Lite slave port as
``(name, direction seen from the slave, width)``; addresses and data are 32 bits, the width
mlib_devel gives a raw device's bus ``m_axi4lite_<regname>_<name>`` and the host's master
``M_AXI_<name>``. :func:`master_view` turns the table around for a port that drives the bus
(the host's side, a block design's external master).

Kept importable under Python 3.8 (mlib_devel m2021a runs there): no run-time ``X | Y``.
"""

from __future__ import annotations

AXIL_SIGNALS: tuple[tuple[str, str, int], ...] = (
    ("awaddr", "in", 32),
    ("awprot", "in", 3),
    ("awvalid", "in", 1),
    ("awready", "out", 1),
    ("wdata", "in", 32),
    ("wstrb", "in", 4),
    ("wvalid", "in", 1),
    ("wready", "out", 1),
    ("bresp", "out", 2),
    ("bvalid", "out", 1),
    ("bready", "in", 1),
    ("araddr", "in", 32),
    ("arprot", "in", 3),
    ("arvalid", "in", 1),
    ("arready", "out", 1),
    ("rdata", "out", 32),
    ("rresp", "out", 2),
    ("rvalid", "out", 1),
    ("rready", "in", 1),
)

ADDRESS_SIGNALS = ("awaddr", "araddr")
# mlib_devel's bus to a raw device (its interconnect's m_axi4lite_<regname>_* ports) carries
# no protection bits: a raw slave ties its awprot/arprot inputs.
PROT_SIGNALS = ("awprot", "arprot")
RAW_DEVICE_SIGNALS = tuple(s for s in AXIL_SIGNALS if s[0] not in PROT_SIGNALS)


def master_view() -> tuple[tuple[str, str, int], ...]:
    """The table seen from the master: every direction swapped."""
    flip = {"in": "out", "out": "in"}
    return tuple((name, flip[d], w) for name, d, w in AXIL_SIGNALS)
