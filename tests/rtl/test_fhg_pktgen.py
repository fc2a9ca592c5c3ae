"""The example design's generator (fhg_pktgen + fhg_pktgen_spead) under Verilator: one
build, one pytest result per cocotb test, and the SPEAD heaps it emitted decoded by spead2
and captured by the receiver."""

from __future__ import annotations

import importlib.util
import ipaddress
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import yaml
from conftest import need_tool

import casper400g_rx as rx
from casper400g_dev import checkout, sim
from mlib_devel_400g import synth as yosys
from mlib_devel_400g import timing

HERE = Path(__file__).parent
COCOTB_MODULE = HERE / "cocotb_fhg_pktgen.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)
EXAMPLE = checkout.ROOT / "examples" / "pktgen_400g"
TIMESTAMP, CHANNEL, DATA = 0x1600, 0x4103, 0x3300


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, sim.TestOutcome], Path]:
    # The design's own source list, so the module is built as the toolflow builds it.
    user = yaml.safe_load((EXAMPLE / "design.yaml").read_text())["user_module"]
    dut = sim.build("fhg_pktgen", [EXAMPLE / src for src in user["sources"]], user["module"])
    out = tmp_path_factory.mktemp("pktgen") / "spead.json"
    outcomes = sim.run(dut, COCOTB_MODULE.stem, HERE, extra_env={"CASPER400G_JOB_OUT": str(out)})
    return outcomes, out


def test_every_cocotb_test_was_collected() -> None:
    assert set(NAMES) == {
        "example_stream_unchanged",
        "spead_heaps",
        "mode_follows_the_register_per_packet",
        "destination_table_spreads_each_spectrum",
        "destination_table_switches_mid_stream",
        "destination_table_waits_for_a_spectrum_and_refuses_bad_commands",
    }


@pytest.mark.parametrize("name", NAMES)
def test_pktgen(run: tuple[dict[str, sim.TestOutcome], Path], name: str) -> None:
    sim.assert_passed(run[0], name)


def test_configure_core_reads_destinations_in_order() -> None:
    """configure_core.py: --dest entries (IP:PORT[:CHANNEL], the channel defaulting to the
    index) form one table, loaded where the first stands among the --write options; bad
    values are refused naming them."""
    spec = importlib.util.spec_from_file_location(
        "configure_core", checkout.ROOT / "examples" / "configure_core.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    steps = [
        ("write", ("pkt_ctrl", 2)),
        ("dest", "239.2.0.10:7148"),
        ("write", ("pkt_ctrl", 1)),
        ("dest", "10.0.0.21:0x1bee:2048"),
    ]
    group, host = int(ipaddress.IPv4Address("239.2.0.10")), int(ipaddress.IPv4Address("10.0.0.21"))
    assert script.plan(steps) == [
        ("pkt_ctrl", 2),
        [(group, 7148, 0), (host, 0x1BEE, 2048)],
        ("pkt_ctrl", 1),
    ]
    assert script.plan([("dest_off", [])]) == [[]]
    for bad, word in (
        ("239.2.0.10", "IP:PORT"),
        ("239.2.0.10:0", "port 0"),
        ("239.2.0.10:7148:65536", "channel 65536"),
        ("239.2.0.10:x", "numbers"),
        ("239.2.0.300:7148", "239.2.0.300"),
    ):
        with pytest.raises(ValueError, match=word):
            script.dest_entry(bad)


def test_destination_table_within_six_logic_levels(tmp_path: Path) -> None:
    """fhg_dest_table on its own (a design with two ports has one per port) keeps the
    core's timing rule: no path between registers deeper than six logic levels (Yosys
    synth_xilinx, mlib_devel_400g.timing), its two copies in distributed RAM."""
    try:
        cmd = yosys.find_yosys()
        yosys.yosys_version(cmd)
    except yosys.SynthError as exc:
        need_tool(f"Yosys unavailable: {exc}")
    net = tmp_path / "netlist.json"
    result = yosys.run(
        top="fhg_dest_table",
        files=[EXAMPLE / "fhg_dest_table.sv"],
        params={},
        yosys=cmd,
        progress=None,
        netlist_out=net,
    )
    report = timing.analyse_file(net, limit=timing.LIMIT)
    worst = [(p["endpoint"], p["start"], p["levels"]) for p in report["over_limit"]]
    assert not worst, worst
    # The analysis saw the design: its counters, the command state and the read path.
    assert report["endpoints"] >= 20 and report["max_levels"] >= 3
    total = result["total"]
    assert total["lutram"] > 0 and (total["bram18"], total["bram36"]) == (0, 0)


def example_payload(n: int, size: int) -> bytes:
    words = np.arange((size + 7) // 8, dtype=np.uint64) | np.uint64(n << 10)
    words[0] = n
    return words.astype(">u8").tobytes()[:size]


def test_spead_heaps_decode_in_spead2(run: tuple[dict[str, sim.TestOutcome], Path]) -> None:
    sim.assert_passed(run[0], "spead_heaps")
    try:
        import spead2
        import spead2.recv
    except ImportError:
        need_tool("spead2 is not installed (`make test` installs it: pip install spead2)")
    job = json.loads(run[1].read_text())
    packets = [bytes.fromhex(p["payload"]) for p in job["packets"]]
    heaps = decode(spead2, packets)
    assert [h["cnt"] for h in heaps] == [p["n"] for p in job["packets"]]
    for h, p in zip(heaps, job["packets"], strict=True):
        assert h["timestamp"] == p["n"] * job["step"] and h["channel"] == job["channel"]
        assert h["data"] == example_payload(p["n"], p["size"]), p["n"]


def decode(spead2: ModuleType, packets: list[bytes]) -> list[dict]:
    """spead2's own receive stream and item group over the packets."""
    stream = spead2.recv.Stream(spead2.ThreadPool(1), spead2.recv.StreamConfig(max_heaps=4))
    stream.add_buffer_reader(b"".join(packets))
    ig = spead2.ItemGroup()
    flavour = [("u", 48)]
    ig.add_item(TIMESTAMP, "timestamp", "", shape=(), format=flavour)
    ig.add_item(CHANNEL, "channel", "", shape=(), format=flavour)
    ig.add_item(DATA, "data", "", shape=(None,), format=[("u", 8)])
    out = []
    for heap in stream:
        assert not isinstance(heap, spead2.recv.IncompleteHeap)
        assert heap.flavour.heap_address_bits == 48
        ig.update(heap)
        out.append(
            {
                "cnt": heap.cnt,
                "timestamp": int(ig["timestamp"].value),
                "channel": int(ig["channel"].value),
                "data": np.asarray(ig["data"].value, dtype=np.uint8).tobytes(),
            }
        )
    return out


def test_spead_heaps_captured_by_the_receiver(run: tuple[dict[str, sim.TestOutcome], Path]) -> None:
    """The generator's 8192-B heaps into the receiver, slots by timestamp / step."""
    sim.assert_passed(run[0], "spead_heaps")
    job = json.loads(run[1].read_text())
    sent = [p for p in job["packets"] if p["size"] == 8192]
    rows = np.stack([np.frombuffer(bytes.fromhex(p["payload"]), np.uint8) for p in sent])
    fmt = rx.Format.spead(8192, index_item=TIMESTAMP, index_step=job["step"], items=[CHANNEL])
    cap = rx.Capture(rx.MemSource(packets=rows), fmt=fmt, chunking=rx.Chunking(packets_per_chunk=4))
    with cap:
        chunks = {}
        for c in cap.chunks(timeout=5):
            chunks[c.chunk_id] = (c.present.copy(), c.data.copy(), c.items[CHANNEL].copy())
            c.release()
    assert cap.stats.packets == len(sent) and cap.stats.rejected == 0
    for p in sent:
        present, data, channel = chunks[p["n"] // 4]
        slot = p["n"] % 4
        assert present[slot] and channel[slot] == job["channel"]
        assert bytes(data[slot]) == example_payload(p["n"], 8192)
