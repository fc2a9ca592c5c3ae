"""MAC/IP/port parsing against Python's ipaddress and hand-computed values."""

from __future__ import annotations

import ipaddress
import random

import pytest

from casperfpga_ext import addressing


def test_mac_forms() -> None:
    assert addressing.parse_mac("02:00:00:00:00:01") == 0x020000000001
    assert addressing.parse_mac("0C-42-A1-00-00-14") == 0x0C42A1000014
    assert addressing.parse_mac("0x0c42a1000014") == 0x0C42A1000014
    assert addressing.parse_mac(0x0C42A1000014) == 0x0C42A1000014
    assert addressing.format_mac(0x0C42A1000014) == "0c:42:a1:00:00:14"


@pytest.mark.parametrize(
    "bad",
    ["02:00:00:00:00", "02:00:00:00:00:0g", "02:00-00:00:00:01", -1, 1 << 48, 1.5, None, True],
)
def test_bad_mac_names_the_value(bad: object) -> None:
    with pytest.raises(ValueError, match="invalid MAC address " + repr(bad).replace(".", r"\.")):
        addressing.parse_mac(bad)  # type: ignore[arg-type]


def test_ip_matches_ipaddress() -> None:
    rng = random.Random(1)
    for _ in range(200):
        value = rng.getrandbits(32)
        text = str(ipaddress.IPv4Address(value))
        assert addressing.parse_ip(text) == value
        assert addressing.format_ip(value) == text


@pytest.mark.parametrize("bad", ["10.0.0", "10.0.0.256", "ten", -1, 1 << 32, None])
def test_bad_ip_names_the_value(bad: object) -> None:
    with pytest.raises(ValueError, match="invalid IPv4 address"):
        addressing.parse_ip(bad)  # type: ignore[arg-type]


def test_ports() -> None:
    assert addressing.parse_port(7148) == 7148
    assert addressing.parse_port("0") == 0
    for bad in (-1, 65536, "http", "1.5", None, True):
        with pytest.raises(ValueError, match="invalid UDP port"):
            addressing.parse_port(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("prefix", range(33))
def test_netmask_prefixes_match_ipaddress(prefix: int) -> None:
    want = int(ipaddress.IPv4Network(f"0.0.0.0/{prefix}").netmask)
    assert addressing.parse_netmask(f"/{prefix}") == want
    assert addressing.parse_netmask(str(prefix)) == want
    assert addressing.parse_netmask(str(ipaddress.IPv4Address(want))) == want


def test_netmask_rejects_holes() -> None:
    with pytest.raises(ValueError, match=r"255\.0\.255\.0"):
        addressing.parse_netmask("255.0.255.0")
    with pytest.raises(ValueError, match="33"):
        addressing.parse_netmask("/33")
