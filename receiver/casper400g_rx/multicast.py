"""IPv4 multicast membership for a capture's groups.

A switch with IGMP snooping forwards a group's traffic to a port only once a host behind
it has reported membership, so the receiver must join. The membership is held by one
plain UDP socket (not the capture's receive sockets, nor the ibv backend's queues, which
have no socket): joining marks the interface a member, the kernel sends the IGMP reports,
and every socket bound to the stream's port on this host then gets the group's datagrams
(Linux's IP_MULTICAST_ALL, on by default). Closing the socket leaves the groups, so the
switch stops forwarding them. spead2 joins the same way for its ibv receiver.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections.abc import Iterable


def parse_groups(groups: Iterable[str]) -> tuple[str, ...]:
    """The groups as dotted IPv4 text, each checked to be a multicast address, no repeats."""
    if isinstance(groups, str):
        raise ValueError(f"groups must be a list of addresses, got the string {groups!r}")
    out: list[str] = []
    for g in groups:
        try:
            addr = ipaddress.IPv4Address(str(g).strip())
        except ValueError:
            raise ValueError(f"multicast group must be an IPv4 address, got {g!r}") from None
        if not addr.is_multicast:
            raise ValueError(f"{g!r} is not an IPv4 multicast address (224.0.0.0/4)")
        if str(addr) in out:
            raise ValueError(f"multicast group {g!r} is listed twice")
        out.append(str(addr))
    return tuple(out)


def interface_index(interface: str) -> int:
    """The kernel's index of `interface` ('' = 0: the route to each group chooses)."""
    if not interface:
        return 0
    try:
        return socket.if_nametoindex(interface)
    except OSError:
        raise ValueError(f"no network interface named {interface!r} on this host") from None


def _mreqn(group: str, ifindex: int) -> bytes:
    # struct ip_mreqn: group, local address (any: the index decides), interface index.
    return struct.pack("=4s4si", socket.inet_aton(group), socket.inet_aton("0.0.0.0"), ifindex)


class Membership:
    """Membership of `groups` on `interface` from `join()` until `leave()`.

    The socket is opened, and the interface looked up, when the object is made: in the
    network namespace of the thread that makes it, which is where the capture's own
    sockets are (a thread that later calls `join` may be elsewhere)."""

    def __init__(self, groups: Iterable[str], interface: str = "") -> None:
        self.groups = parse_groups(groups)
        if not self.groups:
            raise ValueError("a membership needs at least one multicast group")
        self.interface = interface
        self._index = interface_index(interface)
        self._sock: socket.socket | None = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.joined = False

    def join(self) -> None:
        if self.joined:
            return
        if self._sock is None:
            raise RuntimeError("this membership was left; make a new one to join again")
        for group in self.groups:
            try:
                self._sock.setsockopt(
                    socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, _mreqn(group, self._index)
                )
            except OSError as exc:
                self.leave()
                where = self.interface or "the interface of the route to it"
                raise OSError(
                    exc.errno, f"cannot join multicast group {group} on {where}: {exc.strerror}"
                ) from None
        self.joined = True

    def leave(self) -> None:
        """Leave the groups: closing the socket drops its memberships (the kernel sends
        the IGMP leave reports)."""
        sock, self._sock = self._sock, None
        self.joined = False
        if sock is not None:
            sock.close()

    def __enter__(self) -> Membership:
        self.join()
        return self

    def __exit__(self, *exc: object) -> None:
        self.leave()

    def __repr__(self) -> str:
        state = "joined" if self.joined else "not joined"
        return f"Membership({list(self.groups)}, interface={self.interface!r}, {state})"
