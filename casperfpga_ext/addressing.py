"""MAC, IPv4 and UDP port values in the forms casperfpga users write them.

Each parser accepts an int or the usual text form and returns an int; anything else
raises ValueError naming the offending value.
"""

from __future__ import annotations

import ipaddress
import re

_MAC_TEXT = re.compile(r"^[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}$")


def parse_mac(value: int | str) -> int:
    """'02:00:00:00:00:01', '02-00-…', '0x020000000001' or an int → 48-bit int."""
    if isinstance(value, bool):
        raise ValueError(f"invalid MAC address {value!r}: not an integer or text")
    if isinstance(value, int):
        if not 0 <= value < 1 << 48:
            raise ValueError(f"invalid MAC address {value!r}: outside 0..2^48-1")
        return value
    if isinstance(value, str):
        text = value.strip()
        if _MAC_TEXT.match(text):
            return int(re.sub(r"[:-]", "", text), 16)
        if re.fullmatch(r"0[xX][0-9A-Fa-f]{1,12}", text):
            return int(text, 16)
        raise ValueError(f"invalid MAC address {value!r}: expected aa:bb:cc:dd:ee:ff")
    raise ValueError(f"invalid MAC address {value!r}: not an integer or text")


def format_mac(value: int) -> str:
    value = parse_mac(value)
    return ":".join(f"{(value >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def parse_ip(value: int | str) -> int:
    """'10.0.0.1' or an int → 32-bit int."""
    if isinstance(value, bool):
        raise ValueError(f"invalid IPv4 address {value!r}: not an integer or text")
    if isinstance(value, int):
        if not 0 <= value < 1 << 32:
            raise ValueError(f"invalid IPv4 address {value!r}: outside 0..2^32-1")
        return value
    if isinstance(value, str):
        try:
            return int(ipaddress.IPv4Address(value.strip()))
        except ipaddress.AddressValueError as exc:
            raise ValueError(f"invalid IPv4 address {value!r}: {exc}") from None
    raise ValueError(f"invalid IPv4 address {value!r}: not an integer or text")


def format_ip(value: int) -> str:
    return str(ipaddress.IPv4Address(parse_ip(value)))


def parse_port(value: int | str) -> int:
    """A UDP port, 0..65535, as int or decimal text."""
    if isinstance(value, bool):
        raise ValueError(f"invalid UDP port {value!r}")
    if isinstance(value, str):
        if not value.strip().isdigit():
            raise ValueError(f"invalid UDP port {value!r}: not a decimal number")
        value = int(value.strip())
    if not isinstance(value, int) or not 0 <= value <= 0xFFFF:
        raise ValueError(f"invalid UDP port {value!r}: outside 0..65535")
    return value


def parse_netmask(value: int | str) -> int:
    """A contiguous netmask: '255.255.255.0', a prefix as text ('/24', '24'), or an int."""
    if isinstance(value, str) and value.strip().lstrip("/").isdigit():
        value = int(value.strip().lstrip("/"))
        if not 0 <= value <= 32:
            raise ValueError(f"invalid netmask {value!r}: prefix length outside 0..32")
        return (0xFFFFFFFF << (32 - value)) & 0xFFFFFFFF
    mask = parse_ip(value)
    inverted = ~mask & 0xFFFFFFFF
    if inverted & (inverted + 1):
        raise ValueError(f"invalid netmask {value!r}: ones are not contiguous")
    return mask
