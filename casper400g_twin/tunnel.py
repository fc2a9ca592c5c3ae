"""The UDP tunnels of the twin's ``udp`` mode: one per 400GbE block.

A tunnel carries one raw Ethernet frame (no FCS) per UDP datagram, both ways, between a
local endpoint (the twin's socket) and a peer (whoever plays the host). Each block has a
tunnel of its own, so a peer tells the FPGA's ports apart by the socket a frame arrives
on, as a host tells its NICs apart, with nothing added to the frames.

The first block's tunnel is the one given; block ``k``'s, unless given too, is at both
ports + ``k``: ``127.0.0.1:50000,127.0.0.1:60000`` for a two-port design puts ``gbe0`` on
50000 <-> 60000 and ``gbe1`` on 50001 <-> 60001. A local port 0 is a free one, chosen
when the block's tunnel is first opened (:meth:`Tunnel.bound`) so that the twin can say
where it is.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    """An IPv4 address and UDP port (0: any free port, for a local endpoint only)."""

    ip: str
    port: int

    @classmethod
    def parse(cls, text: str, what: str) -> Endpoint:
        """``IP:PORT``; ValueError naming ``what`` and the text otherwise."""
        host, sep, port = text.strip().rpartition(":")
        if not sep or not host:
            raise ValueError(f"{what} {text!r}: want IPv4_ADDRESS:PORT")
        try:
            ip = ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"{what} {text!r}: {host!r} is not an IPv4 address") from None
        if not port.isdigit() or int(port) > 0xFFFF:
            raise ValueError(f"{what} {text!r}: port {port!r} is not 0..65535")
        return cls(str(ip), int(port))

    def __str__(self) -> str:
        return f"{self.ip}:{self.port}"


@dataclass(frozen=True)
class Tunnel:
    """One block's tunnel: the twin's ``local`` socket and the ``peer`` it sends to."""

    local: Endpoint
    peer: Endpoint

    def __post_init__(self) -> None:
        if self.peer.port == 0:
            raise ValueError(f"tunnel peer {self.peer}: a peer needs its port (1..65535)")

    @classmethod
    def parse(cls, text: str) -> Tunnel:
        """``LOCAL_IP:PORT,PEER_IP:PORT``; ValueError naming the text otherwise."""
        local, sep, peer = text.partition(",")
        if not sep:
            raise ValueError(f"tunnel {text!r}: want LOCAL_IP:PORT,PEER_IP:PORT")
        return cls.of(local, peer)

    @classmethod
    def of(cls, local: str, peer: str) -> Tunnel:
        return cls(Endpoint.parse(local, "tunnel local"), Endpoint.parse(peer, "tunnel peer"))

    def shifted(self, k: int) -> Tunnel:
        """Block ``k``'s tunnel when this is the first block's: both ports + ``k`` (a local
        port 0 stays 0)."""
        local = self.local.port + k if self.local.port else 0
        peer = self.peer.port + k
        if max(local, peer) > 0xFFFF:
            raise ValueError(
                f"tunnel {self}: block {k}'s tunnel would be at port {max(local, peer)}, "
                "past 65535; give that block's tunnel (another --tunnel)"
            )
        return Tunnel(Endpoint(self.local.ip, local), Endpoint(self.peer.ip, peer))

    def bound(self) -> Tunnel:
        """This tunnel with a local port 0 replaced by a port free now on its address (the
        twin's process binds it a moment later)."""
        if self.local.port:
            return self
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind((self.local.ip, 0))
            except OSError as exc:
                raise ValueError(f"tunnel local {self.local}: {exc.strerror}") from None
            port = s.getsockname()[1]
        return Tunnel(Endpoint(self.local.ip, port), self.peer)

    def spec(self) -> str:
        """The harness's ``--port`` spec of this tunnel."""
        return f"udp:{self.local},{self.peer}"

    def __str__(self) -> str:
        return f"{self.local} <-> {self.peer}"
