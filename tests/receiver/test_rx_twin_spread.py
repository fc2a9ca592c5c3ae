"""The twin's stream spread by the example design's destination table over two hosts'
multicast groups, captured by the capture cluster (casper400g_dev/twin_spread.py).

As an array on one machine (root, like the twin's tests: skipped without, failed under
CI=true): hosts are network namespaces on a switch with IGMP snooping (lan.py), the Dask
scheduler in one, a `dask worker` process in each of two capture hosts; the example
design's twin has its TAP device on the switch (``Network(switch=...)``), and its
destination table deals each spectrum of four SPEAD heaps of the tone over four groups,
two per host. Every heap is checked on its worker against the tone's golden model at the
packet number the table's model gives; each host's wire carries its groups' datagrams
and nothing else; the array's account reconciles the core's tx_udp_packets, read over
KATCP, with every capture exactly, also with the twin's link dropping, duplicating and
delaying datagrams; the table's per-entry counts match its model; the tone shows in the
host that takes its channel.

The options' checks and the per-chunk check on heaps built from the models run anywhere.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import need_tool

pytest.importorskip("distributed")

from casper400g_dev import lan, toolflow_sim, twin_spread
from casper400g_dev.twin.board import Network, TwinBoard, TwinError
from casper400g_dev.twin.netns import Switch
from casper400g_dev.twin_spread import SpreadCheck, SpreadConfig, Taken
from casper400g_rx import Capture, Chunking, MemSource
from casper400g_rx.cluster import Result
from casperfpga_ext.addressing import parse_ip
from verification import tone_model
from verification.models.dest_table import Routes
from verification.models.spead import heap_packet

HOSTS = (("a", ("239.5.0.1", "239.5.0.2")), ("b", ("239.5.0.3", "239.5.0.4")))


# ---------------------------------------------------------------- anywhere


def test_the_switch_option_is_checked():
    assert Switch.parse("c4glansw-1-0:br0") == Switch("c4glansw-1-0", "br0")
    for bad in ("br0", ":br0", "ns:"):
        with pytest.raises(ValueError, match="expected NETNS:BRIDGE"):
            Switch.parse(bad)
    with pytest.raises(ValueError, match="a switch takes the twin's TAP devices: mode 'tap'"):
        Network("pcap", switch=Switch("ns", "br0"))


def test_spread_config_refuses_what_the_table_cannot_send():
    cfg = SpreadConfig(HOSTS, core_ip="10.88.0.5")
    assert (cfg.channels, cfg.width, cfg.count, cfg.ts_step) == (2048, 512, 1024, 8192)
    assert [c for _ip, _port, c in cfg.table()] == [0, 512, 1024, 1536]
    # The tone at +5/32 of the sample rate: channel 1024 + 320, the third group's (host b).
    assert (cfg.tone_channel(), cfg.host_of_channel(cfg.tone_channel())) == (1344, "b")
    with pytest.raises(ValueError, match=r"'10\.0\.0\.1' is not an IPv4 multicast"):
        SpreadConfig((("a", ("10.0.0.1",)),), core_ip="10.88.0.5")
    with pytest.raises(ValueError, match="do not split into 3 equal channel groups"):
        SpreadConfig((("a", ("239.5.0.1", "239.5.0.2", "239.5.0.3")),), core_ip="10.88.0.5")
    with pytest.raises(ValueError, match="a multiple of packets_per_chunk"):
        SpreadConfig(HOSTS, core_ip="10.88.0.5", spectra=100)
    with pytest.raises(ValueError, match="hosts named twice"):
        SpreadConfig((("a", ("239.5.0.1",)), ("a", ("239.5.0.2",))), core_ip="10.88.0.5")
    argv = cfg.configure_argv("127.0.0.1", 7147)
    assert argv[argv.index("--dest") + 1] == "239.5.0.1:7148:0"
    assert "spead_ts_step=0x2000" in argv and "pkt_count=0x400" in argv


def heaps(cfg: SpreadConfig, routes: Routes, packets: list[int]) -> np.ndarray:
    """The heaps the design sends for these packet numbers, from the models."""
    golden = tone_model.expected_payloads(cfg.tone, packets, cfg.size)
    rows = []
    for n, payload in zip(packets, golden, strict=True):
        r = routes.routes(n + 1)[n]
        rows.append(heap_packet(n, payload.tobytes(), r.spectrum * cfg.ts_step, r.channel))
    return np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), -1)


def check_heaps(cfg: SpreadConfig, rows: np.ndarray) -> Taken:
    """SpreadCheck over a capture of ``rows`` (heaps of one group), as a worker runs it."""
    routes = Routes((0, 0, 0))
    routes.switched(0, cfg.table())
    check = SpreadCheck.of(cfg, routes)
    cap = Capture(
        MemSource(packets=rows),
        fmt=twin_spread.spead_format(cfg.size, cfg.ts_step),
        chunking=Chunking(packets_per_chunk=cfg.packets_per_chunk, first_chunk=0),
    )
    results = []
    with cap:
        for chunk in cap.chunks(timeout=5):
            with chunk:
                results.append(Result("x", chunk.chunk_id, check(chunk), 1, chunk.n_present))
    return Taken.of(results, cfg)


def test_the_per_chunk_check_places_checks_and_channelises_heaps():
    """Group 2's heaps (channel 1024) built from the models: every one placed by its
    timestamp and matching; its channels' power holds the tone; a heap with a changed
    sample, one with another channel's item and one past the plan are each counted."""
    cfg = SpreadConfig(HOSTS, core_ip="10.88.0.5", spectra=32, packets_per_chunk=8)
    routes = Routes((0, 0, 0))
    routes.switched(0, cfg.table())
    mine = [n for n, r in enumerate(routes.routes(cfg.count)) if r.entry == 2]
    assert mine == list(range(2, cfg.count, 4))
    rows = heaps(cfg, routes, mine)
    taken = check_heaps(cfg, rows)
    assert taken.counts == {"bad_payload": 0, "bad_channel": 0, "unplanned": 0}
    assert taken.per_group.tolist() == [0, 0, cfg.spectra, 0]
    power = taken.power
    assert int(np.argmax(power)) == cfg.tone_channel() == 1344
    assert not power[:1024].any() and not power[1536:].any()  # only its channel group's
    # A changed sample, a heap of channel 512 in its slot, a heap of the spectrum after
    # the last (the plan sends none): one count each.
    bad = rows.copy()
    bad[3, -1] ^= 1
    other = heaps(cfg, routes, [4 * 5 + 1])  # channel 512's heap of spectrum 5
    extra = heap_packet(
        cfg.count + 2, bytes(cfg.size), cfg.spectra * cfg.ts_step, 1024
    )  # fmt: skip
    rows = np.concatenate([bad[:5], other, bad[6:], np.frombuffer(extra, np.uint8)[None, :]])
    taken = check_heaps(cfg, rows)
    assert taken.counts == {"bad_payload": 1, "bad_channel": 0, "unplanned": 1}
    assert taken.per_group.tolist() == [0, 1, cfg.spectra, 0]
    # A heap whose channel item names no group of the table.
    payload = tone_model.expected_payloads(cfg.tone, [mine[0]], cfg.size)[0].tobytes()
    alien = heap_packet(mine[0], payload, 0, 700)
    taken = check_heaps(cfg, np.frombuffer(alien, np.uint8)[None, :])
    assert taken.counts == {"bad_payload": 0, "bad_channel": 1, "unplanned": 0}
    assert not taken.per_group.any() and not taken.power.any()


# ---------------------------------------------------------------- as an array


@dataclass
class Array:
    net: lan.Lan
    board: TwinBoard
    client: Any
    core_ip: str


@pytest.fixture(scope="module")
def array(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Array]:
    """A switch with three hosts (the scheduler's, a and b, each of the two with a `dask
    worker`) and the example design's twin on a port of its own."""
    why = lan.missing()
    if why is not None:
        need_tool(f"hosts on a switch: {why}")
    # The same design as the twin's tests: the same cached twin.
    build = toolflow_sim.build_example(tmp_path_factory.mktemp("twin") / "pktgen_400g")
    with lan.Lan() as net:
        ctl = net.add_host("ctl")
        hosts = [net.add_host(name) for name, _groups in HOSTS]
        core_ip = net.reserve_address()
        network = Network("tap", switch=Switch(net.switch.name, lan.BRIDGE))
        with TwinBoard(build.build_dir, network=network, katcp_port=0, icmp=False) as board:
            net.attach(board.interface())  # the switch's port settings
            log_dir = Path(tmp_path_factory.mktemp("dask"))
            with lan.DaskOnLan(ctl, hosts, log_dir) as dask, dask.client() as client:
                yield Array(net, board, client, core_ip)


def configure(array: Array, cfg: SpreadConfig) -> None:
    proc = twin_spread.configure(array.board, cfg)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"destination table ({len(cfg.groups)} entries) in force from packet 0" in proc.stdout


def check_observation(
    array: Array, cfg: SpreadConfig, obs: twin_spread.Observation, faults: dict[str, set[int]]
) -> None:
    """Everything the observation must show, with these datagrams dropped, duplicated and
    delayed by the link (packet numbers)."""
    dropped, duplicated = faults.get("drop_at", set()), faults.get("duplicate_at", set())
    report = obs.report
    assert report.errors == {}
    # The core sent every packet and refused none; the table's per-entry counts, read over
    # KATCP, are its model's.
    assert obs.core == {
        "tx_udp_packets": cfg.count, "tx_arp_miss": 0, "tx_overflow": 0, "pkt_sent": cfg.count
    }  # fmt: skip
    groups = len(cfg.groups)
    assert obs.per_entry == obs.routes.per_entry(cfg.count, groups) == [cfg.spectra] * groups
    link = obs.link
    assert (link["datagrams"], link["dropped"], link["duplicated"]) == (
        cfg.count, len(dropped), len(duplicated)
    )  # fmt: skip
    assert link["delayed"] == len(faults.get("delay_at", set()))
    # The array's account: the core's count against every capture, exact.
    assert report.account is not None and report.account.balanced, report.account.rows()
    routes = obs.routes.routes(cfg.count)
    for k, (host, group) in enumerate(cfg.groups):
        name = cfg.stream_name(host, group)
        mine = {n for n, r in enumerate(routes) if (r.ip, r.port, r.entry) == (
            parse_ip(group), cfg.port, k
        )}  # fmt: skip
        lost, dup = len(mine & dropped), len(mine & duplicated)
        s = report.streams[name].stats
        assert report.streams[name].host == host
        assert (s["packets"], s["lost"], s["duplicate"]) == (len(mine) - lost, lost, dup), name
        assert s["packets"] + s["lost"] == obs.per_entry[k]
        assert s["late"] == s["rejected"] == s["kernel_drops"] == 0, s
        # Every heap checked on its worker: this group's channel only, each as the models say.
        taken = obs.taken[name]
        assert taken.counts == {"bad_payload": 0, "bad_channel": 0, "unplanned": 0}, name
        assert taken.per_group.tolist() == [s["packets"] if j == k else 0 for j in range(groups)]
    # Each host's wire: its groups' datagrams, every one the link passed, nothing else.
    for host, host_groups in cfg.hosts:
        assert obs.wire_dropped[host] == 0
        want = {}
        for g in host_groups:
            mine = {n for n, r in enumerate(routes) if r.ip == parse_ip(g)}
            want[(g, cfg.port)] = len(mine) - len(mine & dropped) + len(mine & duplicated)
        assert dict(obs.wire[host]) == want, host
    # The captures left their groups.
    array.net.wait_memberships({host: set() for host, _g in cfg.hosts})
    # The tone in the host that takes its channel, and nowhere else.
    tone = cfg.tone_channel()
    owner = cfg.host_of_channel(tone)
    power = {host: obs.host_power(cfg, host) for host, _g in cfg.hosts}
    assert int(np.argmax(power[owner])) == tone
    for host, p in power.items():
        if host != owner:
            assert p.max() < 1e-3 * power[owner][tone], (host, p.max(), power[owner][tone])


def show(cfg: SpreadConfig, obs: twin_spread.Observation) -> None:
    rows = obs.report.account.rows() if obs.report.account else []
    print(f"\n{cfg.count} heaps in {obs.seconds:.1f} s; core {obs.core}; link {obs.link}")
    print(f"per entry {obs.per_entry}; wire {dict(obs.wire)}")
    for r in rows:
        print({k: r[k] for k in ("stream", "host", "placed", "lost", "duplicate", "verdict")})


def test_the_twins_tone_reaches_each_host_in_its_groups_only(array: Array):
    cfg = SpreadConfig(HOSTS, core_ip=array.core_ip)
    configure(array, cfg)
    obs = twin_spread.run(array.board, array.net, array.client, cfg)
    show(cfg, obs)
    check_observation(array, cfg, obs, {})
    assert cfg.host_of_channel(cfg.tone_channel()) == "b"


def test_the_array_account_is_exact_with_the_links_faults(array: Array):
    """Datagrams dropped, duplicated and delayed past later ones by the twin's link model
    (at chosen packets, none of a group's first or last heap); the tone this time in host
    a's channels."""
    tone = tone_model.ToneConfig.for_frequency(-0.3, noise_bits=4)
    cfg = SpreadConfig(HOSTS, core_ip=array.core_ip, tone=tone)
    assert cfg.host_of_channel(cfg.tone_channel()) == "a"
    groups = len(cfg.groups)
    rng = np.random.default_rng(31)
    picked = rng.choice(np.arange(groups, cfg.count - 2 * groups), size=36, replace=False)
    faults = {
        "drop_at": {int(n) for n in picked[:16]},
        "duplicate_at": {int(n) for n in picked[16:26]},
        "delay_at": {int(n) for n in picked[26:]},
    }
    configure(array, cfg)
    obs = twin_spread.run(array.board, array.net, array.client, cfg, faults={**faults, "depth": 6})
    show(cfg, obs)
    check_observation(array, cfg, obs, faults)
    every = {n for f in faults.values() for n in f}
    assert {n % groups for n in every} == set(range(groups))  # every group had some


def test_a_missing_switch_is_named(tmp_path: Path):
    why = lan.missing()
    if why is not None:
        need_tool(f"hosts on a switch: {why}")
    board = TwinBoard(
        None, network=Network("tap", switch=Switch("c4g-no-such-ns", "br0")), katcp_port=0
    )
    with pytest.raises(TwinError, match="no network namespace 'c4g-no-such-ns'"):
        board.start()
    with lan.Lan() as net:
        board = TwinBoard(
            None, network=Network("tap", switch=Switch(net.switch.name, "br9")), katcp_port=0
        )
        why = f"no bridge 'br9' in network namespace {net.switch.name!r}"
        with pytest.raises(TwinError, match=re.escape(why)):
            board.start()


def test_the_twin_cli_takes_a_switch():
    proc = subprocess.run(
        [sys.executable, "-m", "mlib_devel_400g.cli", "twin", "build", "--switch", "nobridge"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2 and "switch 'nobridge': expected NETNS:BRIDGE" in proc.stderr
