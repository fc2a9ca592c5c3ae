"""The capture cluster on Dask and the array's loss account.

On a laptop's LocalCluster (anywhere): streams replayed from memory, each placed by its
worker resource, every chunk checked on its worker against the example stream's formula,
results and the account exact.

As an array on one machine (root, like the twin's tests: skipped without, failed under
CI=true): hosts are network namespaces on a switch with IGMP snooping
(casper400g_dev/lan.py), the Dask scheduler in one, a `dask worker` process in each host
namespace, a sender publishing multicast groups in another; each host's capture joins
its groups, every chunk is checked on its worker, and the account reconciles the sender's
counts with every capture exactly, also with faults on the way (drops, copies,
reordering, packets past the window).
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import need_tool

pytest.importorskip("distributed")
from distributed import Client, LocalCluster

from casper400g_dev import lan
from casper400g_rx import Capture, Chunking, MemSource, UdpSource, _core
from casper400g_rx.account import (
    CAUSES,
    CaptureFigures,
    Transmitted,
    from_core,
    reconcile,
)
from casper400g_rx.cluster import (
    CaptureCluster,
    Reduction,
    Stream,
    example_check,
)
from casper400g_rx.cluster_cli import parse_fpga, parse_stream
from casper400g_rx.faults import faulty_schedule
from casperfpga_ext import fhg_regmap

PORT = 7148
PPC = 64


def stats(**kw: int) -> dict[str, int]:
    base = {"received": 0, "packets": 0, "lost": 0, "duplicate": 0, "late": 0, "rejected": 0}
    return {**base, **kw}


# ---------------------------------------------------------------- the account alone


def test_account_balances_and_names_each_difference():
    a = CaptureFigures.from_stats(
        "a", "h1", stats(received=95, packets=90, lost=10, late=3, kernel_drops=2, duplicate=2)
    )
    b = CaptureFigures.from_stats("b", "h2", stats(received=100, packets=100))
    acc = reconcile([Transmitted("fpga0:gbe0", ("a", "b"), 200)], [a, b])
    assert acc.balanced and acc.lines[0].difference == 0
    # 10 lost: 3 came late, 2 the host's socket dropped, so at least 5 never arrived.
    assert a.unreached == 5
    rows = acc.rows()
    assert [r["stream"] for r in rows] == ["a", "b"] and rows[0]["verdict"] == "balanced"
    short = reconcile([Transmitted("fpga0:gbe0", ("a", "b"), 207)], [a, b])
    assert not short.balanced
    assert short.lines[0].explanation().startswith("7 sent but in no capture's window")
    extra = reconcile([Transmitted("fpga0:gbe0", ("a", "b"), 190)], [a, b])
    assert extra.lines[0].explanation().startswith("10 more slots than sent")
    alone = reconcile([Transmitted("fpga0:gbe0", ("a",), 100)], [a, b])
    assert not alone.balanced and [c.stream for c in alone.unclaimed] == ["b"]
    with pytest.raises(ValueError, match=r"names streams no capture reports: \['c'\]"):
        reconcile([Transmitted("x", ("c",), 1)], [a])
    with pytest.raises(ValueError, match="named by two transmitters"):
        reconcile([Transmitted("x", ("a",), 1), Transmitted("y", ("a",), 1)], [a])
    with pytest.raises(ValueError, match="names no stream"):
        Transmitted("x", (), 1)


def test_account_balances_across_a_window_resync_and_names_out_of_window():
    # A sender that restarts far ahead: the engine counts the run's first packets
    # out_of_window, then moves its window to them; their slots are lost, the chunks it
    # jumped are not. The account still balances, the lost slots explained by the reason.
    n = PPC * 3
    restart = 1 << 40
    schedule = np.concatenate(
        [np.arange(n, dtype=np.uint64), np.arange(restart, restart + n, dtype=np.uint64)]
    )
    cap = Capture(
        MemSource(schedule=schedule),
        chunking=Chunking(packets_per_chunk=PPC, max_chunks=2, first_chunk=0, resync_after=8),
    )
    with cap:
        for chunk in cap.chunks(timeout=5):
            chunk.release()
    s = cap.stats
    assert (s["window_resyncs"], s["out_of_window"]) == (1, 7), dict(s)
    figures = CaptureFigures.from_stats("a", "h1", s)
    assert figures.causes["out_of_window"] == 7 and figures.lost == 7
    assert figures.unreached == 0
    acc = reconcile([Transmitted("fpga0:gbe0", ("a",), len(schedule))], [figures])
    assert acc.balanced, acc.rows()
    assert acc.rows()[0]["out_of_window"] == 7


def test_account_causes_are_the_packets_counted_beside_the_placed_ones():
    # Every reason the engine counts a packet received but not placed, and the sources'
    # drops, is a cause; counts of events (resyncs, chunks given up) are not.
    not_placed = {"late", "no_free_chunk", "out_of_window", "rejected"}
    assert not_placed <= set(CAUSES)
    assert {"kernel_drops", "nic_drops", "source_filtered"} <= set(CAUSES)
    assert not {"window_resyncs", "chunks_given_up", "resyncs"} & set(CAUSES)
    figures = CaptureFigures.from_stats(
        "a", "h1", stats(received=8, packets=4, lost=7, no_free_chunk=2, source_filtered=1)
    )
    assert figures.unreached == 7 - 3


def test_account_reads_the_cores_counters_by_their_register_names():
    values = {"tx_udp_packets": 1000, "tx_arp_miss": 3, "tx_overflow": 0}

    class Gbe:
        def read_reg(self, name: str) -> int:
            assert name in fhg_regmap.REGISTERS  # the names the core's register map has
            return values[name]

    tx = from_core(Gbe(), "fpga0:gbe0", ["a"])
    assert (tx.packets, dict(tx.not_sent)) == (1000, {"arp_miss": 3, "tx_overflow": 0})


def test_streams_and_reductions_check_their_options():
    with pytest.raises(ValueError, match="needs a name"):
        Stream("", MemSource(count=1))
    with pytest.raises(TypeError, match=re.escape("sources.py object")):
        Stream("a", "udp")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="chunks_per_result must be >= 1, got 0"):
        Reduction(example_check, chunks_per_result=0)
    with pytest.raises(ValueError, match=re.escape("repeated: ['a']")):
        CaptureCluster(None, [Stream("a", MemSource(count=1))] * 2)


# ---------------------------------------------------------------- on a laptop


def total(results: list, column: int) -> int:
    return int(sum(int(r.value[column]) for r in results))


def test_local_cluster_runs_each_stream_on_its_worker_and_accounts_it():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        workers = sorted(client.scheduler_info()["workers"])
        streams = [
            Stream(
                name,
                MemSource(first=first, count=20 * PPC),
                chunking=Chunking(packets_per_chunk=PPC, first_chunk=first // PPC),
                workers=[worker],
            )
            for name, first, worker in (("a", 0, workers[0]), ("b", 1 << 16, workers[1]))
        ]
        cc = CaptureCluster(
            client,
            streams,
            Reduction(example_check, chunks_per_result=4),
            transmitted=[Transmitted(f"gen:{s.name}", (s.name,), 20 * PPC) for s in streams],
        )
        placed = cc.start()
        assert [placed[n]["worker"] for n in "ab"] == workers
        taken = client.gather(list(cc.futures().values()))
        report = cc.stop()
    assert report.errors == {}
    results = cc.results()
    for k, s in enumerate(streams):
        got = sorted(taken[k] + results[s.name], key=lambda r: r.index)
        first = s.chunking.first_chunk // 4
        assert [r.index for r in got] == list(range(first, first + 5))
        assert total(got, 0) == 20 * PPC and total(got, 1) == 0
        assert sum(r.packets for r in got) == 20 * PPC and all(r.chunks == 4 for r in got)
    assert report.account is not None and report.account.balanced
    assert [r["placed"] for r in report.account.rows()] == [20 * PPC, 20 * PPC]


# ---------------------------------------------------------------- as an array


@pytest.fixture(scope="module")
def array(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[lan.Lan, Client]]:
    """A switch with four hosts: the scheduler's, the sender's, and two capture hosts,
    each running a `dask worker`."""
    why = lan.missing()
    if why is not None:
        need_tool(f"hosts on a switch: {why}")
    with lan.Lan() as net:
        ctl, _fpga = net.add_host("ctl"), net.add_host("fpga")
        hosts = [net.add_host("a"), net.add_host("b")]
        log_dir = Path(tmp_path_factory.mktemp("dask"))
        with lan.DaskOnLan(ctl, hosts, log_dir) as dask, dask.client() as client:
            yield net, client


def group_stream(name: str, groups: tuple[str, ...], first: int, max_chunks: int) -> Stream:
    """Host `name`'s capture of `groups`, placed on that host's worker by its resource."""
    bind = f"0.0.0.0:{PORT}" if len(groups) > 1 else f"{groups[0]}:{PORT}"
    return Stream(
        name,
        UdpSource(bind=bind, groups=groups, interface=lan.HOST_IFNAME),
        chunking=Chunking(packets_per_chunk=PPC, max_chunks=max_chunks, first_chunk=first // PPC),
        resources={f"host-{name}": 1},
    )


def check_on_workers(cc: CaptureCluster, report_stats: dict[str, dict]) -> None:
    """Every chunk was checked on its worker: all placed packets match the formula."""
    results = cc.results()
    for name, s in report_stats.items():
        assert total(results[name], 1) == 0, f"{name}: payloads differ from the formula"
        assert total(results[name], 0) == s["packets"] == sum(r.packets for r in results[name])


def test_array_of_two_hosts_each_joining_two_groups(array: tuple[lan.Lan, Client]):
    net, client = array
    groups = {"a": ("239.3.0.1", "239.3.0.2"), "b": ("239.3.0.3", "239.3.0.4")}
    first = {"a": 0, "b": 1 << 20}
    count = 40 * PPC
    schedules: dict[str, np.ndarray] = {}
    for name, gs in groups.items():
        schedules.update(zip(gs, lan.chunk_spread(first[name], count, PPC, 2), strict=True))
    streams = [group_stream(n, groups[n], first[n], 16) for n in groups]
    cc = CaptureCluster(client, streams, Reduction(example_check, chunks_per_result=8))
    placed = cc.start()
    try:
        assert {n: placed[n]["host"] for n in groups} == {"a": "a", "b": "b"}
        net.wait_memberships({n: set(gs) for n, gs in groups.items()} | {"ctl": set()})
        sent = lan.publish(net.hosts["fpga"], PORT, schedules, rate_gbps=0.3)
        live = cc.stats()
        assert set(live) == {"a", "b"} and all(not s["error"] for s in live.values())
    finally:
        report = cc.stop()
    assert report.errors == {}
    account = report.reconcile(
        Transmitted(f"sender:{n}", (n,), sum(sent[g] for g in gs)) for n, gs in groups.items()
    )
    assert account.balanced, account.rows()
    for n in groups:
        s = report.streams[n].stats
        assert s["packets"] + s["lost"] == count
        assert s["received"] + s["kernel_drops"] == count
        assert s["lost"] == s["late"] + s["kernel_drops"]
        assert s["duplicate"] == s["rejected"] == 0
    check_on_workers(cc, {n: r.stats for n, r in report.streams.items()})
    net.wait_memberships({"a": set(), "b": set()})  # the workers left their groups


def test_array_account_is_exact_with_faults_on_the_way(array: tuple[lan.Lan, Client]):
    net, client = array
    window = 8
    groups = {"a": ("239.3.1.1",), "b": ("239.3.1.2",)}
    first = {"a": 0, "b": 1 << 20}
    rng = np.random.default_rng(32)
    faults = {n: faulty_schedule(24, PPC, window, rng) for n in groups}
    schedules = {
        groups[n][0]: f.schedule + np.uint64(first[n]) for n, f in faults.items()
    }  # fmt: skip
    streams = [group_stream(n, groups[n], first[n], window) for n in groups]
    cc = CaptureCluster(
        client,
        streams,
        Reduction(example_check, chunks_per_result=8),
        # What the FPGA counted: the clean stream; the faults happen after it.
        transmitted=[Transmitted(f"fpga:{n}", (n,), f.total) for n, f in faults.items()],
    )
    cc.start()
    try:
        net.wait_memberships({n: set(gs) for n, gs in groups.items()})
        sent = lan.publish(net.hosts["fpga"], PORT, schedules, rate_gbps=0.2)
    finally:
        report = cc.stop()
    assert report.errors == {}
    assert sent == {groups[n][0]: len(f.schedule) for n, f in faults.items()}
    assert report.account is not None and report.account.balanced, report.account.rows()
    for row in report.account.rows():
        f = faults[row["stream"]]
        assert (row["placed"], row["lost"]) == (f.total - len(f.dropped), len(f.dropped))
        assert (row["late"], row["duplicate"]) == (len(f.late), len(f.duplicated))
        assert row["kernel_drops"] == row["rejected"] == 0
        # Lost packets that were never sent again: neither late nor dropped by the host.
        assert row["unreached"] == len(f.dropped) - len(f.late)
    check_on_workers(cc, {n: r.stats for n, r in report.streams.items()})


def test_array_account_names_a_stream_sent_past_the_captures(array: tuple[lan.Lan, Client]):
    """Packets sent to a group after its capture stopped are in the transmitter's count
    and in no capture: the account says so."""
    net, client = array
    group = "239.3.2.1"
    cc = CaptureCluster(client, [group_stream("a", (group,), 0, 8)])
    cc.start()
    try:
        net.wait_memberships({"a": {group}})
        sent = lan.publish(net.hosts["fpga"], PORT, {group: np.arange(8 * PPC)}, rate_gbps=0.2)
    finally:
        report = cc.stop()
    net.wait_memberships({"a": set()})
    late = lan.publish(
        net.hosts["fpga"], PORT, {group: np.arange(8 * PPC, 10 * PPC)}, rate_gbps=0.2
    )
    account = report.reconcile([Transmitted("fpga:a", ("a",), sent[group] + late[group])])
    assert account.lines[0].difference == 2 * PPC
    assert account.lines[0].explanation().startswith(f"{2 * PPC} sent but in no capture's")


# ---------------------------------------------------------------- from the shell


def test_cli_stream_and_fpga_options_are_parsed_or_refused():
    s = parse_stream(
        "name=a,bind=0.0.0.0:7148,groups=239.2.0.1+239.2.0.2,interface=eth0,resource=nic-eth0",
        Chunking(packets_per_chunk=PPC),
        4096,
    )
    assert (s.name, s.source.groups, s.resources) == (
        "a",
        ("239.2.0.1", "239.2.0.2"),
        {"nic-eth0": 1},
    )
    assert s.fmt is not None and s.fmt().payload_size == 4096
    with pytest.raises(ValueError, match="'port=1' is not one of"):
        parse_stream("name=a,bind=0.0.0.0:1,port=1", Chunking(), 8192)
    with pytest.raises(ValueError, match="needs name= and bind="):
        parse_stream("name=a", Chunking(), 8192)
    assert parse_fpga("10.0.1.50:gbe0=a+b") == ("10.0.1.50", 7147, "gbe0", ("a", "b"))
    assert parse_fpga("127.0.0.1:7150:gbe1=c") == ("127.0.0.1", 7150, "gbe1", ("c",))
    with pytest.raises(ValueError, match="host\\[:port\\]:core=stream"):
        parse_fpga("10.0.1.50=a")


def test_cli_runs_a_local_cluster_and_checks_every_chunk(tmp_path: Path):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlib_devel_400g.cli", "rx", "cluster",
         "--stream", f"name=lo,bind=127.0.0.1:{port}", "--packets-per-chunk", str(PPC),
         "--seconds", "8", "--interval", "2", "--check-example"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("lo: capturing on"), line
        sender = _core.Sender(port=port, count=16 * PPC, rate_gbps=0.2)
        assert sender.run(30.0)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "packets whose payload differs from the example stream's formula: 0" in out
    assert f"packets={16 * PPC:,}" in out.splitlines()[-1], out
