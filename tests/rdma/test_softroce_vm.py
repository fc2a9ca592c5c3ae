"""RoCEv2 frames from our builder, accepted by the Linux kernel's own RDMA stack.

A QEMU VM (Debian's kernel, ``rdma_rxe`` on its NIC; ``verification/softroce``) runs
``rxe_sink``, once per path MTU (1024, 4096): an Unreliable Connection QP and a memory
region over a host buffer. For each, this test builds RDMA WRITE ONLY and WRITE ONLY
with Immediate frames with :mod:`verification.models.roce` from the parameters the VM
reports, sends them to the VM's NIC and checks what the kernel made of them: the bytes
in the buffer (every written byte, and every unwritten byte still the fill pattern), the
immediates' completions, and rxe's counters. One packet is never sent, two are
corrupted (a payload bit, the ICRC), one comes from another source address and one
carries a wrong R_Key: each loses exactly its own bytes and nothing else, and the
packets after it land. Last, rxe is the requester: the RDMA WRITE frames the kernel
itself sends pass our checker and are rebuilt by our builder byte for byte.

Where the checkout lives does not matter: a copy of it with its own venv under ``/tmp``
(which the VM has its own of) runs in the VM from where it is.

Skips when QEMU, the Debian kernel package or a C toolchain cannot be had, except under
``CI=true``, where that is a failure (as root it installs ``qemu-system-x86``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from ipaddress import ip_address
from pathlib import Path

import pytest
from conftest import REPO_ROOT, ensure_qemu

from verification.models.roce import (
    Operation,
    RdmaWrite,
    RoceFrameError,
    Transport,
    build_frame,
    parse_frame,
    write_only_packets,
)
from verification.softroce.image import CACHE_ROOT, VM_XCHG_DIR, ImageError, VmImage, build_image
from verification.softroce.sink import (
    BUFFER_FILE,
    EVENTS_FILE,
    IBV_WC_RECV_RDMA_WITH_IMM,
    IBV_WC_SUCCESS,
    PARAMS_FILE,
    SEND_TAIL,
    STOP_FILE,
    SendRequest,
    SinkBuildError,
    SinkParams,
    build_sink,
    parse_events,
    send_pattern,
    sink_command,
)
from verification.softroce.vm import (
    DMESG_FILE,
    PEER_IP,
    PEER_MAC,
    STATISTIC_FILE,
    VM_IP,
    VM_MAC,
    SoftRoceVm,
)

IN_CI = os.environ.get("CI") == "true"
# One rxe_sink run per path MTU, one after the other in the same VM (eth0 has a 9000-byte
# MTU, so rxe's port allows 4096).
MTUS = (1024, 4096)
FILL = 0x5A
# Starts two packets before the 24-bit wrap: the stream's PSNs run through 0.
START_PSN = 0xFF_FFFE
PEER_QPN = 0x000123
OTHER_IP = "192.0.2.3"


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"soft-RoCE VM test cannot run under CI=true: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def vm_parts() -> tuple[VmImage, Path]:
    ensure_qemu()
    try:
        image = build_image()
    except ImageError as exc:
        _unavailable(f"cannot build the VM image from Debian packages: {exc}")
    try:
        sink = build_sink()
    except SinkBuildError as exc:
        _unavailable(str(exc))
    return image, sink


def _corrupt_payload(frame: bytes) -> bytes:
    """One payload bit flipped after the ICRC was computed (a bit error on the wire)."""
    out = bytearray(frame)
    out[len(out) - 4 - 100] ^= 0x10
    return bytes(out)


def _corrupt_icrc(frame: bytes) -> bytes:
    out = bytearray(frame)
    out[-1] ^= 0x01
    return bytes(out)


@dataclass
class Tally:
    """What one sink run was sent, and what the kernel must have made of it."""

    sent: int = 0
    accepted: int = 0
    completions: int = 0
    faults: Counter[str] = field(default_factory=Counter)


def _messages(mtu: int) -> list[tuple[int, int, int | None, dict[int, str]]]:
    """(offset in the buffer, length, immediate, {packet index: fault}) per message."""
    return [
        (0, 3 * mtu - 72, 100, {}),
        (4 * mtu, 4 * mtu, 101, {1: "drop"}),
        (8 * mtu, mtu + 500, 102, {0: "payload"}),
        (10 * mtu, 256, None, {0: "icrc"}),
        (11 * mtu, 37, 103, {}),  # 3 bytes of padding
        (12 * mtu, 2 * mtu, 104, {}),
        (14 * mtu, 1, None, {}),
        (14 * mtu + 64, 300, 105, {0: "source"}),
        (15 * mtu, mtu + 476, 106, {0: "rkey"}),
    ]


def _buffer_bytes(mtu: int) -> int:
    return 17 * mtu


def _run_sink(vm: SoftRoceVm, sub: str, mtu: int, rng: random.Random) -> Tally:
    """Send one sink run's frames, check its buffer and completions; returns the tally."""
    params_text = vm.wait_for(f"{sub}/{PARAMS_FILE}", timeout=150).read_text()
    params = SinkParams.from_json(params_text)
    assert (params.ip, params.mac, params.mtu, params.psn) == (VM_IP, VM_MAC, mtu, START_PSN)
    assert params.gid == f"::ffff:{VM_IP}"
    size = _buffer_bytes(mtu)
    template = RdmaWrite(
        src_mac=PEER_MAC,
        dst_mac=params.mac,
        src_ip=PEER_IP,
        dst_ip=params.ip,
        dest_qp=params.qpn,
        psn=params.psn,
        payload=b"",
        rkey=params.rkey,
    )
    expected = bytearray([FILL]) * size
    expected_imms: list[tuple[int | None, int]] = []
    tally = Tally()
    psn = params.psn
    for offset, length, imm, faults in _messages(mtu):
        data = rng.randbytes(length)
        w = replace(template, va=params.va + offset, psn=psn)
        packets = list(write_only_packets(w, data, mtu, immediate=imm))
        psn = (psn + len(packets)) & 0xFF_FFFF
        for i, pkt in enumerate(packets):
            frame = build_frame(replace(pkt, ip_id=rng.getrandbits(16)))
            fault = faults.get(i)
            if fault == "drop":
                continue
            if fault is not None:
                tally.faults[fault] += 1
            if fault == "payload":
                frame = _corrupt_payload(frame)
            elif fault == "icrc":
                frame = _corrupt_icrc(frame)
            elif fault == "source":  # intact, but not from the QP's peer address
                frame = build_frame(replace(pkt, src_ip=OTHER_IP))
            elif fault == "rkey":  # intact, but not the memory region's key
                frame = build_frame(replace(pkt, rkey=pkt.rkey ^ 0x100))
            else:
                start = pkt.va - params.va
                expected[start : start + len(pkt.payload)] = pkt.payload
                tally.accepted += 1
                if pkt.operation is Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE:
                    expected_imms.append((imm, len(pkt.payload)))
            # Our checker must judge each frame as the kernel will.
            try:
                parse_frame(frame)
                verdict = None
            except RoceFrameError as exc:
                verdict = exc.reason
            assert verdict == ("icrc" if fault in ("payload", "icrc") else None), fault
            vm.send(frame)
            tally.sent += 1

    text = vm.wait_until(
        f"{sub}/{EVENTS_FILE}", lambda t: len(t.splitlines()) >= len(expected_imms), timeout=60
    )
    (vm.xchg / sub / STOP_FILE).touch()
    buffer = vm.wait_for(f"{sub}/{BUFFER_FILE}", timeout=60).read_bytes()

    events = parse_events(vm.read(f"{sub}/{EVENTS_FILE}").decode())
    assert len(events) == len(expected_imms), text
    # rxe reports the DMA length of the packet that carried the immediate.
    for ev, (imm, nbytes) in zip(events, expected_imms, strict=True):
        assert (ev.status, ev.opcode, ev.immediate, ev.byte_len) == (
            IBV_WC_SUCCESS,
            IBV_WC_RECV_RDMA_WITH_IMM,
            imm,
            nbytes,
        )
    assert len(buffer) == size
    wrong = [i for i in range(size) if buffer[i] != expected[i]]
    assert not wrong, f"MTU {mtu}: {len(wrong)} bytes differ, first at offset {wrong[0]}"
    tally.completions = len(events)
    assert tally.faults == {"payload": 1, "icrc": 1, "source": 1, "rkey": 1}
    assert tally.sent == tally.accepted + sum(tally.faults.values())
    return tally


def _is_roce(frame: bytes) -> bool:
    return len(frame) > 37 and frame[12:14] == b"\x08\x00" and frame[36:38] == b"\x12\xb7"


def _check_requester(vm: SoftRoceVm, send: SendRequest) -> list[bytes]:
    """rxe's own RDMA WRITE frames, checked by our checker and rebuilt byte for byte."""
    params = SinkParams.from_json(vm.wait_for(f"send/{PARAMS_FILE}", timeout=60).read_text())
    mtu = params.mtu
    n_first = -(-send.nbytes // mtu)  # packets of the WRITE with immediate
    frames: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(frames) < n_first + 1 and time.monotonic() < deadline:
        frames += [f for f in vm.received() if _is_roce(f)]
        time.sleep(0.05)
    (vm.xchg / "send" / STOP_FILE).touch()
    assert len(frames) == n_first + 1, f"{len(frames)} RoCE frames from rxe"
    data = send_pattern(send.nbytes + SEND_TAIL)
    ops = (
        [Operation.RDMA_WRITE_FIRST]
        + [Operation.RDMA_WRITE_MIDDLE] * (n_first - 2)
        + [Operation.RDMA_WRITE_LAST_WITH_IMMEDIATE, Operation.RDMA_WRITE_ONLY]
    )
    first = data[: send.nbytes]
    chunks = [first[i : i + mtu] for i in range(0, send.nbytes, mtu)] + [data[send.nbytes :]]
    for k, (frame, op, chunk) in enumerate(zip(frames, ops, chunks, strict=True)):
        p = parse_frame(frame)
        assert (p.transport, p.operation, p.payload) == (Transport.UC, op, chunk)
        assert (p.dest_qp, p.psn) == (PEER_QPN, (START_PSN + k) & 0xFF_FFFF)
        assert (p.src_ip, p.dst_ip) == (ip_address(VM_IP), ip_address(PEER_IP))
        assert (p.src_mac, p.dst_mac) == (VM_MAC, PEER_MAC)
        if op is Operation.RDMA_WRITE_FIRST:
            assert (p.va, p.rkey, p.dma_length) == (send.va, send.rkey, send.nbytes)
        if op is Operation.RDMA_WRITE_ONLY:
            assert (p.va, p.rkey, p.dma_length) == (send.va + send.nbytes, send.rkey, SEND_TAIL)
        if op is Operation.RDMA_WRITE_LAST_WITH_IMMEDIATE:
            assert p.immediate == send.immediate
        # Our builder, given the fields the kernel chose, makes the kernel's frame exactly.
        rebuilt = RdmaWrite(
            src_mac=p.src_mac,
            dst_mac=p.dst_mac,
            src_ip=p.src_ip,
            dst_ip=p.dst_ip,
            dest_qp=p.dest_qp,
            psn=p.psn,
            payload=p.payload,
            va=p.va or 0,
            rkey=p.rkey or 0,
            dma_length=p.dma_length,
            immediate=p.immediate,
            operation=p.operation,
            transport=p.transport,
            src_port=p.src_port,
            ip_id=p.ip_id,
            ttl=p.ttl,
            tos=p.tos,
            pkey=p.pkey,
            solicited=p.solicited,
            ack_request=p.ack_request,
            udp_checksum=p.udp_checksum != 0,
        )
        assert p.dont_fragment
        assert build_frame(rebuilt) == frame, (k, frame.hex())
    return frames


def test_rxe_accepts_rdma_writes(vm_parts: tuple[VmImage, Path]):
    image, sink = vm_parts
    runs = [(f"mtu{mtu}", mtu) for mtu in MTUS]
    send = SendRequest(nbytes=3000, va=0x7F00_0000_1000, rkey=0x1234, immediate=0xC0FFEE)
    commands = " && ".join(
        [
            f"mkdir -p {VM_XCHG_DIR}/{sub} && "
            + sink_command(sink, _buffer_bytes(mtu), mtu, START_PSN, FILL, PEER_QPN, sub=sub)
            for sub, mtu in runs
        ]
        + [
            f"mkdir -p {VM_XCHG_DIR}/send && "
            + sink_command(sink, 8192, 1024, START_PSN, FILL, PEER_QPN, sub="send", send=send)
        ]
    )
    rng = random.Random(19)
    with SoftRoceVm(image, commands) as vm:
        tallies = [_run_sink(vm, sub, mtu, rng) for sub, mtu in runs]
        # Nothing came back while rxe was the responder: a UC responder sends no ACKs.
        requester_frames = _check_requester(vm, send)
        assert vm.finish() == 0, vm.console_tail()
        from_vm = vm.received()

        # Every frame reached rxe's UDP socket. rxe counts a packet (rcvd_pkts) once its
        # headers, source address and ICRC pass, before the responder checks the R_Key:
        # so it counted the accepted ones and the wrong-key one, and the two that differ
        # from an intact frame only in a payload bit or the ICRC were rejected by the ICRC
        # check (rxe 6.1 has no counter or log line of its own for that).
        sent = sum(t.sent for t in tallies)
        udp = vm.snmp("Udp")
        assert (udp["InDatagrams"], udp["InErrors"], udp["InCsumErrors"]) == (sent, 0, 0), udp
        counters = vm.counters()
        counted = sum(t.accepted + t.faults["rkey"] for t in tallies)
        assert counters["rcvd_pkts"] == counted, (counters, tallies)
        assert counters["rdma_recvs"] == sum(t.completions for t in tallies), counters
        # `rdma statistic` reads the same counters through netlink.
        words = vm.read(STATISTIC_FILE).decode().split()
        assert int(words[words.index("rcvd_pkts") + 1]) == counters["rcvd_pkts"], words
        for name in ("duplicate_request", "out_of_seq_request", "rcvd_seq_err", "send_err"):
            assert counters[name] == 0, (name, counters)
        # The requester's frames were all the RoCE frames the VM sent.
        assert not [f for f in from_vm if _is_roce(f)]
        assert counters["sent_pkts"] == len(requester_frames), counters
        assert counters["rdma_sends"] == 0, counters  # it counts SENDs, not WRITEs
        dmesg = vm.read(DMESG_FILE).decode(errors="replace")
        assert "rxe0: added eth0" in dmesg
        trouble = [ln for ln in dmesg.splitlines() if "WARNING" in ln or "BUG" in ln]
        assert not trouble, trouble


# Run by the venv under /tmp, from the checkout under /tmp: one VM whose commands go into
# the checkout, import its code with the venv's Python and run the verbs sink built into
# the checkout's cache (as the two tests above do from wherever their checkout is).
GUEST_CHECK = """
import json, sys
from pathlib import Path
from verification.softroce.image import REPO_ROOT, VM_XCHG_DIR, build_image
from verification.softroce.sink import build_sink
from verification.softroce.vm import SoftRoceVm
image = build_image(cache_root=Path(sys.argv[1]))  # the kernel: not fetched again
sink = build_sink()  # into this checkout's own cache
out = VM_XCHG_DIR
commands = (
    f"cd {REPO_ROOT} && {sys.executable} -c "
    "'import sys, verification.softroce.vm as v; print(v.__file__, sys.prefix)' "
    f"> {out}/where && {{ {sink} --dev rxe0 > {out}/sink 2>&1; true; }}"
)
with SoftRoceVm(image, commands) as vm:
    status = vm.finish(timeout=240)
    got = {"status": status, "sink_path": str(sink), "console": vm.console_tail()}
    for name in ("where", "sink"):
        got[name] = (vm.xchg / name).read_text() if (vm.xchg / name).exists() else ""
    print(json.dumps(got))
"""


def test_a_checkout_and_its_venv_under_tmp_run_in_the_vm(vm_parts: tuple[VmImage, Path]):
    """A newcomer's `git clone` and venv under /tmp: the VM's /tmp is its own, so without
    sharing them it "can't cd" there. The checkout (its tracked verification code) and a
    venv are made under /tmp; from there a VM runs the checkout's code with the venv's
    Python and the sink from the checkout's cache."""
    base = Path(tempfile.mkdtemp(prefix="c4g-clone-", dir="/tmp"))
    try:
        checkout = base / "p"
        tracked = subprocess.run(
            ["git", "ls-files", "-z", "verification"],
            cwd=REPO_ROOT, capture_output=True, check=True,
        ).stdout.decode().split("\0")  # fmt: skip
        for rel in filter(None, tracked):
            (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / rel, checkout / rel)
        venv = base / "venv"
        minor = f"{sys.version_info.major}.{sys.version_info.minor}"
        base_python = Path(sys.base_prefix) / "bin" / f"python{minor}"
        subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(venv)], check=True)
        run = subprocess.run(
            [str(venv / "bin" / "python"), "-c", GUEST_CHECK, str(CACHE_ROOT)],
            cwd=checkout, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        got = json.loads(run.stdout.strip().splitlines()[-1])
        assert got["status"] == 0 and got["where"], got["console"]
        module, prefix = got["where"].split()
        assert module == str(checkout / "verification" / "softroce" / "vm.py"), got
        assert prefix == str(venv), got
        assert got["sink_path"].startswith(str(checkout / ".cache" / "softroce")), got
        # It ran in the VM: its argument check speaks, not the shell's "not found".
        assert got["sink"].startswith("rxe_sink: need --dev"), got
    finally:
        shutil.rmtree(base, ignore_errors=True)
