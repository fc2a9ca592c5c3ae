"""MAC/IP/port parsing against Python's ipaddress and hand-computed values."""

from __future__ import annotations

import ipaddress
import random
import struct

import numpy as np
import pytest

from casperfpga_ext import addressing


def test_mac_forms() -> None:
    assert addressing.parse_mac("02:00:00:00:00:01") == 0x020000000001
    assert addressing.parse_mac("0C-42-A1-00-00-14") == 0x0C42A1000014
    assert addressing.parse_mac("0x0c42a1000014") == 0x0C42A1000014
    assert addressing.parse_mac(0x0C42A1000014) == 0x0C42A1000014
    assert addressing.format_mac(0x0C42A1000014) == "0c:42:a1:00:00:14"


# The forms each earlier parser took (the yellow block's mask values, casperfpga's Mac,
# the verification models'): one parser now takes them all.
@pytest.mark.parametrize(
    "form",
    [
        "02:00:0a:00:00:0a",
        "02-00-0A-00-00-0A",
        "02:00-0a:00-00:0a",  # the mask's separators, mixed
        "2:0:a:0:0:a",  # casperfpga's Mac: one hex digit per octet
        "'02:00:0a:00:00:0a'",  # MATLAB quotes
        "hex2dec('02000a00000a')",
        " hex2dec( '02000A00000A' ) ",
        "0x02000a00000a",
        "2199191027722",  # decimal text (casperfpga's Mac('…') without colons, the mask)
        2199191027722,
        np.uint64(2199191027722),
        np.int64(2199191027722),
        addressing.Mac(2199191027722),
    ],
)
def test_every_mac_form(form: object) -> None:
    assert addressing.parse_mac(form) == 0x02000A00000A
    assert addressing.Mac(form).mac_str == "02:00:0A:00:00:0A"  # casperfpga's mac2str


@pytest.mark.parametrize(
    "form",
    ["10.0.0.1", "'10.0.0.1'", " 10.0.0.1 ", "167772161", 167772161, np.uint32(167772161),
     ipaddress.IPv4Address("10.0.0.1"), addressing.IpAddress("10.0.0.1")],
)  # fmt: skip
def test_every_ip_form(form: object) -> None:
    assert addressing.parse_ip(form) == int(ipaddress.IPv4Address("10.0.0.1"))
    assert addressing.IpAddress(form).ip_str == "10.0.0.1"


def test_value_objects_compare_like_casperfpgas() -> None:
    mac, ip = addressing.Mac("02:00:0a:00:00:0a"), addressing.IpAddress("10.0.0.1")
    assert mac == 0x02000A00000A and mac == "02:00:0a:00:00:0a" and int(mac) == 0x02000A00000A
    assert ip == "10.0.0.1" and ip == 0x0A000001 and str(ip) == "10.0.0.1"
    assert mac.packed() == struct.pack(">Q", 0x02000A00000A)
    assert ip.packed() == ipaddress.IPv4Address("10.0.0.1").packed
    assert addressing.IpAddress("239.1.2.3").is_multicast()


def test_range_and_syntax_errors_are_told_apart() -> None:
    with pytest.raises(addressing.AddressError) as err:
        addressing.parse_mac("0x1000000000000")
    assert err.value.kind == "range"
    with pytest.raises(addressing.AddressError) as err:
        addressing.parse_mac("hex2dec(02000a00000a)")
    assert err.value.kind == "syntax"


@pytest.mark.parametrize(
    "bad",
    ["02:00:00:00:00", "02:00:00:00:00:0g", "02:00:00:00:00:100", -1, 1 << 48, 1.5, None, True],
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
