"""The example design's generated top.v simulated whole (generic400g platform): host bus,
interconnect, start-up configuration, software registers, packet generator (example stream,
tone against verification/tone_model.py, SPEAD), core and the DCMAC model. One simulation,
one pytest result per cocotb test; the SPEAD frames it sent are then decoded by spead2 and
captured by the receiver."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import need_tool

import casper400g_rx as rx
from casper400g_dev import checkout, sim, toolflow_sim

COCOTB_MODULE = checkout.VERIFICATION_DIR / f"{toolflow_sim.COCOTB_MODULE}.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)
TIMESTAMP, CHANNEL, DATA = 0x1600, 0x4103, 0x3300


@pytest.fixture(scope="module")
def spead_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spead") / "frames.json"


@pytest.fixture(scope="module")
def outcomes(
    tmp_path_factory: pytest.TempPathFactory, spead_out: Path
) -> dict[str, sim.TestOutcome]:
    build = toolflow_sim.build_example(tmp_path_factory.mktemp("top"))
    dut = toolflow_sim.compile_top(build)
    return sim.run(
        dut,
        toolflow_sim.COCOTB_MODULE,
        COCOTB_MODULE.parent,
        extra_env={
            **toolflow_sim.env(toolflow_sim.config(build)),
            "CASPER400G_SPEAD_OUT": str(spead_out),
        },
    )


def test_every_cocotb_test_was_collected() -> None:
    assert set(NAMES) == {
        "bus_errors_and_read_only_registers",
        "sends_the_example_stream",
        "sends_the_tone",
        "sends_spead_heaps",
        "spreads_over_the_destination_table",
    }


@pytest.mark.parametrize("name", NAMES)
def test_generated_top(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)


def example_payload(n: int, size: int) -> bytes:
    words = np.arange((size + 7) // 8, dtype=np.uint64) | np.uint64(n << 10)
    words[0] = n
    return words.astype(">u8").tobytes()[:size]


def test_spead_frames_decode_in_spead2_and_the_receiver(
    outcomes: dict[str, sim.TestOutcome], spead_out: Path
) -> None:
    """The core's SPEAD frames: spead2 decodes each heap (counter, timestamp, channel,
    payload), and the receiver, given the frames as a capture, places the 8192-B heaps."""
    sim.assert_passed(outcomes, "sends_spead_heaps")
    try:
        import spead2
        import spead2.recv
    except ImportError:
        need_tool("spead2 is not installed (`make test` installs it: pip install spead2)")
    job = json.loads(spead_out.read_text())
    frames = [bytes.fromhex(f) for f in job["frames"]]
    payloads = [frame[42:] for frame in frames]  # Ethernet + IPv4 (no options) + UDP
    stream = spead2.recv.Stream(spead2.ThreadPool(1), spead2.recv.StreamConfig())
    stream.add_buffer_reader(b"".join(payloads))
    ig = spead2.ItemGroup()
    ig.add_item(TIMESTAMP, "timestamp", "", shape=(), format=[("u", 48)])
    ig.add_item(CHANNEL, "channel", "", shape=(), format=[("u", 48)])
    ig.add_item(DATA, "data", "", shape=(None,), format=[("u", 8)])
    cnts = []
    for heap in stream:
        assert not isinstance(heap, spead2.recv.IncompleteHeap)
        ig.update(heap)
        n = heap.cnt
        cnts.append(n)
        data = np.asarray(ig["data"].value, dtype=np.uint8).tobytes()
        assert int(ig["timestamp"].value) == n * job["step"]
        assert int(ig["channel"].value) == job["channel"]
        assert data == example_payload(n, len(data)) and len(data) in (8192, 1000)
    assert cnts == list(range(len(frames)))

    big = [f for f, p in zip(frames, payloads, strict=True) if len(p) == 64 + 8192]
    rows = np.stack([np.frombuffer(f, np.uint8) for f in big])
    fmt = rx.Format.spead(8192, items=[TIMESTAMP, CHANNEL], udp_port=7148)
    cap = rx.Capture(
        rx.MemSource(packets=rows, frames=True),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=len(big)),
    )
    with cap:
        chunks = list(cap.chunks(timeout=5))
        assert len(chunks) == 1
        c = chunks[0]
        assert c.present.all() and c.items[TIMESTAMP].tolist() == [
            n * job["step"] for n in range(len(big))
        ]
        assert all(bytes(c.data[n]) == example_payload(n, 8192) for n in range(len(big)))
        c.release()
    assert cap.stats.rejected == 0 and cap.stats.packets == len(big)
