"""The two-port example design's generated top.v simulated whole (generic400g platform): two
400GbE cores and two packet generators on one host bus, a DCMAC model per port, each port
on a MAC clock of its own. One Verilator build, one pytest result per cocotb test; the
frames each port sent are then captured together by the receiver, each stream told apart
by its stream id."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_dev import checkout, sim, toolflow_sim
from verification.models import frames

COCOTB_MODULE = checkout.VERIFICATION_DIR / f"{toolflow_sim.COCOTB_MODULE_2PORT}.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)
# A few hundred frames in all: both ports at line rate at once, short enough for CI.
FRAMES, SIZE = 128, 8192


@pytest.fixture(scope="module")
def job_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("job") / "two_port.json"


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> toolflow_sim.BuildResult:
    return toolflow_sim.build_example(
        tmp_path_factory.mktemp("top2"), design=toolflow_sim.TWO_PORT_DESIGN
    )


@pytest.fixture(scope="module")
def outcomes(build: toolflow_sim.BuildResult, job_out: Path) -> dict[str, sim.TestOutcome]:
    dut = toolflow_sim.compile_top(build)
    cfg = toolflow_sim.config_2port(build, frames=FRAMES, size=SIZE)
    return sim.run(
        dut,
        toolflow_sim.COCOTB_MODULE_2PORT,
        COCOTB_MODULE.parent,
        extra_env={**toolflow_sim.env_2port(cfg), "CASPER400G_JOB_OUT": str(job_out)},
    )


def test_every_cocotb_test_was_collected() -> None:
    assert set(NAMES) == {
        "both_ports_at_line_rate_at_once",
        "each_port_answers_arp_with_its_own_address",
    }


@pytest.mark.parametrize("name", NAMES)
def test_generated_top(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)


def test_the_ports_differ_in_all_they_should(build: toolflow_sim.BuildResult) -> None:
    """The configuration the simulation runs: two cages, two subnets, two stream ids, two
    register sets, two cores in their own windows."""
    cfg = toolflow_sim.config_2port(build)
    ports = cfg["ports"]
    assert [(p["block"], p["cage"], p["regs"]) for p in ports] == [
        ("gbe0", 0, "p0_"),
        ("gbe1", 1, "p1_"),
    ]
    assert [p["stream_id"] for p in ports] == [1, 2]
    assert [cfg["gbes"][p["block"]]["fab_ip"] for p in ports] == ["10.0.0.10", "10.0.1.10"]
    assert [p["dest_ip"] for p in ports] == ["10.0.0.20", "10.0.1.20"]
    dev = cfg["devices"]
    assert dev["gbe1"] - dev["gbe0"] == 0x10000
    assert {"p0_pkt_ctrl", "p1_pkt_ctrl", "p0_dest_tbl_ctrl", "p1_dest_tbl_ctrl"} <= set(dev)


def test_the_receiver_tells_the_streams_apart(
    outcomes: dict[str, sim.TestOutcome], job_out: Path, build: toolflow_sim.BuildResult
) -> None:
    """The frames both cores sent in the simulation, interleaved as one host NIC would see
    them, into a receiver capture per stream id (the payload's first byte): each takes its
    own port's every packet and rejects the other's, sequence numbers from bytes 1..7."""
    sim.assert_passed(outcomes, "both_ports_at_line_rate_at_once")
    job = json.loads(job_out.read_text())
    assert job["frames"] == FRAMES and len(job["ports"]) == 2
    cfg = toolflow_sim.config_2port(build)
    sent = [[bytes.fromhex(f) for f in port["frames"]] for port in job["ports"]]
    assert [len(s) for s in sent] == [FRAMES, FRAMES]
    # Interleaved frame by frame, as both streams reach one NIC through a switch.
    rows = [np.frombuffer(f, np.uint8) for pair in zip(*sent, strict=True) for f in pair]
    packets = np.stack(rows)
    for p in cfg["ports"]:
        fmt = rx.Format(
            payload_size=SIZE,
            seq_offset=1,
            seq_width=7,
            stream_id=p["stream_id"],
            stream_id_offset=0,
            stream_id_width=1,
        )
        cap = rx.Capture(
            rx.MemSource(packets=packets, frames=True),
            fmt=fmt,
            chunking=rx.Chunking(packets_per_chunk=FRAMES),
        )
        with cap:
            [chunk] = list(cap.chunks(timeout=5))
            assert chunk.present.all()
            for n in (0, 1, FRAMES - 1):
                assert bytes(chunk.data[n]) == frames.example_payload(n, SIZE, p["stream_id"])
            chunk.release()
        assert cap.stats.packets == FRAMES, p
        assert cap.stats.rejected == FRAMES, p  # the other port's stream
