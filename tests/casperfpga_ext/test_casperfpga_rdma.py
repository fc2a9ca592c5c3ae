"""FourHundredGbe.rdma_connect against a memory-mapped file standing in for the board: the
receiver's rdma parameters land in the core's rdma_* registers and ARP table, checked
first and read back (the simulated core takes them in tests/rdma/test_softroce_vm.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.gbe import FourHundredGbe
from casperfpga_ext.transport import MmapTransport

BASE = 0x10000
PARAMS = {
    "qpn": 0x000123, "psn": 0xFFFFFE, "rkey": 0xDEADBEEF, "va": 0x7F12_3456_7000,
    "ip": "10.0.0.2", "mac": "0c:42:a1:00:00:14", "mtu": 4096, "slot_size": 8200,
    "slots_per_chunk": 512, "chunks": 8, "credit_port": 4792,
}  # fmt: skip


@pytest.fixture
def board(tmp_path: Path) -> tuple[FourHundredGbe, Path]:
    path = tmp_path / "bus.bin"
    path.write_bytes(bytes(BASE + regmap.BLOCK_SIZE))
    t = MmapTransport(path, {"gbe0": (BASE, regmap.BLOCK_SIZE)})
    yield FourHundredGbe(t, "gbe0", BASE), path
    t.close()


def reg(path: Path, name: str) -> int:
    off = BASE + regmap.REGISTERS[name].offset
    return int.from_bytes(path.read_bytes()[off : off + 4], sys.byteorder)


def test_connect_writes_the_ring_registers(board: tuple[FourHundredGbe, Path]) -> None:
    gbe, path = board
    gbe.rdma_connect(PARAMS)
    assert reg(path, "rdma_qpn") == 0x123 and reg(path, "rdma_psn") == 0xFFFFFE
    assert reg(path, "rdma_rkey") == 0xDEADBEEF
    assert (reg(path, "rdma_va_hi") << 32) | reg(path, "rdma_va_lo") == PARAMS["va"]
    assert (reg(path, "rdma_slot_size"), reg(path, "rdma_slots"), reg(path, "rdma_chunks")) == (
        8200, 512, 8,
    )  # fmt: skip
    assert reg(path, "rdma_dest_ip") == 0x0A000002
    assert reg(path, "rdma_credit") == 0xFFFFFFFF and reg(path, "rdma_credit_port") == 4792
    ctrl = regmap.REGISTERS["rdma_ctrl"]
    v = reg(path, "rdma_ctrl")
    assert (ctrl.field("en").get(v), ctrl.field("flow_ctrl").get(v), ctrl.field("mtu").get(v)) == (
        1, 1, 2,
    )  # fmt: skip
    arp = gbe.get_arp_entries(3)[2]
    assert arp["mac"] == 0x0C42A1000014 and arp["valid"]
    gbe.rdma_credit(41)
    assert reg(path, "rdma_credit") == 41
    gbe.rdma_disconnect()
    assert ctrl.field("en").get(reg(path, "rdma_ctrl")) == 0


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("mtu", 1500, "mtu 1500"),
        ("qpn", 1 << 24, "qpn 16777216"),
        ("slot_size", 8, "slot_size 8"),
        ("chunks", 0, "chunks 0"),
        ("ip", "10.0.0.300", "300"),
        ("rkey", "5", "rkey must be an integer"),
    ],
)
def test_bad_parameters_name_the_value_and_write_nothing(
    board: tuple[FourHundredGbe, Path], key: str, value: object, match: str
) -> None:
    gbe, path = board
    with pytest.raises(ValueError, match=match):
        gbe.rdma_connect({**PARAMS, key: value})
    assert reg(path, "rdma_qpn") == 0 and reg(path, "rdma_ctrl") == 0
    with pytest.raises(ValueError, match="lack 'va'"):
        gbe.rdma_connect({k: v for k, v in PARAMS.items() if k != "va"})
