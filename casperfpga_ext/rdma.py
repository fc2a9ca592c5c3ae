"""The core's RDMA mode from casperfpga's side: point the core at a receiver's chunk ring.

``FourHundredGbe.rdma_connect(params)`` takes what the receiver's ``rdma`` source reports
(``Capture.rdma_params``: a ``casper400g_rx.rdma.RdmaParams``, its ``as_dict()``, or any
mapping or object with the same names) and writes the rdma_* registers: destination QP,
start PSN, R_Key, ring address, slot size, slots per chunk, chunks, the receiver's IP and
(through the ARP table) MAC, the credit port; then it switches the RDMA mode on, which
restarts the ring at datagram 0 (docs/design/core.md §6). Every value is checked first
(a ValueError names it) and every write read back. Runs on Python 3.8 (casperfpga's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .addressing import parse_ip, parse_mac

PATH_MTUS = {1024: 0, 2048: 1, 4096: 2}
NO_CREDIT = 0xFFFFFFFF
SLOT_HEADER_BYTES = 8
FIELDS = ("qpn", "psn", "rkey", "va", "ip", "mac", "mtu", "slot_size", "slots_per_chunk",
          "chunks", "credit_port")  # fmt: skip


def _get(params: Any, name: str) -> Any:
    if isinstance(params, Mapping):
        if name not in params:
            raise ValueError(f"RDMA parameters lack {name!r}")
        return params[name]
    if not hasattr(params, name):
        raise ValueError(f"RDMA parameters lack {name!r}")
    return getattr(params, name)


def _int(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    v = value.__index__()
    if not lo <= v <= hi:
        raise ValueError(f"{name} {v!r} is outside {lo}..{hi}")
    return v


def check_params(params: Any) -> dict[str, int]:
    """The register values of ``params``, each checked (ValueError naming the value)."""
    mtu = _int("mtu", _get(params, "mtu"), 0, 1 << 16)
    if mtu not in PATH_MTUS:
        raise ValueError(f"mtu {mtu} is not a RoCE path MTU the core sends (1024, 2048, 4096)")
    return {
        "qpn": _int("qpn", _get(params, "qpn"), 0, 0xFFFFFF),
        "psn": _int("psn", _get(params, "psn"), 0, 0xFFFFFF),
        "rkey": _int("rkey", _get(params, "rkey"), 0, 0xFFFFFFFF),
        "va": _int("va", _get(params, "va"), 0, (1 << 64) - 1),
        "ip": parse_ip(_get(params, "ip")),
        "mac": parse_mac(_get(params, "mac")),
        "mtu": PATH_MTUS[mtu],
        "slot_size": _int("slot_size", _get(params, "slot_size"), SLOT_HEADER_BYTES + 1, 0xFFFFFF),
        "slots_per_chunk": _int("slots_per_chunk", _get(params, "slots_per_chunk"), 1, 0xFFFFFF),
        "chunks": _int("chunks", _get(params, "chunks"), 1, 0xFFFFFF),
        "credit_port": _int("credit_port", _get(params, "credit_port"), 0, 0xFFFF),
    }


def connect(gbe: Any, params: Any, flow_control: bool = True) -> None:
    """``gbe``: a FourHundredGbe (this module is imported by gbe.py, not the other way)."""
    v = check_params(params)
    if gbe.read_field("rdma_ctrl", "en"):
        gbe.write_field("rdma_ctrl", "en", 0)
    gbe.write_reg("rdma_qpn", v["qpn"])
    gbe.write_reg("rdma_psn", v["psn"])
    gbe.write_reg("rdma_rkey", v["rkey"])
    gbe.write_reg("rdma_va_lo", v["va"] & 0xFFFFFFFF)
    gbe.write_reg("rdma_va_hi", v["va"] >> 32)
    gbe.write_reg("rdma_slot_size", v["slot_size"])
    gbe.write_reg("rdma_slots", v["slots_per_chunk"])
    gbe.write_reg("rdma_chunks", v["chunks"])
    gbe.write_reg("rdma_dest_ip", v["ip"])
    gbe.write_reg("rdma_credit", NO_CREDIT)
    gbe.write_reg("rdma_credit_port", v["credit_port"])
    gbe.set_single_arp_entry(v["ip"], v["mac"])
    ctrl = 1 | (int(bool(flow_control)) << 1) | (v["mtu"] << 4)
    gbe.write_reg("rdma_ctrl", ctrl)


def status(gbe: Any) -> dict[str, int]:
    names = ("rdma_next_psn", "rdma_chunk", "rdma_credit", "rdma_chunks_sent",
             "rdma_chunks_dropped", "rdma_datagrams", "rdma_datagrams_dropped", "rdma_oversize",
             "rdma_credit_frames", "rdma_icrc_frames")  # fmt: skip
    return {n: gbe.read_reg(n) for n in names}
