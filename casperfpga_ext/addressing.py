"""MAC, IPv4 and UDP port values in every form casper400g's users write them: the one parser.

The control library, the yellow block's mask parameters and the verification models all
parse addresses here, so a value accepted in one place is accepted everywhere.

MAC (``parse_mac``): an integer (``int``, a NumPy integer or anything with
``__index__``; not ``bool``), a casperfpga ``Mac`` (or anything with ``mac_int``), or
text: ``aa:bb:cc:dd:ee:ff`` or with ``-`` (one or two hex digits per octet, casperfpga's
``Mac`` accepts ``2:0:a:0:0:a``), ``0x``-hex, decimal (casperfpga's ``Mac('…')`` without
colons, and the Simulink mask), MATLAB's ``hex2dec('02000a00000a')``; text may be wrapped
in one pair of MATLAB quotes.

IPv4 (``parse_ip``): an integer, an ``ipaddress.IPv4Address``, a casperfpga ``IpAddress``
(anything with ``ip_int``), or text: dotted quad or decimal, optionally quoted. Host names
are not resolved (casperfpga's ``IpAddress`` would look them up in DNS; a configuration
value that changes with DNS is refused instead).

Every parser returns an int and raises ``AddressError`` (a ``ValueError``) naming the value.
``Mac`` and ``IpAddress`` are casperfpga-like value objects for code without casperfpga;
``mac_object``/``ip_object`` return casperfpga's own classes when casperfpga is importable.

This module needs only the standard library and runs on Python 3.8 and later: the
mlib_devel overlay carries a copy of it (``jasper_library/yellow_blocks/
fourhundred_gbe_addressing.py``, written and checked by ``python -m casper400g_dev regs``).
"""

from __future__ import annotations

import ipaddress
import operator
import re
from typing import Any

MAC_BITS = 48
MAC_MAX = (1 << MAC_BITS) - 1
IP_MAX = 0xFFFFFFFF

_MAC_OCTETS = re.compile(r"[0-9A-Fa-f]{1,2}(?:[:-][0-9A-Fa-f]{1,2}){5}")
_HEX2DEC = re.compile(r"hex2dec\(\s*'([0-9A-Fa-f]+)'\s*\)")
_HEX = re.compile(r"0[xX][0-9A-Fa-f]+")
_DECIMAL = re.compile(r"-?[0-9]+")


class AddressError(ValueError):
    """A value that is not an address; ``kind`` is ``"syntax"`` or ``"range"``."""

    def __init__(self, what: str, value: object, reason: str, kind: str) -> None:
        super().__init__(f"invalid {what} {value!r}: {reason}")
        self.what, self.value, self.reason, self.kind = what, value, reason, kind


def _integer(value: object) -> int | None:
    """``value`` as an int when it is an integer type (NumPy's too), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (str, bytes, float)):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def strip_quotes(text: str) -> str:
    """Whitespace and one pair of MATLAB quotes (``'10.0.0.1'``) removed."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        text = text[1:-1].strip()
    return text


def _int_text(text: str) -> int | None:
    """Decimal or ``0x``-hex integer text."""
    if _DECIMAL.fullmatch(text):
        return int(text, 10)
    if _HEX.fullmatch(text):
        return int(text, 16)
    return None


def parse_mac(value: Any) -> int:
    """A MAC address in any of the module's forms → 48-bit int."""
    what = "MAC address"
    mac = _integer(value)
    if mac is None and not isinstance(value, (str, bool)) and hasattr(value, "mac_int"):
        mac = _integer(value.mac_int)
    if mac is None:
        if not isinstance(value, str):
            raise AddressError(what, value, "not an integer, text or Mac", "syntax")
        text = strip_quotes(value)
        call = _HEX2DEC.fullmatch(text)
        if call:
            mac = int(call.group(1), 16)
        elif _MAC_OCTETS.fullmatch(text):
            mac = int("".join(f"{int(o, 16):02x}" for o in re.split(r"[:-]", text)), 16)
        else:
            mac = _int_text(text)
            if mac is None:
                raise AddressError(what, value, "expected aa:bb:cc:dd:ee:ff", "syntax")
    if not 0 <= mac <= MAC_MAX:
        raise AddressError(what, value, "outside 0..2^48-1", "range")
    return mac


def format_mac(value: Any) -> str:
    """``aa:bb:cc:dd:ee:ff`` (lower case)."""
    mac = parse_mac(value)
    return ":".join(f"{(mac >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def parse_ip(value: Any) -> int:
    """An IPv4 address in any of the module's forms → 32-bit int."""
    what = "IPv4 address"
    ip = _integer(value)
    if ip is None and isinstance(value, ipaddress.IPv4Address):
        ip = int(value)
    if ip is None and not isinstance(value, (str, bool)) and hasattr(value, "ip_int"):
        ip = _integer(value.ip_int)
    if ip is None:
        if not isinstance(value, str):
            raise AddressError(what, value, "not an integer, text or IpAddress", "syntax")
        text = strip_quotes(value)
        if _DECIMAL.fullmatch(text):
            ip = int(text)
        else:
            try:
                ip = int(ipaddress.IPv4Address(text))
            except ipaddress.AddressValueError as exc:
                raise AddressError(what, value, str(exc), "syntax") from None
    if not 0 <= ip <= IP_MAX:
        raise AddressError(what, value, "outside 0..2^32-1", "range")
    return ip


def format_ip(value: Any) -> str:
    return str(ipaddress.IPv4Address(parse_ip(value)))


def parse_port(value: Any) -> int:
    """A UDP port, 0..65535: an integer (NumPy's too) or decimal text."""
    port = _integer(value)
    if port is None and isinstance(value, str) and value.strip().isdigit():
        port = int(value.strip())
    if port is None:
        raise AddressError("UDP port", value, "not a decimal number", "syntax")
    if not 0 <= port <= 0xFFFF:
        raise AddressError("UDP port", value, "outside 0..65535", "range")
    return port


def parse_netmask(value: Any) -> int:
    """A contiguous netmask: an address form, or a prefix length as text ('/24', '24')."""
    if isinstance(value, str) and value.strip().lstrip("/").isdigit():
        prefix = int(value.strip().lstrip("/"))
        if not 0 <= prefix <= 32:
            raise AddressError("netmask", prefix, "prefix length outside 0..32", "range")
        return (IP_MAX << (32 - prefix)) & IP_MAX
    mask = parse_ip(value)
    inverted = ~mask & IP_MAX
    if inverted & (inverted + 1):
        raise AddressError("netmask", value, "ones are not contiguous", "syntax")
    return mask


class Mac:
    """A MAC address with casperfpga's ``Mac`` interface (``mac_int``, ``mac_str``, …)."""

    def __init__(self, mac: Any) -> None:
        self.mac_int = parse_mac(mac)
        self.mac_str = self.mac2str(self.mac_int)

    @staticmethod
    def mac2str(mac: int) -> str:
        return ":".join(f"{(int(mac) >> s) & 0xFF:02X}" for s in range(40, -8, -8))

    @staticmethod
    def str2mac(mac_str: str) -> int:
        return parse_mac(mac_str)

    def packed(self) -> bytes:
        return self.mac_int.to_bytes(8, "big")

    def __int__(self) -> int:
        return self.mac_int

    def __index__(self) -> int:
        return self.mac_int

    def __str__(self) -> str:
        return self.mac_str

    def __repr__(self) -> str:
        return f"Mac({self.mac_str})"

    def __eq__(self, other: object) -> bool:
        try:
            return self.mac_int == parse_mac(other)
        except AddressError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.mac_int)


class IpAddress:
    """An IPv4 address with casperfpga's ``IpAddress`` interface (``ip_int``, ``ip_str``, …)."""

    def __init__(self, ip: Any) -> None:
        self.ip_int = parse_ip(ip)
        self.ip_str = format_ip(self.ip_int)

    @staticmethod
    def ip2str(ip_addr: int) -> str:
        return format_ip(ip_addr)

    @staticmethod
    def str2ip(ip_str: str) -> int:
        return parse_ip(ip_str)

    def packed(self) -> bytes:
        return self.ip_int.to_bytes(4, "big")

    def is_multicast(self) -> bool:
        # casperfpga's test: the administratively scoped block only.
        return (self.ip_int >> 24) == 239

    def __int__(self) -> int:
        return self.ip_int

    def __index__(self) -> int:
        return self.ip_int

    def __str__(self) -> str:
        return self.ip_str

    def __repr__(self) -> str:
        return f"IpAddress({self.ip_str})"

    def __eq__(self, other: object) -> bool:
        try:
            return self.ip_int == parse_ip(other)
        except AddressError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.ip_int)

    def __lt__(self, other: object) -> bool:
        return self.ip_int < parse_ip(other)

    def __gt__(self, other: object) -> bool:
        return self.ip_int > parse_ip(other)


_NETWORK: list[Any] = []  # casperfpga's network module (or None), once looked up


def _casperfpga_network() -> Any:
    """casperfpga's ``network`` module, or None when casperfpga cannot be imported."""
    if not _NETWORK:
        try:
            from casperfpga import network  # type: ignore[import-not-found]
        except ImportError:
            network = None
        _NETWORK.append(network)
    return _NETWORK[0]


def mac_object(value: Any) -> Any:
    """casperfpga's ``Mac`` for ``value`` when casperfpga is installed, else ours."""
    network = _casperfpga_network()
    mac = parse_mac(value)
    return network.Mac(mac) if network is not None else Mac(mac)


def ip_object(value: Any) -> Any:
    """casperfpga's ``IpAddress`` for ``value`` when casperfpga is installed, else ours."""
    network = _casperfpga_network()
    ip = parse_ip(value)
    return network.IpAddress(ip) if network is not None else IpAddress(ip)
