"""The "IPv4:port" endpoints that captures bind to (shared by capture.py and ibv.py)."""

from __future__ import annotations

import ipaddress


def parse_endpoint(bind: str) -> tuple[str, int]:
    """Split "host:port" (IPv4); raises ValueError naming the bad value."""
    host, sep, port_text = bind.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"bind must be 'IPv4:port' with port 0..65535, got {bind!r}")
    host = host or "0.0.0.0"
    if host != "localhost":
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"bad IPv4 address {host!r} in bind={bind!r}") from None
    return host, int(port_text)
