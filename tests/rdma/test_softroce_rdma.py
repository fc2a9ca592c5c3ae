"""The zero-CPU path end to end against Linux's own RDMA stack: the simulated core in RDMA
mode writes into the project's receiver (the ``rdma`` source) running in a QEMU VM on
``rdma_rxe``.

1. The VM starts ``verification.softroce.rdma_guest``: ``Capture(RdmaSource(...))``
   on rxe0, which reports ``cap.rdma_params``.
2. The RTL simulation of fhg_core (cocotb job ``verification/cocotb_rdma_stream.py``) is
   pointed at that ring with FourHundredGbe.rdma_connect's register values and sends an
   example stream: chunks after the ring's first pass go out while no credit has come
   back (an exhausted credit window: the core drops them whole), then the credits catch
   up. The same stream is then sent as UDP.
3. The core's RoCEv2 frames go into the VM's NIC, with three faults: a lost packet, a
   packet with a flipped payload bit (rxe's ICRC check must reject it) and a lost packet
   that carried a chunk's immediate.

Checked: every chunk the core wrote is delivered with every byte right and exactly the
slots of the faulty packets missing; the receiver's accounting (lost slots, chunks the
core dropped, the chunk that lost its immediate) is exact; rxe counted every frame but the
corrupted one and no sequence error; the credit datagrams the receiver sent say what it
released; and each chunk equals the chunk the UDP path (the receiver's pcap backend, same
stream, same losses) builds. Skips outside CI without QEMU or the Debian kernel package;
fails under CI=true.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from conftest import REPO_ROOT, ensure_qemu, need_tool

import casper400g_rx as rx
from casper400g_dev import sim
from casper400g_rx.rdma import RdmaParams
from verification.models.rdma_ring import RingConfig, RingSender
from verification.models.roce import Operation, RdmaWrite, parse_frame
from verification.pcapio import read_pcap, write_pcap
from verification.softroce import rdma_guest
from verification.softroce.image import VM_XCHG_DIR, ImageError, build_image
from verification.softroce.vm import PEER_IP, PEER_MAC, VM_IP, SoftRoceVm

PAYLOAD = 2048  # one packet per slot at MTU 4096: a slot's header proves its data
SLOTS = 4
CHUNKS = 3
N_CHUNKS = 10
STALLED = 2  # chunks 3 and 4 go out before any credit came back
CREDIT_PORT = 4792
UDP_PORT = 7150
CORE_PORT = 7148
PSN = 0xFF_FFF9  # the PSNs run through the 24-bit wrap


def _credit_of(frame: bytes) -> int | None:
    """The chunk a credit datagram from the receiver releases, or None for other frames."""
    if (
        len(frame) >= 50
        and frame[36:38] == CREDIT_PORT.to_bytes(2, "big")
        and frame[42:46] == b"CRDT"
    ):
        return int.from_bytes(frame[46:50], "big")
    return None


def _expected(params: RdmaParams) -> tuple[list[RdmaWrite], RingSender]:
    cfg = RingConfig(qpn=params.qpn, psn=params.psn, rkey=params.rkey, va=params.va,
                     slot_size=params.slot_size, slots=SLOTS, chunks=CHUNKS)  # fmt: skip
    tmpl = RdmaWrite(src_mac=PEER_MAC, dst_mac=params.mac, src_ip=PEER_IP, dst_ip=VM_IP,
                     dest_qp=0, psn=0, payload=b"", src_port=CORE_PORT)  # fmt: skip
    sender = RingSender(cfg, tmpl)
    payloads = rx.example_payloads(range(N_CHUNKS * SLOTS), PAYLOAD)
    out: list[RdmaWrite] = []
    for c in range(N_CHUNKS):
        if c >= CHUNKS + STALLED:
            sender.credit = c - 1
        for k in range(c * SLOTS, (c + 1) * SLOTS):
            out += sender.send(payloads[k].tobytes())
    return out, sender


def test_core_writes_into_the_receiver_through_rdma_rxe(tmp_path: Path) -> None:
    ensure_qemu()
    try:
        image = build_image()
    except ImageError as exc:
        need_tool(f"cannot build the VM image from Debian packages: {exc}")
    sub = "rdma"
    guest = [
        sys.executable, "-m", "verification.softroce.rdma_guest",
        "--out", f"{VM_XCHG_DIR}/{sub}", "--ip", VM_IP, "--peer-ip", PEER_IP,
        "--credit-port", str(CREDIT_PORT), "--mtu", "4096", "--psn", str(PSN),
        "--payload", str(PAYLOAD), "--slots", str(SLOTS), "--chunks", str(CHUNKS),
        # The test ends the guest (STOP_FILE); this deadline only bounds a host that died.
        "--timeout", "1800",
    ]  # fmt: skip
    # First the first-contact check a user runs on new hardware, then the receiver.
    hwcheck = [
        str(Path(sys.executable).with_name("casper400g-rx")), "hwcheck", "--rdma", "--json",
        "--peer-ip", PEER_IP, "--ip", VM_IP, "--payload", str(PAYLOAD), "--seconds", "0",
    ]  # fmt: skip
    commands = (
        f"mkdir -p {VM_XCHG_DIR}/{sub} && cd {shlex.quote(str(REPO_ROOT))} && "
        f"{{ {shlex.join(hwcheck)} > {VM_XCHG_DIR}/{sub}/hwcheck.json; }}; " + shlex.join(guest)
    )
    # The core's model is compiled before the VM boots: on a loaded machine the compile
    # alone can take minutes, time the guest would spend waiting.
    core_model = sim.build_core()
    with SoftRoceVm(image, commands) as vm:
        text = vm.wait_for(f"{sub}/{rdma_guest.PARAMS_FILE}", timeout=240).read_text()
        params = RdmaParams.from_mapping(json.loads(text))
        assert (params.ip, params.device, params.registration) == (VM_IP, "rxe0", "host")
        assert (params.psn, params.slot_size, params.mtu) == (PSN, PAYLOAD + 8, 4096)

        # The simulated core, pointed at the ring.
        plan = {
            "datagrams": N_CHUNKS * SLOTS, "payload": PAYLOAD, "stalled_chunks": STALLED,
            "core_mac": PEER_MAC, "core_ip": PEER_IP, "core_port": CORE_PORT,
            "udp_port": UDP_PORT,
        }  # fmt: skip
        job = sim.run_job(
            core_model,
            "cocotb_rdma_stream",
            {
                "CASPER400G_RDMA_PARAMS": json.dumps(params.as_dict()),
                "CASPER400G_RDMA_PLAN": json.dumps(plan),
                "CASPER400G_RDMA_OUT": str(tmp_path),
            },
        )
        frames = read_pcap(tmp_path / "rdma.pcap")
        want, sender = _expected(params)
        assert len(frames) == len(want) == job["rdma_frames"]
        assert job["counters"]["rdma_chunks_dropped"] == STALLED == sender.dropped
        parsed = [parse_frame(f) for f in frames]
        for p, w in zip(parsed, want, strict=True):
            assert (p.psn, p.va, p.payload, p.immediate) == (w.psn, w.va, w.payload, w.immediate)

        # Into the VM's NIC, with the faults.
        imm_idx = [i for i, p in enumerate(parsed)
                   if p.operation is Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE]  # fmt: skip
        plain = [i for i in range(len(frames)) if i not in imm_idx]
        drop, corrupt, drop_imm = plain[5], plain[11], imm_idx[-2]
        lost_seq = set()
        from_vm: list[bytes] = []

        def credit() -> int:
            """The receiver's latest credit (-1: none yet), from its datagrams to the core."""
            from_vm.extend(vm.received())
            got = [_credit_of(f) for f in from_vm]
            return max((c for c in got if c is not None), default=-1)

        for i, frame in enumerate(frames):
            seq = int.from_bytes(parsed[i].payload[:8], "big")
            # A closed loop, as on the wire: the core writes a chunk over a ring place only
            # once the receiver has released the chunk that held it.
            deadline = time.monotonic() + 60
            while seq // SLOTS - CHUNKS > credit() and seq // SLOTS >= CHUNKS + STALLED:
                assert time.monotonic() < deadline, f"no credit for chunk {seq // SLOTS}"
                time.sleep(0.05)
            if i in (drop, corrupt, drop_imm):
                lost_seq.add(seq)
            if i in (drop, drop_imm):
                continue
            if i == corrupt:
                b = bytearray(frame)
                b[len(b) - 100] ^= 0x04
                frame = bytes(b)
            vm.send(frame)
        delivered = [c for c in range(N_CHUNKS) if not CHUNKS <= c < CHUNKS + STALLED]
        vm.wait_until(
            f"{sub}/{rdma_guest.PROGRESS_FILE}",
            lambda t: bool(t) and json.loads(t)["chunks"] >= len(delivered),
            timeout=120,
        )
        time.sleep(0.5)
        (vm.xchg / sub / rdma_guest.STOP_FILE).touch()
        vm.wait_for(f"{sub}/{rdma_guest.STATS_FILE}", timeout=60)
        assert vm.finish() == 0, vm.console_tail()
        from_vm.extend(vm.received())
        counters = vm.counters()
        got = np.load(vm.xchg / sub / rdma_guest.CHUNKS_FILE)
        hw = json.loads(vm.read(f"{sub}/hwcheck.json"))
        stats = json.loads(vm.read(f"{sub}/{rdma_guest.STATS_FILE}"))

    # hwcheck --rdma set up the same queue pair and ring on rxe0.
    assert hw["status"] == 0 and not hw["problems"], hw
    assert hw["rdma"]["params"]["device"] == "rxe0" and hw["rdma"]["params"]["ip"] == VM_IP, hw
    assert hw["rdma"]["params"]["gid"] == f"::ffff:{VM_IP}", hw

    # Every chunk the core wrote, in order, every byte right, exactly the faulty slots missing.
    assert list(got["ids"]) == delivered
    for row, c in enumerate(delivered):
        seqs = range(c * SLOTS, (c + 1) * SLOTS)
        assert list(got["present"][row]) == [s not in lost_seq for s in seqs], c
        ref = rx.example_payloads(seqs, PAYLOAD)
        for s in range(SLOTS):
            if got["present"][row][s]:
                assert np.array_equal(got["data"][row][s], ref[s]), (c, s)
    # The receiver's accounting.
    assert stats["chunks"] == len(delivered) and stats["immediates"] == len(delivered) - 1
    assert stats["missing_immediates"] == 1  # the chunk whose immediate was lost
    assert stats["core_dropped_chunks"] == STALLED and stats["lost_chunks"] == 0
    assert stats["lost"] == len(lost_seq) + STALLED * SLOTS
    assert stats["packets"] == len(delivered) * SLOTS - len(lost_seq)
    assert stats["late_immediates"] == stats["errors"] == stats["overruns"] == 0
    # rxe: every frame but the corrupted one passed its checks (ICRC included).
    assert counters["rcvd_pkts"] == len(frames) - 2 - 1, counters
    for name in ("duplicate_request", "out_of_seq_request", "rcvd_seq_err"):
        assert counters[name] == 0, (name, counters)
    assert counters["rdma_recvs"] == len(delivered) - 1, counters
    # The credits the receiver sent back: the last one releases every chunk.
    credits = [c for c in (_credit_of(f) for f in from_vm) if c is not None]
    assert credits and credits == sorted(credits), credits
    assert credits[-1] == N_CHUNKS - 1 and stats["credit"] == N_CHUNKS - 1

    # The same stream through the UDP path, with the same datagrams lost.
    udp = read_pcap(tmp_path / "udp.pcap")
    kept = [f for f in udp if int.from_bytes(f[42:50], "big") not in lost_seq]
    write_pcap(tmp_path / "udp_lossy.pcap", kept)
    cap = rx.Capture(rx.PcapSource(tmp_path / "udp_lossy.pcap"),
                     fmt=rx.Format(payload_size=PAYLOAD, udp_port=UDP_PORT),
                     chunking=rx.Chunking(packets_per_chunk=SLOTS, max_chunks=CHUNKS))  # fmt: skip
    ref_chunks = {c.chunk_id: (np.array(c.data), np.array(c.present)) for c in cap.chunks(2.0)}
    for row, c in enumerate(delivered):
        data, present = ref_chunks[c]
        assert np.array_equal(got["present"][row], present), c
        assert np.array_equal(got["data"][row][present], data[present]), c
