"""scapy's view of a RoCEv2 RDMA WRITE packet: the independent reference for our frames.

scapy's ``BTH`` (scapy.contrib.roce) computes the ICRC itself; RETH and ImmDt, which scapy
does not define, are declared here as scapy field lists from the InfiniBand layouts
(64-bit VA, 32-bit R_Key, 32-bit DMA length; 32-bit immediate). :func:`scapy_frame` builds
the frame of a :class:`~verification.models.roce.RdmaWrite` with scapy's layers only, so a
frame that equals it agrees with scapy on every header field and on the ICRC.
"""

from __future__ import annotations

from typing import ClassVar

from scapy.contrib.roce import BTH
from scapy.fields import Field, IntField, XIntField, XLongField
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from .roce import Operation, RdmaWrite, opcode


class Reth(Packet):
    name = "RETH"
    fields_desc: ClassVar[list[Field]] = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        IntField("dma_length", 0),
    ]


class ImmDt(Packet):
    name = "ImmDt"
    fields_desc: ClassVar[list[Field]] = [XIntField("immediate", 0)]


def scapy_frame(w: RdmaWrite) -> bytes:
    """The Ethernet frame (no FCS) scapy builds for ``w``, ICRC computed by scapy."""
    pad = -len(w.payload) % 4
    udp = UDP(sport=w.src_port, dport=4791)
    if not w.udp_checksum:
        udp.chksum = 0
    pkt = (
        Ether(dst=w.dst_mac, src=w.src_mac)
        / IP(src=str(w.src_ip), dst=str(w.dst_ip), id=w.ip_id, flags="DF", ttl=w.ttl, tos=w.tos)
        / udp
        / BTH(
            opcode=opcode(w.transport, w.operation),
            solicited=int(w.solicited),
            padcount=pad,
            pkey=w.pkey,
            dqpn=w.dest_qp,
            ackreq=int(w.ack_request),
            psn=w.psn,
        )
    )
    if w.operation in (
        Operation.RDMA_WRITE_FIRST,
        Operation.RDMA_WRITE_ONLY,
        Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE,
    ):
        length = len(w.payload) if w.dma_length is None else w.dma_length
        pkt = pkt / Reth(va=w.va, rkey=w.rkey, dma_length=length)
    if w.immediate is not None:
        pkt = pkt / ImmDt(immediate=w.immediate)
    return bytes(pkt / Raw(w.payload + b"\0" * pad))
