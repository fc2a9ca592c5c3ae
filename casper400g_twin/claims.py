"""What a twin takes for itself before it starts: its KATCP port, checked free before the
compile (minutes, the first time); and its pcap files, which no other running twin writes.

A pcap file is claimed with an exclusive ``flock`` held for the twin's life. The default
name (``<build>/twin_tx.pcap``) goes to the first twin of a build; a second twin of the same
build, running at the same time, gets ``twin_tx-2.pcap``, a third ``twin_tx-3.pcap``, and a
name is taken again once its twin has ended. A file named by the user that another twin
holds is refused.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from dataclasses import dataclass
from pathlib import Path

MAX_NUMBERED = 100


class ClaimError(RuntimeError):
    """A port or file the twin needs is another's (which one, and what to do, named)."""


def check_port_free(host: str, port: int) -> None:
    """ClaimError unless a listener can bind ``host:port`` (port 0: any, always free)."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        # As the board server's listener does: a port left in TIME_WAIT is free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            why = "in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise ClaimError(
                f"KATCP port {port} on {host} is {why}: another twin or board server may "
                "listen there; choose another (--port N, or 0 for any free port)"
            ) from None


@dataclass
class PcapClaim:
    """A pcap file this twin alone writes, for as long as ``fd`` (its lock) is open."""

    path: Path
    fd: int

    def open_for_writing(self) -> int:
        """A new descriptor on the file, emptied, for the harness (the caller closes it)."""
        return os.open(self.path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _try_claim(path: Path) -> PcapClaim | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return PcapClaim(path, fd)


def claim_pcap(path: Path, numbered: bool) -> PcapClaim:
    """Claim ``path``; when another running twin has it, ``numbered`` tries
    ``<stem>-2<suffix>``, ``<stem>-3<suffix>``, … and otherwise ClaimError."""
    claim = _try_claim(path)
    if claim is not None:
        return claim
    if not numbered:
        raise ClaimError(f"{path} is being written by another running twin: name another file")
    for n in range(2, MAX_NUMBERED + 1):
        claim = _try_claim(path.with_name(f"{path.stem}-{n}{path.suffix}"))
        if claim is not None:
            return claim
    raise ClaimError(f"{path} and {MAX_NUMBERED - 1} numbered files beside it are all in use")
