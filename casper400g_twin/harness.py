"""The twin's harness process and the control protocol that drives it.

``Harness`` starts a compiled twin (:mod:`.build`) with one end of a socket pair as its
control descriptor and speaks the line protocol of ``harness/twin_main.cpp``: word reads
and writes on the design's AXI4-Lite bus, statistics, the link model's faults. One request
is in flight at a time (a lock keeps the board server's, the ICMP helper's and the status
line's requests apart).

The process runs as the unprivileged user it is given (:mod:`.privileges`), started in
its build's folder and named relative to it, with the descriptors it needs handed over:
its TAP devices (attached by the privileged parent), its pcap files, and the lock that
holds its build in the cache for as long as it runs (:func:`.build.hold_build`).
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from .privileges import RunAs, run_as


class HarnessError(OSError):
    """The twin process failed, or a bus access on it did (the AXI response named)."""


class Harness:
    """A running twin. ``ports``: ``{block: spec}`` with spec ``tapfd:FD:IF`` or
    ``pcapfd:FD:PATH`` (FD among ``fds``), ``udp:LOCAL,PEER``, ``tap:IF`` or ``pcap:PATH``;
    ``fds``: descriptors handed to the process (the ports', a build's hold), which the
    caller may close once this returns; ``user``: who runs it (default
    :func:`.privileges.run_as`'s)."""

    def __init__(
        self,
        exe: Path,
        ports: dict[str, str] | None = None,
        fds: Sequence[int] = (),
        user: RunAs | None = None,
        log: IO[str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.exe = Path(exe)
        self.timeout = timeout
        self.user = user or run_as()
        parent, child = socket.socketpair()
        cmd = [f"./{self.exe.name}", "--control-fd", str(child.fileno())]
        for block, spec in (ports or {}).items():
            cmd += ["--port", f"{block}={spec}"]
        self._lock = threading.Lock()
        try:
            self.proc = subprocess.Popen(
                cmd,
                cwd=self.exe.parent,
                env=self.user.environment(home=self.exe.parent),
                pass_fds=[child.fileno(), *fds],
                stdin=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                # Its own session: a terminal's Ctrl-C reaches the controlling process,
                # which ends the twin in order (EOF on the control socket ends it too).
                start_new_session=True,
                **self.user.popen_kwargs(),
            )
        finally:
            child.close()
        self._sock = parent
        self._sock.settimeout(timeout)
        self._reader = parent.makefile("r", encoding="ascii", newline="\n")
        self._stderr: list[str] = []
        self._log = log
        self._err_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err_thread.start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line.rstrip())
            del self._stderr[:-50]
            if self._log is not None:
                self._log.write(line)

    @property
    def stderr_tail(self) -> str:
        return "\n".join(self._stderr[-10:])

    def request(self, line: str) -> str:
        with self._lock:
            if self.proc.poll() is not None:
                raise HarnessError(
                    f"the twin exited with status {self.proc.returncode}: {self.stderr_tail}"
                )
            try:
                self._sock.sendall((line + "\n").encode("ascii"))
                reply = self._reader.readline()
            except OSError as exc:  # socket.timeout included
                raise HarnessError(f"the twin did not answer {line.split()[0]!r}: {exc}") from exc
            if not reply:
                self.proc.wait(5)
                raise HarnessError(
                    f"the twin exited (status {self.proc.returncode}): {self.stderr_tail}"
                )
            return reply.rstrip("\n")

    # ---------------------------------------------------------------- bus
    def read_words(self, address: int, count: int = 1) -> list[int]:
        reply = self.request(f"r {address:x} {count}")
        parts = reply.split()
        if parts[0] != "ok":
            raise HarnessError(self._bus_error("read", address, parts))
        return [int(w, 16) for w in parts[1:]]

    def write_words(self, address: int, words: Sequence[int]) -> None:
        reply = self.request(f"w {address:x} " + " ".join(f"{w & 0xFFFFFFFF:x}" for w in words))
        parts = reply.split()
        if parts[0] != "ok":
            raise HarnessError(self._bus_error("write", address, parts))

    @staticmethod
    def _bus_error(what: str, address: int, parts: list[str]) -> str:
        if len(parts) >= 3 and parts[1] != "ARGS":
            return f"AXI {what} at {int(parts[2], 16):#010x}: {parts[1]}"
        return f"AXI {what} at {address:#010x}: {' '.join(parts[1:])}"

    # ---------------------------------------------------------------- twin
    def stats(self) -> dict[str, Any]:
        reply = self.request("stats")
        if not reply.startswith("stats "):
            raise HarnessError(f"unexpected reply to stats: {reply[:80]!r}")
        return json.loads(reply[6:])

    def set_faults(self, block: str, **faults: Any) -> None:
        """The link model's schedule for ``block``'s datagrams to the host: ``drop``,
        ``duplicate``, ``delay`` (probabilities), ``depth``, ``seed``, and index lists
        ``drop_at``, ``duplicate_at``, ``delay_at``. No arguments: a clean link."""
        items = []
        for key, value in faults.items():
            if isinstance(value, list | tuple | set | frozenset):
                value = ",".join(str(int(v)) for v in sorted(value))
            items.append(f"{key}={value}")
        reply = self.request(" ".join(["faults", block, *items]))
        if reply != "ok":
            raise ValueError(f"faults {faults}: {reply}")

    def flush_link(self, block: str) -> None:
        if self.request(f"flush {block}") != "ok":
            raise HarnessError(f"flush {block} failed")

    def close(self, timeout: float = 10.0) -> int:
        """End the twin (``quit``, then SIGTERM/SIGKILL if it does not go)."""
        if self.proc.poll() is None:
            with contextlib.suppress(HarnessError):
                self.request("quit")
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self._reader.close()
        self._sock.close()
        return self.proc.returncode

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
