"""The twin's pieces that need neither root nor a compiled model: the device image, the
per-design glue and the names that reach it, the build cache's clean-up, the KATCP port
and pcap file a twin claims, the status line, the network options, the tone's golden
model against the RTL's own tables, and configure_core.py's register writes."""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import re
import shutil
import socket
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from casper400g_dev import checkout, toolflow_sim
from casper400g_dev.twin import soak
from casper400g_twin import build, claims, image
from casper400g_twin.board import (
    Network,
    TwinBoard,
    TwinError,
    port_host,
    status_line,
    status_lines,
)
from casper400g_twin.netns import HostSide
from casperfpga_ext.fpg import GBE_TAG, FpgHeader, parse_fpg_header
from verification import tone_model

TONE_RTL = checkout.EXAMPLES_DIR / "pktgen_400g" / "fhg_tone_gen.sv"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return toolflow_sim.build_example(tmp_path_factory.mktemp("units") / "b").build_dir


def test_the_twin_fpg_carries_the_designs_hdl(example: Path, tmp_path: Path):
    fpg = image.write_fpg(example)
    assert fpg.name == "pktgen_400g_twin.fpg"
    assert fpg.read_bytes() == image.write_fpg(example, tmp_path / "again.fpg").read_bytes()
    header, payload = image.read_fpg(fpg.read_bytes(), str(fpg))
    assert header.devices["gbe0"].address == 0xA4000000
    assert image.is_image(payload)
    unpacked = image.unpack(payload, cache_dir=tmp_path)
    sources = build.design_sources(example)
    assert unpacked.design == "pktgen_400g"
    assert [p.read_bytes() for p in unpacked.sources] == [p.read_bytes() for p in sources]
    assert unpacked.sources[-1].name.endswith("_top.v")


def test_bad_images_are_refused_with_the_reason(tmp_path: Path):
    assert not image.is_image(b"\x00" * 512)
    with pytest.raises(image.ImageError, match="not a twin image"):
        image.unpack(b"PDI bitstream bytes" * 100, cache_dir=tmp_path)
    raw = tmp_path / "evil.tar"
    with tarfile.open(raw, "w") as tar:
        manifest = tmp_path / "twin.json"
        manifest.write_text(
            '{"format": "casper400g-twin", "version": 1, "design": "x", "sources": ["../x.v"]}'
        )
        tar.add(manifest, arcname="twin.json")
    with pytest.raises(image.ImageError, match="bad source name"):
        image.unpack(raw.read_bytes(), cache_dir=tmp_path)
    with pytest.raises(image.ImageError, match="not gzip"):
        image.read_fpg(b"#!/bin/kcpfpg\n?quit\nnot gzip", "x.fpg")


def test_the_glue_binds_every_mac_port_and_names_a_missing_one(example: Path):
    ports = build.parse_ports((example / "top.v").read_text())
    assert ports["fhg0_tx_axis_tdata7"] == ("output", 128)
    assert ports["fhg0_rx_axis_tuser_mty3"] == ("input", 4)
    glue = build.render_glue(ports, {"gbe0": "fhg0_"})
    assert glue.count("m.tx.tdata[") == 8 and glue.count("m.rx.tdata[") == 8
    assert "t->fhg0_link_state = up ? 5 : 0;" in glue
    del ports["fhg0_rx_axis_tuser_sop5"]
    with pytest.raises(build.TwinBuildError, match="fhg0_rx_axis_tuser_sop5"):
        build.render_glue(ports, {"gbe0": "fhg0_"})


def stats(t: float, cycles: int, frames: int, nbytes: int) -> dict:
    link = {"datagrams": frames, "dropped": 2, "duplicated": 0, "delayed": 1, "passed": frames}
    mac = {"to_host_frames": frames, "to_host_bytes": nbytes, "from_host_frames": 3}
    mac.update(violations=0, violation="", link=link)
    return {"wall_s": t, "user_cycles": cycles, "sim_fs": cycles * 2_560_000, "macs": {"gbe0": mac}}


def test_the_status_line_gives_cycles_per_second_gbps_and_frames():
    line = status_line(stats(1.0, 0, 0, 0), stats(3.0, 200_000, 100, 100 * 8234))
    assert "100.0 kcycles/s" in line
    assert "FPGA->host 100 frames  0.003 Gb/s, host->FPGA 3 frames" in line
    assert "link dropped 2 duplicated 0 delayed 1" in line


def test_the_status_has_a_line_per_port():
    two = [stats(1.0, 0, 0, 0), stats(3.0, 200_000, 100, 100 * 8234)]
    for s, frames in zip(two, (0, 40), strict=True):
        port1 = dict(s["macs"]["gbe0"], to_host_frames=frames, to_host_bytes=frames * 8234)
        s["macs"]["gbe1"] = dict(port1, link=dict(port1["link"], dropped=0, delayed=0))
    lines = status_lines(*two)
    assert len(lines) == 3 and "100.0 kcycles/s" in lines[0]
    assert lines[1].startswith("gbe0: FPGA->host 100 frames  0.003 Gb/s")
    assert lines[2] == "gbe1: FPGA->host 40 frames  0.001 Gb/s, host->FPGA 3 frames"
    assert status_line(*two) == " | ".join(lines)


def test_each_port_gets_a_host_side_on_its_own_subnet():
    """The twin's interface per block: the first is the configured host; another takes the
    same host part on its block's subnet, its own name and MAC; a block sharing a subnet
    with an earlier port gets an interface without an address."""
    host = HostSide(ip="10.0.0.20/24", mac="0c:42:a1:00:00:14")
    assert port_host(host, 0, {"fab_ip": "10.0.5.10", "fab_netmask": "255.255.255.0"}) == host
    one = port_host(host, 1, {"fab_ip": "10.0.1.10", "fab_netmask": "255.255.255.0"})
    assert (one.ip, one.mac, one.ifname) == ("10.0.1.20/24", "0c:42:a1:00:00:15", "c4g1")
    wide = port_host(host, 2, {"fab_ip": "172.16.9.1", "fab_netmask": "255.255.0.0"})
    assert wide.ip == "172.16.0.20/16"
    for meta in (
        {"fab_ip": "10.0.0.11", "fab_netmask": "255.255.255.0"},  # port 0's subnet
        {"fab_ip": "10.0.1.20", "fab_netmask": "255.255.255.0"},  # the host's own address
        {"fab_ip": "10.0.1.10"},  # no mask
        None,
    ):
        assert port_host(host, 1, meta).ip == "", meta


def test_network_modes_are_checked():
    with pytest.raises(ValueError, match="network mode 'wifi'"):
        Network("wifi")


def test_the_golden_models_tables_are_the_rtls():
    rtl = TONE_RTL.read_text()
    quarter = dict(re.findall(r"7'd(\d+): quarter_cos = 7'd(\d+);", rtl))
    table = tone_model.cos_table()
    assert {int(k): int(v) for k, v in quarter.items()} == {i: int(table[i]) for i in range(65)}
    assert all(int(table[k]) == round(127 * math.cos(2 * math.pi * k / 256)) for k in range(256))
    seeds = re.search(r"LANE_SEED_BITS = \{(.*?)\};", rtl, re.S)
    assert seeds is not None
    digits = "".join(re.findall(r"256'h([0-9a-f]{64})", seeds.group(1)))
    words = [int(digits[i : i + 8], 16) for i in range(0, 512, 8)][::-1]  # word j at [32j +: 32]
    assert words == [int(x) for x in tone_model.lane_seeds()]
    assert all((w >> 16) != (w & 0xFFFF) for w in words)  # no seed makes a lane's state 0


def test_the_tone_models_samples_are_the_configured_tone():
    cfg = tone_model.ToneConfig.for_frequency(0.15625, noise_bits=0)
    assert cfg.step == 0x2800_0000 and cfg.shape == 0x0001_0000  # seed 1, no noise
    payloads = tone_model.expected_payloads(cfg, range(4), 8192)
    assert payloads[3, :8].tobytes() == (3).to_bytes(8, "big")
    z = tone_model.samples(payloads).ravel()
    assert len(z) == 4 * 4092
    s = np.arange(len(z))
    want = 127 * np.exp(2j * np.pi * cfg.frequency * s)
    assert np.max(np.abs(z - want)) < 2.5  # the 8-bit table's rounding
    with pytest.raises(ValueError, match="step"):
        tone_model.ToneConfig(step=1 << 32)


def test_configure_core_parses_register_writes():
    spec = importlib.util.spec_from_file_location(
        "configure_core", checkout.EXAMPLES_DIR / "configure_core.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.register_write("pkt_mode=1") == ("pkt_mode", 1)
    assert mod.register_write("tone_step=0x28000000") == ("tone_step", 0x28000000)
    for bad in ("pkt_mode", "=1", "x=one", "x=0x100000000"):
        with pytest.raises(Exception, match="register write"):
            mod.register_write(bad)


def header_with_block(example: Path, name: str, port: str = "0") -> FpgHeader:
    """The example's .fpg header with its 400GbE block renamed (and its port changed)."""
    text = (example / "fpg_header.txt").read_bytes()
    text = text.replace(b"\tgbe0\t", f"\t{name}\t".encode())
    meta = f"{name}\t{GBE_TAG}\tport\t"
    text = text.replace(f"{meta}0".encode(), f"{meta}{port}".encode())
    return parse_fpg_header(text, "crafted.fpg")


def test_names_from_a_header_must_be_identifiers_before_they_reach_cpp_or_paths(
    example: Path, tmp_path: Path
):
    sources = build.design_sources(example)
    header = parse_fpg_header((example / "fpg_header.txt").read_bytes())
    ports = build.parse_ports((example / "top.v").read_text())
    # A block name ending the generated C++ string literal, a path, an empty name.
    for bad in ('gbe0";system("id");//', "../gbe0", "0gbe", "gbe-0"):
        with pytest.raises(build.TwinBuildError, match=re.escape(repr(bad))):
            build.gbe_blocks(header_with_block(example, bad))
        with pytest.raises(build.TwinBuildError, match=re.escape(repr(bad))):
            build.render_glue(ports, {bad: "fhg0_"})
    with pytest.raises(build.TwinBuildError, match="port '0x'"):
        build.gbe_blocks(header_with_block(example, "gbe0", port="0x"))
    # A design name climbing out of the cache: refused before the cache is touched (a
    # folder beside the cache that a glob of the name would reach stays).
    cache = tmp_path / "cache"
    (cache / "twin_x").mkdir(parents=True)
    (cache / "twin-x").mkdir(parents=True)
    victim = tmp_path / "victim-0123456789abcdef"
    victim.mkdir()
    (victim / "keep").write_text("not the twin's")
    for bad in ("x/../../victim", "../victim", "x y", "x" * 65):
        with pytest.raises(build.TwinBuildError, match="design name"):
            build.compile_twin(sources, header, bad, cache_dir=cache)
    assert (victim / "keep").read_text() == "not the twin's"
    assert sorted(p.name for p in cache.iterdir()) == ["twin-x", "twin_x"]
    # Only HDL is compiled: a C++ file (Verilator would link it in) or a dotted name is not.
    evil = tmp_path / "evil.cpp"
    evil.write_text("int x;")
    with pytest.raises(build.TwinBuildError, match=re.escape("source 'evil.cpp'")):
        build.compile_twin([evil, *sources], header, "pktgen_400g", cache_dir=cache)
    # An uploaded image's manifest names the design: checked when it is unpacked.
    manifest = {"format": image.FORMAT, "version": image.VERSION, "design": "../../x"}
    manifest["sources"] = ["000_top.v"]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in (("twin.json", json.dumps(manifest).encode()), ("000_top.v", b"")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(image.ImageError, match=re.escape("design name '../../x'")):
        image.unpack(buf.getvalue(), cache_dir=tmp_path / "images")


@pytest.fixture
def open_cache() -> Iterator[Path]:
    """A cache folder the twin's run-as user can enter: pytest's own folders are 0700 when
    root, and a root twin builds elsewhere when its user cannot enter the cache."""
    path = Path(tempfile.mkdtemp(prefix="twin-cache-", dir="/var/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def test_cache_cleanup_stays_in_the_cache_and_spares_a_build_a_twin_runs(
    example: Path, tmp_path: Path, open_cache: Path
):
    """A new build of a design removes its older builds that no twin holds, and nothing
    else: not a build a running twin holds, not what a link in the cache points to."""
    sources = build.design_sources(example)
    header = parse_fpg_header((example / "fpg_header.txt").read_bytes())
    cache = open_cache
    old = [cache / f"twin-pktgen_400g-t1-{k:016x}" for k in range(3)]
    for d in old:
        d.mkdir()
        (d / build.IN_USE).touch()
        (d / build.BUILT).write_text(d.name[-16:])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / build.IN_USE).touch()
    (outside / "keep").write_text("not in the cache")
    link = cache / f"twin-pktgen_400g-t1-{3:016x}"
    link.symlink_to(outside, target_is_directory=True)
    other = cache / "twin-pktgen_400g-t2-0000000000000000"  # other thread count
    other.mkdir()
    unfinished = cache / f"twin-pktgen_400g-t1-{4:016x}"  # no lock file: never built
    unfinished.mkdir()
    held = build.hold_build(old[1])  # as a running twin's harness holds its build
    try:
        # A design that cannot compile: the clean-up comes first, then Verilator fails.
        bad_top = tmp_path / "top.v"
        bad_top.write_text((example / "top.v").read_text() + "\nthis is not verilog;\n")
        with pytest.raises(build.TwinBuildError, match="Verilator build of the twin") as err:
            build.compile_twin([*sources[:-1], bad_top], header, "pktgen_400g", cache_dir=cache)
        assert f"{len(sources) - 1:03d}_top.v" in str(err.value) and "syntax error" in str(
            err.value
        ), err.value
        assert not old[0].exists() and not old[2].exists() and not unfinished.exists()
        assert (old[1] / build.BUILT).is_file(), "removed a build a twin holds"
        assert link.is_symlink() and (outside / "keep").read_text() == "not in the cache"
        assert other.is_dir()
    finally:
        os.close(held)
    # Let go of, it is old like the others: the next build removes it (and the failed one).
    removed = build.evict(cache, "twin-pktgen_400g-t1", keep=cache / "none")
    assert old[1] in removed and len(removed) == 2 and not old[1].exists()
    assert link.is_symlink() and other.is_dir()


def test_a_busy_katcp_port_is_refused_before_anything_is_compiled(tmp_path: Path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # Not even a build folder: the port is the first thing a twin checks.
        board = TwinBoard(tmp_path / "no_build", network=Network("none"), katcp_port=port)
        with pytest.raises(TwinError, match=f"KATCP port {port} on 127.0.0.1 is in use"):
            board.start()
    assert board.build is None and board.netns is None


def test_twins_writing_pcap_files_claim_distinct_ones(tmp_path: Path):
    base = tmp_path / "twin_tx.pcap"
    first = claims.claim_pcap(base, numbered=True)
    second = claims.claim_pcap(base, numbered=True)
    third = claims.claim_pcap(base, numbered=True)
    assert [c.path.name for c in (first, second, third)] == [
        "twin_tx.pcap",
        "twin_tx-2.pcap",
        "twin_tx-3.pcap",
    ]
    with pytest.raises(claims.ClaimError, match="written by another running twin"):
        claims.claim_pcap(base, numbered=False)
    fd = first.open_for_writing()
    os.write(fd, b"frames")
    os.close(fd)
    assert base.read_bytes() == b"frames"
    second.release()
    again = claims.claim_pcap(base, numbered=True)  # a name is reused once its twin ended
    assert again.path.name == "twin_tx-2.pcap"
    for c in (first, third, again):
        c.release()


def test_the_soaks_reconciliation_names_every_count_that_differs():
    """A drained chain: 1000 datagrams, 4 dropped, 3 duplicated; 4 chunks of 256 taken, the
    last one's 24 slots after the stream's end empty. Then each side disagreeing alone."""
    fpga = {"tx_udp_packets": 1000, "pkt_sent": 1000, "tx_arp_miss": 0, "violations": 0}
    link = {"datagrams": 1000, "passed": 996, "dropped": 4, "duplicated": 3, "held": 0}
    host = {"received": 999, "packets": 996, "duplicate": 3, "late": 0, "rejected": 0}
    host["lost"] = 28
    taken = soak.Taken(chunks=4, present=996, end=1024)
    assert soak.reconcile(fpga, link, host, taken, final=True) == []
    # Mid-run, the last chunk still open (its 232 packets not handed on yet), the 4 drops
    # in the 3 chunks taken: reconciled; as the final count it is not.
    mid = soak.Taken(chunks=3, present=764, end=768)
    assert soak.reconcile(fpga, link, host | {"lost": 4}, mid, final=False) == []
    failed = soak.reconcile(fpga, link, host | {"lost": 4}, mid, final=True)
    assert "host packets (all taken) 996 != 764" in failed, failed
    cases = [
        ({"fpga": {"pkt_sent": 999}}, "pkt_sent 999 != 1,000"),
        ({"fpga": {"tx_arp_miss": 2}}, "tx_arp_miss 2 != 0"),
        ({"fpga": {"violations": 1}}, "DCMAC rule breaks 1 != 0"),
        ({"link": {"held": 1}}, "link held 1 != 0"),
        ({"link": {"passed": 995}}, "link passed + dropped 999 != 1,000"),
        ({"host": {"received": 998}}, "host received 998 != 999"),  # a kernel drop
        ({"host": {"packets": 995}}, "host packets 995 != 996"),
        ({"host": {"duplicate": 2}}, "host duplicate 2 != 3"),
        ({"host": {"late": 1}}, "host late 1 != 0"),
        ({"host": {"rejected": 1}}, "host rejected 1 != 0"),
        ({"host": {"lost": 29}}, "host lost 29 != 28"),
        ({"taken": {"mismatches": 1}}, "payloads differing from the example stream 1 != 0"),
    ]
    for change, message in cases:
        sides = {"fpga": dict(fpga), "link": dict(link), "host": dict(host)}
        t = soak.Taken(chunks=4, present=996, end=1024)
        for side, values in change.items():
            if side == "taken":
                t.mismatches = values["mismatches"]
            else:
                sides[side].update(values)
        failed = soak.reconcile(sides["fpga"], sides["link"], sides["host"], t, final=True)
        assert message in failed, (change, failed)
