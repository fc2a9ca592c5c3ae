"""The register map: generated files in sync with the RDL, and the map matches
docs/design/core.md §4."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from casper400g_dev import checkout, regs_gen
from casperfpga_ext import fhg_regmap as regmap
from mlib_devel_400g import generated, paths

REGS = regmap.REGISTERS


@pytest.fixture(scope="module")
def rendered() -> dict[Path, str]:
    return regs_gen.render_all()


def test_committed_generated_files_are_current(rendered: dict[Path, str]) -> None:
    stale = generated.stale_files(rendered)
    assert not stale, f"run `casper400g regs` and commit: {[str(p) for p in stale]}"


def test_generation_is_deterministic(rendered: dict[Path, str]) -> None:
    assert regs_gen.render_all() == rendered


def test_stale_check_detects_a_changed_file(rendered: dict[Path, str], tmp_path: Path) -> None:
    generated.write_files(rendered, tmp_path)
    assert generated.stale_files(rendered, tmp_path) == []
    victim = tmp_path / regs_gen.PY_MAP
    victim.write_text(victim.read_text() + "# edited by hand\n")
    (tmp_path / regs_gen.MD_DOC).unlink()
    assert set(generated.stale_files(rendered, tmp_path)) == {regs_gen.PY_MAP, regs_gen.MD_DOC}


# Offsets docs/design/core.md §4 fixes (casperfpga's unified GbE map), typed from the spec.
SPEC_OFFSETS = {
    "core_type": 0x00,
    "buffer_sizes": 0x04,
    "word_len": 0x08,
    "mac_hi": 0x0C,
    "mac_lo": 0x10,
    "ip": 0x14,
    "gateway": 0x18,
    "netmask": 0x1C,
    "mc_ip": 0x20,
    "mc_mask": 0x24,
    "ctrl": 0x2C,
    "port": 0x30,
    "status": 0x34,
    "arp_size": 0x44,
    "tx_packet_rate": 0x48,
    "tx_packet_counter": 0x4C,
    "tx_valid_rate": 0x50,
    "tx_valid_counter": 0x54,
    "tx_overflow_counter": 0x58,
    "tx_afull_counter": 0x5C,
    "rx_packet_rate": 0x60,
    "rx_packet_counter": 0x64,
    "rx_valid_rate": 0x68,
    "rx_valid_counter": 0x6C,
    "rx_overflow_counter": 0x70,
    "rx_bad_counter": 0x74,
    "count_reset": 0x78,
}


@pytest.mark.parametrize("name,offset", sorted(SPEC_OFFSETS.items(), key=lambda kv: kv[1]))
def test_casperfpga_compatible_offsets(name: str, offset: int) -> None:
    assert REGS[name].offset == offset


def test_ctrl_bits_where_casperfpga_has_them() -> None:
    ctrl = REGS["ctrl"]
    assert ctrl.field("fabric_en").lsb == 0
    assert ctrl.field("promisc_en").lsb == 8
    assert ctrl.field("soft_rst").lsb == 16 and ctrl.field("soft_rst").singlepulse
    assert ctrl.field("udp_checksum_en").reset == 1  # docs/design/core.md §2: default on


def test_400g_additions_live_above_0x80() -> None:
    for name in ("ttl", "ip_id", "link_ctrl", "link_status", "tx_arp_miss", "tx_bytes", "rx_bytes"):
        assert REGS[name].offset >= 0x80, name


def test_regions() -> None:
    arp = regmap.REGIONS["arp_table"]
    assert (arp.offset, arp.entries, arp.entry_bytes) == (0x1000, 256, 8)
    fields = {f.name: f for f in arp.entry_fields}
    assert (fields["valid"].lsb, fields["mac_hi"].lsb, fields["mac_hi"].width) == (16, 0, 16)
    assert (fields["mac_lo"].lsb, fields["mac_lo"].width) == (32, 32)
    assert regmap.REGIONS["cpu_tx_buf"].offset == 0x4000
    assert regmap.REGIONS["cpu_rx_buf"].offset == 0x8000
    assert regmap.REGIONS["cpu_rx_buf"].sw == "r"
    assert regmap.BLOCK_SIZE == 0x10000


# One counter per RX drop reason of docs/design/core.md §3 (names chosen for the map).
SPEC_DROP_REASONS = [
    "rx_drop_fcs",
    "rx_drop_dst_mac",
    "rx_drop_ethertype",
    "rx_drop_ip_version",
    "rx_drop_ip_options",
    "rx_drop_ip_fragment",
    "rx_drop_ip_checksum",
    "rx_drop_ip_protocol",
    "rx_drop_dst_ip",
    "rx_drop_dst_port",
    "rx_drop_length",
    "rx_drop_overrun",
    "rx_drop_cpu_busy",
]


@pytest.mark.parametrize("name", SPEC_DROP_REASONS)
def test_every_drop_reason_has_a_64bit_counter(name: str) -> None:
    assert REGS[name].is_counter and REGS[name].width == 64


def test_counters_64bit_and_aligned() -> None:
    for name in ("tx_frames", "tx_bytes", "rx_frames", "rx_bytes", "tx_arp_miss", "tx_overflow"):
        reg = REGS[name]
        assert reg.width == 64 and reg.offset % 8 == 0, name


def test_no_overlaps_and_all_inside_the_block() -> None:
    spans = sorted(
        [(r.offset, r.offset + r.nbytes, r.name) for r in REGS.values()]
        + [(g.offset, g.offset + g.size, g.name) for g in regmap.REGIONS.values()]
    )
    for (_a0, a1, an), (b0, _, bn) in itertools.pairwise(spans):
        assert a1 <= b0, f"{an} overlaps {bn}"
    assert spans[-1][1] <= regmap.BLOCK_SIZE


def test_every_register_and_field_is_described() -> None:
    for reg in REGS.values():
        assert reg.desc, reg.name
        for f in reg.fields:
            assert f.desc, f"{reg.name}.{f.name}"
            assert f.sw in ("r", "rw", "w")


def test_field_helpers() -> None:
    f = REGS["ctrl"].field("promisc_en")
    assert f.put(0, 1) == 0x100 and f.get(0x100) == 1
    with pytest.raises(ValueError, match="promisc_en"):
        f.put(0, 2)
    with pytest.raises(KeyError, match="nope"):
        REGS["ctrl"].field("nope")


def test_docs_list_every_register() -> None:
    text = (checkout.DOCS_DIR / "registers.md").read_text()
    for reg in REGS.values():
        assert f"### {reg.name}\n" in text
        assert f"0x{reg.offset:04X}" in text
    for region in regmap.REGIONS.values():
        assert f"### {region.name}\n" in text
    assert "never torn" in text


def test_generated_sv_is_flat_axi4lite_with_active_low_reset() -> None:
    sv = (paths.REGS_DIR / "fhg_regs.sv").read_text()
    assert "module fhg_regs (" in sv
    for port in ("rst_n", "s_axil_awaddr", "s_axil_rdata", "s_axil_bresp"):
        assert port in sv


def test_flat_wrapper_exposes_every_hwif_signal() -> None:
    sv = (paths.REGS_DIR / "fhg_regs.sv").read_text()
    rpt = (paths.REGS_DIR / "fhg_regs_hwif.rpt").read_text()
    wrapper = regs_gen.render_flat_wrapper(sv, rpt)
    signals = [line for line in rpt.splitlines() if line.startswith("hwif_")]
    assert len(signals) > 100
    assert wrapper.count("assign ") == len(signals)
    assert "output wire [10:0] hwif_out__arp_table__addr" in wrapper
    assert "input  wire [23:0] hwif_in__tx_bytes__count__incrvalue" in wrapper
