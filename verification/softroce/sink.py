"""``rxe_sink``: the verbs program the soft-RoCE VM runs to receive RDMA WRITEs.

It is compiled on the host against Debian's libibverbs (``libibverbs-dev``) and runs in
the VM from the host's filesystem; see ``rxe_sink.c`` for what it does and the files it
writes into the exchange folder.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .image import CACHE_ROOT, VM_XCHG_DIR
from .vm import PEER_IP, RDMA_DEVICE

SOURCE = Path(__file__).with_name("rxe_sink.c")
PARAMS_FILE = "params.json"
EVENTS_FILE = "events.txt"
BUFFER_FILE = "buffer.bin"
STOP_FILE = "stop"

# enum ibv_wc_opcode / ibv_wc_status values the completions carry (infiniband/verbs.h).
IBV_WC_SUCCESS = 0
IBV_WC_RECV_RDMA_WITH_IMM = 129


class SinkBuildError(RuntimeError):
    """rxe_sink cannot be compiled here (no C compiler or no libibverbs headers)."""


def build_sink(cache_root: Path = CACHE_ROOT) -> Path:
    """The compiled rxe_sink, cached by a hash of its source."""
    source = SOURCE.read_bytes()
    out = cache_root / f"rxe_sink-{hashlib.sha256(source).hexdigest()[:16]}"
    if out.is_file():
        return out
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SinkBuildError("no C compiler (cc/gcc) to build rxe_sink")
    if not Path("/usr/include/infiniband/verbs.h").is_file():
        raise SinkBuildError("libibverbs headers missing (Debian package libibverbs-dev)")
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    cmd = [cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(tmp), str(SOURCE), "-libverbs"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SinkBuildError(f"{shlex.join(cmd)} failed:\n{res.stderr}")
    tmp.rename(out)
    return out


@dataclass(frozen=True)
class SinkParams:
    """The connection parameters rxe_sink reports (what a sender needs to write to it)."""

    qpn: int
    psn: int
    rkey: int
    va: int
    size: int
    fill: int
    mtu: int
    gid: str
    gid_index: int
    ip: str
    mac: str
    netdev: str

    @classmethod
    def from_json(cls, text: str) -> SinkParams:
        return cls(**json.loads(text))


# Bytes of the plain RDMA WRITE that follows the one with immediate (SEND_TAIL in C).
SEND_TAIL = 100


@dataclass(frozen=True)
class SendRequest:
    """rxe_sink as the requester: an RDMA WRITE with immediate of ``nbytes`` to ``va``,
    then a plain RDMA WRITE of :data:`SEND_TAIL` bytes right after it."""

    nbytes: int
    va: int
    rkey: int
    immediate: int


def send_pattern(n: int) -> bytes:
    """The bytes rxe_sink sends (send_pattern() in C)."""
    return bytes((i * 131 + 7) & 0xFF for i in range(n))


@dataclass(frozen=True)
class Completion:
    status: int
    opcode: int
    immediate: int
    byte_len: int


def parse_events(text: str) -> list[Completion]:
    out = []
    for line in text.splitlines():
        status, opcode, imm, byte_len = (int(v) for v in line.split())
        out.append(Completion(status, opcode, imm, byte_len))
    return out


def sink_command(
    binary: Path,
    size: int,
    mtu: int,
    psn: int,
    fill: int,
    peer_qpn: int,
    peer_ip: str = PEER_IP,
    timeout_s: int = 120,
    sub: str = "",
    send: SendRequest | None = None,
) -> str:
    """The shell command that runs rxe_sink in the VM, writing into the exchange folder
    (its subfolder ``sub``, which must exist, when given); with ``send`` it also writes to
    the peer (rxe as the requester)."""
    argv = [
        str(binary),
        "--dev", RDMA_DEVICE,
        "--peer-ip", peer_ip,
        "--peer-qpn", str(peer_qpn),
        "--psn", str(psn),
        "--mtu", str(mtu),
        "--size", str(size),
        "--fill", str(fill),
        "--out", f"{VM_XCHG_DIR}/{sub}" if sub else VM_XCHG_DIR,
        "--timeout", str(timeout_s),
    ]  # fmt: skip
    if send is not None:
        argv += [
            "--send-bytes", str(send.nbytes),
            "--send-va", str(send.va),
            "--send-rkey", str(send.rkey),
            "--send-imm", str(send.immediate),
        ]  # fmt: skip
    return shlex.join(argv)
