"""Checks of a captured frame against the example stream, shared by the demo's stages."""

from __future__ import annotations

from .models import frames


def verify_frame(frame: bytes, n: int, cfg: dict) -> str | None:
    """Why `frame` is not datagram `n` of the example stream as configured, or None."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    pkt = Ether(frame)
    if IP not in pkt or UDP not in pkt:
        return "not an IPv4/UDP frame"
    rebuilt = pkt.copy()
    del rebuilt[IP].chksum
    del rebuilt[UDP].chksum
    if bytes(rebuilt) != frame:
        return "checksums differ from scapy's"
    if bytes(pkt[UDP].payload) != frames.example_payload(n):
        return "payload differs from the example-stream formula"
    if pkt[IP].dst != cfg["dest_ip"] or pkt[UDP].dport != cfg["dest_port"]:
        return "wrong destination"
    if pkt[IP].id != n:
        return f"IP Identification {pkt[IP].id}, expected {n}"
    return None
