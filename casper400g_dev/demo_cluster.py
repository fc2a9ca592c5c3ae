"""`casper400g demo`, part 9: the array, the twin's tone spread over two hosts on Dask.

Three network namespaces on a switch with IGMP snooping (lan.py): the Dask scheduler's
host and two capture hosts with a `dask worker` each; the example design's twin (the
build of part 1) is on a port of the same switch. examples/configure_core.py sets the
generator to the tone in SPEAD heaps and loads the destination table: each spectrum of
four heaps goes to four multicast groups, two per host, each group a quarter of the
channels (twin_spread.py). Each worker captures its host's groups, checks every heap
against the tone's golden model at the packet number the table's model gives, and keeps
the power of its groups' channels; the twin's link drops 1% of the datagrams. The client
plots the two hosts' spectra side by side, the tone standing in the host that takes its
channel, and prints the array's loss account against the core's tx_udp_packets read over
KATCP.
"""

from __future__ import annotations

import numpy as np
from rich.console import Console

from mlib_devel_400g.toolflow import BuildResult

from . import checkout, lan, twin_spread
from .twin.board import Network, TwinBoard, TwinError
from .twin.build import TwinBuildError
from .twin.harness import HarnessError
from .twin.netns import Switch

PNG = checkout.ROOT / "build" / "demo" / "cluster_spectra.png"
HOSTS = (("a", ("239.4.0.1", "239.4.0.2")), ("b", ("239.4.0.3", "239.4.0.4")))
DROP = 0.01


def _plot(cfg: twin_spread.SpreadConfig, obs: twin_spread.Observation) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    freq = cfg.frequencies()
    tone = cfg.tone_channel()
    fig, axes = plt.subplots(1, len(cfg.hosts), figsize=(11, 3.8), sharey=True)
    for ax, (host, groups) in zip(np.atleast_1d(axes), cfg.hosts, strict=True):
        power = obs.host_power(cfg, host)
        for k, (h, group) in enumerate(cfg.groups):
            if h != host:
                continue
            lo, hi = k * cfg.width, (k + 1) * cfg.width
            ax.semilogy(freq[lo:hi], np.maximum(power[lo:hi], 1e-3), lw=0.7, label=group)
        if cfg.host_of_channel(tone) == host:
            ax.axvline(freq[tone], color="C3", ls="--", lw=0.8, label="configured tone")
        first = next(k for k, (h, _g) in enumerate(cfg.groups) if h == host) * cfg.width
        ax.set_title(
            f"host {host}: channels {first}-{first + len(groups) * cfg.width - 1}", fontsize=10
        )
        ax.set_xlabel("frequency (fraction of the sample rate)")
        ax.legend(loc="upper left", fontsize=8)
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("integrated power")
    fig.suptitle(
        f"the twin's tone spread by its destination table: {cfg.count:,} heaps, "
        f"{cfg.channels} channels per heap",
        fontsize=10,
    )
    fig.tight_layout()
    PNG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PNG, dpi=90)
    plt.close(fig)


def run(console: Console, build: BuildResult) -> int:
    console.rule("[bold]casper400g demo, part 9: the array — the twin's tone over two hosts")
    why = lan.missing()
    if why is not None:
        console.print(f"array part skipped: {why}")
        return 0
    with lan.Lan() as net:
        ctl = net.add_host("ctl")
        hosts = [net.add_host(h) for h, _g in HOSTS]
        cfg = twin_spread.SpreadConfig(
            HOSTS, core_ip=net.reserve_address(), spectra=512, packets_per_chunk=64
        )
        console.print(
            f"switch {net.switch.name} (IGMP snooping, querier, no flooding of unjoined groups); "
            + ", ".join(f"{h.name} {h.ip}" for h in (ctl, *hosts))
        )
        network = Network("tap", switch=Switch(net.switch.name, lan.BRIDGE))
        board = TwinBoard(
            build.build_dir,
            network=network,
            katcp_port=0,
            icmp=False,
            progress=lambda m: console.print(f"      {m}", markup=False),
        )
        try:
            board.start()
        except (TwinError, TwinBuildError, HarnessError, OSError) as exc:
            console.print(f"[red]the twin did not start: {exc}")
            return 1
        try:
            net.attach(board.interface())
            console.print(f"the twin's core {cfg.core_ip} on the switch: {board.describe()[-1]}")
            return _run(console, net, board, cfg, ctl, hosts)
        finally:
            board.stop()


def _run(
    console: Console,
    net: lan.Lan,
    board: TwinBoard,
    cfg: twin_spread.SpreadConfig,
    ctl: lan.Host,
    hosts: list[lan.Host],
) -> int:
    argv = cfg.configure_argv(board.katcp_host, board.port)
    shown = [str(twin_spread.CONFIGURE_SCRIPT.relative_to(checkout.ROOT)), *argv[2:]]
    console.print(f"$ python {' '.join(shown)}", markup=False, soft_wrap=True)
    proc = twin_spread.configure(board, cfg)
    if proc.returncode != 0:
        console.print(f"[red]configure_core.py exited with {proc.returncode}: {proc.stderr}")
        return 1
    for line in proc.stdout.strip().splitlines()[-len(cfg.groups) - 1 :]:
        console.print(f"  {line}", markup=False, highlight=False)
    log_dir = checkout.ROOT / "build" / "demo" / "cluster_logs"
    with lan.DaskOnLan(ctl, hosts, log_dir) as dask, dask.client() as client:
        console.print(
            f"Dask scheduler {dask.address}; workers on hosts a and b, a capture per group; "
            f"the tone at {cfg.tone.frequency:.5f} fs, {cfg.count:,} heaps of {cfg.size} B, "
            f"the link dropping {DROP:.0%}"
        )
        # 1% of the datagrams dropped, none of a group's first or last heap (they mark
        # where its stream begins and ends for the capture).
        groups = len(cfg.groups)
        rng = np.random.default_rng(9)
        drop = rng.choice(np.arange(groups, cfg.count - groups), round(DROP * cfg.count), False)
        obs = twin_spread.run(board, net, client, cfg, faults={"drop_at": drop.tolist()})
    _plot(cfg, obs)
    report = obs.report
    account = report.account
    assert account is not None
    console.print(account.table())
    bad = {n: t.counts for n, t in obs.taken.items() if any(t.counts.values())}
    lost = sum(r.stats["lost"] for r in report.streams.values())
    tone = cfg.tone_channel()
    owner = cfg.host_of_channel(tone)
    power = {h: obs.host_power(cfg, h) for h, _g in cfg.hosts}
    peak = {h: int(np.argmax(p)) for h, p in power.items()}
    others = max(p.max() for h, p in power.items() if h != owner)
    console.print(
        f"{cfg.count:,} heaps in {obs.seconds:.1f} s; the link dropped {obs.link['dropped']}, "
        f"the captures lost {lost}; heaps differing from the models: {bad or 0}; per entry "
        f"(dest_tbl_sent) {obs.per_entry}"
    )
    console.print(
        f"spectra side by side: {PNG.relative_to(checkout.ROOT)}; the tone (channel {tone}) "
        f"in host {owner}: its peak at channel {peak[owner]}, "
        f"{10 * np.log10(power[owner][tone] / others):.0f} dB above the other host's highest"
    )
    ok = (
        not report.errors
        and account.balanced
        and not bad
        and lost == obs.link["dropped"]
        and peak[owner] == tone
        and others < 1e-3 * power[owner][tone]
    )
    if report.errors:
        console.print(f"[red]capture errors: {report.errors}")
    return 0 if ok else 1
