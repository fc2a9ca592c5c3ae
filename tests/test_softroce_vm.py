"""RoCEv2 frames from our builder, accepted by the Linux kernel's own RDMA stack.

A QEMU VM (Debian's kernel, ``rdma_rxe`` on its NIC; ``verification/softroce``) runs
``rxe_sink``: an Unreliable Connection QP and a memory region over a host buffer. This
test builds RDMA WRITE ONLY and WRITE ONLY with Immediate frames with
:mod:`verification.models.roce` from the parameters the VM reports, sends them to the
VM's NIC and checks what the kernel made of them: the bytes in the buffer (every written
byte, and every unwritten byte still the fill pattern), the immediates' completions, and
rxe's counters. One packet is never sent, two are corrupted (a payload bit, the ICRC),
one comes from another source address and one carries a wrong R_Key: each loses exactly
its own bytes and nothing else, and the packets after it land.

Skips when QEMU, the Debian kernel package or a C toolchain cannot be had, except under
``CI=true``, where that is a failure (as root it installs ``qemu-system-x86``).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from verification.models.roce import (
    Operation,
    RdmaWrite,
    RoceFrameError,
    build_frame,
    parse_frame,
    write_only_packets,
)
from verification.softroce.image import ImageError, VmImage, build_image
from verification.softroce.sink import (
    BUFFER_FILE,
    EVENTS_FILE,
    IBV_WC_RECV_RDMA_WITH_IMM,
    IBV_WC_SUCCESS,
    PARAMS_FILE,
    STOP_FILE,
    SinkBuildError,
    SinkParams,
    build_sink,
    parse_events,
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
    qemu_available,
)

IN_CI = os.environ.get("CI") == "true"
MTU = 1024
BUFFER_BYTES = 64 * 1024
FILL = 0x5A
# Starts two packets before the 24-bit wrap: the stream's PSNs run through 0.
START_PSN = 0xFF_FFFE
PEER_QPN = 0x000123
OTHER_IP = "192.0.2.3"


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"soft-RoCE VM test cannot run under CI=true: {reason}")
    pytest.skip(reason)


def _ensure_qemu() -> None:
    if qemu_available():
        return
    if IN_CI and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "qemu-system-x86"],
        ):
            subprocess.run(cmd, env=env, check=False, capture_output=True)
    if not qemu_available():
        _unavailable("qemu-system-x86_64 not found (Debian package qemu-system-x86)")


@pytest.fixture(scope="module")
def vm_parts() -> tuple[VmImage, Path]:
    _ensure_qemu()
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


def test_rxe_accepts_rdma_writes(vm_parts: tuple[VmImage, Path]):
    image, sink = vm_parts
    cmd = sink_command(sink, BUFFER_BYTES, MTU, START_PSN, FILL, PEER_QPN)
    rng = random.Random(19)
    with SoftRoceVm(image, cmd) as vm:
        params = SinkParams.from_json(vm.wait_for(PARAMS_FILE, timeout=150).read_text())
        assert (params.ip, params.mac, params.mtu, params.psn) == (VM_IP, VM_MAC, MTU, START_PSN)
        assert params.gid == f"::ffff:{VM_IP}"

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
        # (offset in the buffer, length, immediate, {packet index: fault}) per message.
        messages = [
            (0, 3000, 100, {}),
            (8192, 4096, 101, {1: "drop"}),
            (16384, 1524, 102, {0: "payload"}),
            (24576, 256, None, {0: "icrc"}),
            (28672, 37, 103, {}),  # 3 bytes of padding
            (32768, 2 * MTU, 104, {}),
            (40960, 1, None, {}),
            (45056, 300, 105, {0: "source"}),
            (49152, 1500, 106, {0: "rkey"}),
        ]
        expected = bytearray([FILL]) * BUFFER_BYTES
        expected_imms: list[tuple[int, int]] = []
        psn = params.psn
        sent = good = 0
        faults_sent: Counter[str] = Counter()
        for offset, length, imm, faults in messages:
            data = rng.randbytes(length)
            w = replace(template, va=params.va + offset, psn=psn)
            packets = list(write_only_packets(w, data, MTU, immediate=imm))
            psn = (psn + len(packets)) & 0xFF_FFFF
            for i, pkt in enumerate(packets):
                frame = build_frame(replace(pkt, ip_id=rng.getrandbits(16)))
                fault = faults.get(i)
                if fault == "drop":
                    continue
                if fault is not None:
                    faults_sent[fault] += 1
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
                    good += 1
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
                sent += 1

        text = vm.wait_until(
            EVENTS_FILE, lambda t: len(t.splitlines()) >= len(expected_imms), timeout=60
        )
        (vm.xchg / STOP_FILE).touch()
        assert vm.finish() == 0, vm.console_tail()
        from_vm = vm.received()

        events = parse_events(vm.read(EVENTS_FILE).decode())
        assert len(events) == len(expected_imms), text
        # rxe reports the DMA length of the packet that carried the immediate.
        for ev, (imm, nbytes) in zip(events, expected_imms, strict=True):
            assert (ev.status, ev.opcode, ev.immediate, ev.byte_len) == (
                IBV_WC_SUCCESS,
                IBV_WC_RECV_RDMA_WITH_IMM,
                imm,
                nbytes,
            )
        buffer = vm.read(BUFFER_FILE)
        assert len(buffer) == BUFFER_BYTES
        wrong = [i for i in range(BUFFER_BYTES) if buffer[i] != expected[i]]
        assert not wrong, f"{len(wrong)} bytes differ, first at offset {wrong[0]}"

        # Every frame reached rxe's UDP socket. rxe counts a packet (rcvd_pkts) once its
        # headers, source address and ICRC pass, before the responder checks the R_Key:
        # so it counted the intact ones and the wrong-key one, and the two that differ from
        # an intact frame only in a payload bit or the ICRC were rejected by the ICRC check
        # (rxe 6.1 has no counter or log line of its own for that).
        udp = vm.snmp("Udp")
        assert (udp["InDatagrams"], udp["InErrors"], udp["InCsumErrors"]) == (sent, 0, 0), udp
        assert faults_sent == {"payload": 1, "icrc": 1, "source": 1, "rkey": 1}
        counters = vm.counters()
        # `rdma statistic` reads the same counters through netlink.
        words = vm.read(STATISTIC_FILE).decode().split()
        assert int(words[words.index("rcvd_pkts") + 1]) == counters["rcvd_pkts"], words
        assert counters["rcvd_pkts"] == good + faults_sent["rkey"], (counters, sent, good)
        assert sent == good + sum(faults_sent.values())
        assert counters["rdma_recvs"] == len(expected_imms), counters
        for name in ("duplicate_request", "out_of_seq_request", "rcvd_seq_err", "send_err"):
            assert counters[name] == 0, (name, counters)
        # A UC responder answers nothing: no RoCE packet may come back.
        roce_back = [f for f in from_vm if len(f) > 37 and f[36:38] == b"\x12\xb7"]
        assert not roce_back, f"{len(roce_back)} RoCE frames from the VM"
        dmesg = vm.read(DMESG_FILE).decode(errors="replace")
        assert "rxe0: added eth0" in dmesg
        trouble = [ln for ln in dmesg.splitlines() if "WARNING" in ln or "BUG" in ln]
        assert not trouble, trouble
