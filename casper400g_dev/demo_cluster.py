"""`python -m casper400g_dev demo`, part 9: the array, two hosts capturing on a Dask cluster.

Four network namespaces on a switch with IGMP snooping (lan.py): the Dask scheduler's
host, an "FPGA" host publishing four multicast groups, and two capture hosts with a
`dask worker` each. Each capture host's stream is dealt over two groups by chunk, as a
destination table deals heap ranges; host b's link drops 1% of its packets. Each worker
captures its host's groups, checks every chunk against the example stream's formula and
integrates a spectrum of the payload bytes (taken as 8-bit samples) where the chunks are;
the client gathers the spectra into one plot, side by side, and prints the array's loss
account: what was sent per host against what each capture placed and lost.
"""

from __future__ import annotations

import numpy as np
from rich.console import Console

from casper400g_rx import Chunking, UdpSource
from casper400g_rx.account import Transmitted
from casper400g_rx.cluster import CaptureCluster, Reduction, Stream

from . import checkout, lan

PNG = checkout.ROOT / "build" / "demo" / "cluster_spectra.png"
PORT = 7148
PPC = 128
CHUNKS = 48
CHANNELS = 512
GROUPS = {"a": ("239.4.0.1", "239.4.0.2"), "b": ("239.4.0.3", "239.4.0.4")}


def payload_spectrum(chunk: object) -> np.ndarray:
    """Per chunk, on its worker: the power spectrum of its present payload bytes taken as
    8-bit samples in blocks of 2 x CHANNELS, summed; [present packets, payloads differing
    from the formula] appended."""
    from casper400g_rx.cluster import example_check

    present = np.asarray(chunk.present)  # type: ignore[attr-defined]
    samples = np.asarray(chunk.data)[present].view(np.int8).astype(np.float32)  # type: ignore[attr-defined]
    blocks = samples.reshape(-1, 2 * CHANNELS)
    power = (np.abs(np.fft.rfft(blocks, axis=1)[:, :CHANNELS]) ** 2).sum(axis=0)
    return np.concatenate([power, example_check(chunk).astype(np.float64)])


def _plot(spectra: dict[str, np.ndarray]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(spectra), figsize=(11, 3.6), sharey=True)
    for ax, (host, power) in zip(np.atleast_1d(axes), sorted(spectra.items()), strict=True):
        ax.semilogy(np.maximum(power, 1e-3))
        ax.set_title(f"host {host}: groups {', '.join(GROUPS[host])}")
        ax.set_xlabel("channel")
    np.atleast_1d(axes)[0].set_ylabel("integrated power")
    fig.tight_layout()
    PNG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PNG, dpi=90)
    plt.close(fig)


def run(console: Console) -> int:
    console.rule("[bold]casper400g demo, part 9: the array — two hosts on a Dask cluster")
    why = lan.missing()
    if why is not None:
        console.print(f"cluster part skipped: {why}")
        return 0
    rng = np.random.default_rng(9)
    first = {"a": 0, "b": 1 << 20}
    count = CHUNKS * PPC
    schedules: dict[str, np.ndarray] = {}
    dropped = {}
    for host, groups in GROUPS.items():
        seqs = np.arange(first[host], first[host] + count, dtype=np.uint64)
        # Host b's link drops 1% (not its first or last packet, so its extent is known).
        drop = rng.choice(seqs[1:-1], size=count // 100, replace=False) if host == "b" else []
        dropped[host] = len(drop)
        kept = np.setdiff1d(seqs, drop)
        way = (kept // np.uint64(PPC)) % np.uint64(len(groups))
        schedules.update({g: kept[way == np.uint64(i)] for i, g in enumerate(groups)})
    streams = [
        Stream(
            host,
            UdpSource(bind=f"0.0.0.0:{PORT}", groups=groups, interface=lan.HOST_IFNAME),
            chunking=Chunking(packets_per_chunk=PPC, max_chunks=16, first_chunk=first[host] // PPC),
            resources={f"host-{host}": 1},
        )
        for host, groups in GROUPS.items()
    ]
    # What each "FPGA" output counted: the whole stream; the drops happen on the link.
    transmitted = [Transmitted(f"fpga:{h}", (h,), count) for h in GROUPS]
    with lan.Lan() as net:
        ctl, fpga = net.add_host("ctl"), net.add_host("fpga")
        hosts = [net.add_host(h) for h in GROUPS]
        console.print(
            f"switch {net.switch.name} (IGMP snooping, querier, no flooding of unjoined groups); "
            + ", ".join(f"{h.name} {h.ip}" for h in (ctl, fpga, *hosts))
        )
        log_dir = checkout.ROOT / "build" / "demo" / "cluster_logs"
        with lan.DaskOnLan(ctl, hosts, log_dir) as dask, dask.client() as client:
            console.print(f"Dask scheduler {dask.address}; workers on hosts a and b")
            cc = CaptureCluster(client, streams, Reduction(payload_spectrum, CHUNKS), transmitted)
            for name, where in cc.start().items():
                console.print(f"  stream {name}: capture on {where['host']} ({where['worker']})")
            try:
                net.wait_memberships({h: set(g) for h, g in GROUPS.items()})
                sent = lan.publish(fpga, PORT, schedules, rate_gbps=0.4)
                console.print(f"  sent {sum(sent.values()):,} datagrams to 4 groups at 0.4 Gb/s")
            finally:
                report = cc.stop()
    results = cc.results()
    totals = {h: sum(r.value for r in results[h]) for h in GROUPS}
    _plot({h: t[:CHANNELS] for h, t in totals.items()})
    account = report.account
    assert account is not None
    console.print(account.table())
    bad = sum(int(t[CHANNELS + 1]) for t in totals.values())
    lost = {h: report.streams[h].stats["lost"] for h in GROUPS}
    console.print(
        f"spectra side by side: {PNG.relative_to(checkout.ROOT)}; payloads differing from "
        f"the formula: {bad}; lost {lost} (dropped on the links {dropped})"
    )
    ok = not report.errors and account.balanced and bad == 0 and lost == dropped
    if report.errors:
        console.print(f"[red]capture errors: {report.errors}")
    return 0 if ok else 1
