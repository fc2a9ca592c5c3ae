"""FourHundredGbe: the 400GbE core behind casperfpga's ``OneHundredGbe`` API.

A script written for casperfpga's ``OneHundredGbe`` (and its ``TenGbe``/``Gbe``/``Memory``
bases) runs unchanged: the same method names, argument order and defaults, the same
accepted inputs (``Mac``/``IpAddress`` objects, text, ints, NumPy integers, short ARP lists,
``0xffffffffffff`` for an empty ARP entry) and the same return types (``mac`` and
``ip_address`` are casperfpga's ``Mac``/``IpAddress`` when casperfpga is installed,
``addressing.Mac``/``IpAddress`` otherwise). What the 400GbE core cannot do (DHCP, a
board-side tap driver) raises an error saying why. ``casperfpga_ext/README.md`` lists every
method with its status.

Every register access goes through the generated register map; every configuration
write is read back, so a write that did not take (wrong address map, bus error, a core
held in reset) raises instead of leaving a silently misconfigured core.

``parent`` is what casperfpga passes: a ``CasperFpga`` (or ``casperfpga_ext.Fpga``, or
any object with casperfpga's ``read``/``blindwrite``); offsets are relative to the device.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from . import fhg_regmap as regmap
from . import rdma as _rdma
from .addressing import (
    MAC_MAX,
    AddressError,
    format_ip,
    format_mac,
    ip_object,
    mac_object,
    parse_ip,
    parse_mac,
    parse_netmask,
    parse_port,
)
from .tap import Tap
from .transport import WORD_BYTES

LOGGER = logging.getLogger(__name__)

ARP = regmap.REGIONS["arp_table"]
_ARP_VALID = next(f for f in ARP.entry_fields if f.name == "valid")
_ARP_MAC_HI = next(f for f in ARP.entry_fields if f.name == "mac_hi")
_ARP_MAC_LO = next(f for f in ARP.entry_fields if f.name == "mac_lo")
CPU_RX = regmap.REGIONS["cpu_rx_buf"]
CPU_TX = regmap.REGIONS["cpu_tx_buf"]
CPU_TX_MIN = 14  # an Ethernet header
# casperfpga's "no entry" MAC: print_arp_details(only_hits=True) skips it.
EMPTY_ARP_MAC = MAC_MAX
# What casperfpga's TenGbe.configure_core writes when gateway/subnet_mask are None.
DEFAULT_GATEWAY = 1
DEFAULT_SUBNET_MASK = 0xFFFFFF00

# casperfpga's counter names (Gbe.rx_okay/tx_okay check these, prefixed "<core>_") and
# the core's registers that count the same thing. A name maps to the sum of its registers.
CASPER_COUNTERS: dict[str, tuple[str, ...]] = {
    "txctr": ("tx_packet_counter",),
    "txvldctr": ("tx_valid_counter",),
    "txofctr": ("tx_overflow_counter",),
    "txfullctr": ("tx_afull_counter",),
    "txerrctr": ("tx_arp_miss", "tx_overflow"),
    "rxctr": ("rx_packet_counter",),
    "rxvldctr": ("rx_valid_counter",),
    "rxofctr": ("rx_overflow_counter",),
    "rxerrctr": ("rx_drop_fcs",),
    "rxbadctr": ("rx_bad_counter",),
}
_MAPPED = {r for regs in CASPER_COUNTERS.values() for r in regs}


class ReadBackError(OSError):
    """A value written to the core did not read back."""


class CheckCounter:
    """One counter of ``rx_okay``/``tx_okay`` (casperfpga's ``utils.CheckCounter``)."""

    def __init__(self, name: str, must_change: bool = True, required: bool = False) -> None:
        self.name, self.must_change, self.required = name, must_change, required
        self.data: int | None = None
        self.changed = False


def _verified_mask(reg: regmap.Register) -> int:
    """Bits that must read back as written: stored, software-writable, not pulses."""
    mask = 0
    for f in reg.fields:
        if f.sw == "rw" and f.reset is not None and not f.singlepulse:
            mask |= f.mask
    return mask


def _arp_mac(mac: Any) -> int | None:
    """An ARP entry's MAC; None for an empty entry (None or casperfpga's 0xffffffffffff)."""
    if mac is None:
        return None
    value = parse_mac(mac)
    return None if value == EMPTY_ARP_MAC else value


def arp_entry_words(mac: Any) -> tuple[int, int]:
    """The two words of one ARP entry; None or 0xffffffffffff give an empty entry."""
    value = _arp_mac(mac)
    if value is None:
        return 0, 0
    entry = _ARP_VALID.put(0, 1)
    entry = _ARP_MAC_HI.put(entry, value >> 32)
    entry = _ARP_MAC_LO.put(entry, value & 0xFFFFFFFF)
    return entry & 0xFFFFFFFF, entry >> 32


def _arp_index(key: Any) -> int:
    """An ARP table key: an index 0..255, or an IP address whose last octet is the index."""
    if isinstance(key, str) or hasattr(key, "ip_int"):
        return parse_ip(key) & (ARP.entries - 1)
    index = parse_ip(key)
    return index if index < ARP.entries else index & (ARP.entries - 1)


def _block_info(device_info: Mapping[str, Any] | None) -> dict[str, Any]:
    """The block's ``?meta`` parameters; the addresses in them must parse."""
    info = dict(device_info or {})
    for key, parse in (("fab_mac", parse_mac), ("fab_ip", parse_ip), ("fab_udp", parse_port)):
        if key in info and isinstance(info[key], str):
            try:
                parse(info[key])
            except AddressError as exc:
                raise ValueError(f"block parameter {key}: {exc}") from None
    return info


class _NotOnThisCore:
    """A OneHundredGbe class attribute that has no counterpart here: reading it raises
    AttributeError saying why (``hasattr`` is False), instead of a value that would
    address something else in this core's register map."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        raise AttributeError(f"{self.name}: {self.why}")


_INDIRECT_ARP = (
    "the 100GbE core's indirect ARP access register; the 400GbE core maps its ARP table "
    "directly at 0x1000 (use set_arp_table/set_single_arp_entry/get_arp_details)"
)


class FourHundredGbe:
    """One fhg_core instance: casperfpga's ``OneHundredGbe`` contract, plus extras.

    ``FourHundredGbe(parent, name, address, length_bytes, device_info)`` as casperfpga's
    ``Gbe``; casperfpga itself builds it with ``from_device_info``.
    """

    ADDR_ARP_WRITE_ENABLE = _NotOnThisCore(_INDIRECT_ARP)
    ADDR_ARP_READ_ENABLE = _NotOnThisCore(_INDIRECT_ARP)
    ADDR_ARP_WRITE_DATA = _NotOnThisCore(_INDIRECT_ARP)
    ADDR_ARP_WRITE_ADDR = _NotOnThisCore(_INDIRECT_ARP)
    ADDR_ARP_READ_ADDR = _NotOnThisCore(_INDIRECT_ARP)
    ADDR_ARP_READ_DATA = _NotOnThisCore(_INDIRECT_ARP)

    def __init__(
        self,
        parent: Any,
        name: str,
        address: int = 0,
        length_bytes: int = regmap.BLOCK_SIZE,
        device_info: Mapping[str, Any] | None = None,
    ) -> None:
        self.parent = parent
        self.name = name
        self.address = address
        self.length_bytes = length_bytes
        self.width_bits = 32
        self.memmap_compliant = True  # casperfpga: the harmonised 10/40/100GbE map
        self.fullname = f"{getattr(parent, 'host', '') or ''}:{name}"
        self.block_info = _block_info(device_info)
        self.core_details: dict[str, Any] | None = None
        self.snaps: dict[str, Any] = {"tx": None, "rx": None}
        self.registers: dict[str, list[str]] = self._core_counter_names()
        self.multicast_subscriptions: list[str] = []
        # casperfpga's TenGbe.memmap shape: name -> offset, size (bytes), "r"/"rw".
        self.memmap = {
            n: {"offset": r.offset, "size": r.width // 8, "rwflag": r.sw}
            for n, r in regmap.REGISTERS.items()
        }
        self.tap: Tap | None = None  # the software ARP/ICMP loop, once tap_start() ran

    @classmethod
    def from_device_info(
        cls,
        parent: Any,
        device_name: str,
        device_info: Mapping[str, Any],
        memorymap_dict: Mapping[str, Mapping[str, int]],
        **kwargs: Any,
    ) -> FourHundredGbe:
        """The constructor casperfpga calls for each block tagged ``xps:fourhundred_gbe``."""
        entry = memorymap_dict.get(device_name)
        if entry is None:
            raise RuntimeError(
                f"Could not find address or length for Gbe device {device_name} "
                "(the 400GbE block has no memory-mapped register in the design)"
            )
        return cls(parent, device_name, entry["address"], entry["bytes"], device_info)

    @property
    def meta(self) -> dict[str, Any]:
        """The block's parameters (casperfpga: ``block_info``)."""
        return self.block_info

    def __repr__(self) -> str:
        return f"{type(self).__name__}:{self.name}"

    def __str__(self) -> str:
        return f"{self.name}: MAC({self.mac}) IP({self.ip_address}) Port({self.port})"

    def process_device_info(self, device_info: Mapping[str, Any] | None) -> None:
        """Check the block's parameters (casperfpga: the fabric MAC/IP/port)."""
        self.block_info = _block_info(device_info)

    def post_create_update(self, raw_device_info: Mapping[str, Any]) -> None:
        """After casperfpga built every device: the design's own ``<core>_tx*``/``_rx*``
        software registers and ``<core>_txs_ss``/``_rxs_ss`` snapshots join this core's."""
        self.registers = self._core_counter_names()
        prefix = self.name + "_"
        for register in getattr(self.parent, "registers", None) or ():
            name = getattr(register, "name", "")
            if not name.startswith(prefix):
                continue
            short = name[len(prefix) :]
            for direction in ("tx", "rx"):
                listed = self.registers[direction]
                if short.startswith(direction) and not short.startswith(direction + "s_"):
                    listed.extend([name] if name not in listed else [])
        for snapshot in getattr(self.parent, "snapshots", None) or ():
            short = getattr(snapshot, "name", "")[len(prefix) :]
            if snapshot.name.startswith(prefix) and short in ("txs_ss", "rxs_ss"):
                self.snaps[short[:2]] = snapshot

    def setup(
        self, mac: Any, ipaddress: Any, port: Any, gateway: Any = None, subnet_mask: Any = None
    ) -> None:
        raise NotImplementedError(
            "setup() is no longer used by casperfpga's cores either: call configure_core()"
        )

    # ------------------------------------------------------------- raw register access
    def _read_words(self, offset: int, count: int) -> list[int]:
        data = self.parent.read(self.name, count * WORD_BYTES, offset)
        if len(data) != count * WORD_BYTES:
            raise OSError(f"{self.name}: read of {count} words at {offset:#x} got {len(data)} B")
        return [
            int.from_bytes(data[k : k + WORD_BYTES], "big") for k in range(0, len(data), WORD_BYTES)
        ]

    def _write_words(self, offset: int, words: Iterable[int]) -> None:
        data = b"".join((w & 0xFFFFFFFF).to_bytes(WORD_BYTES, "big") for w in words)
        self.parent.blindwrite(self.name, data, offset)

    def read_reg(self, name: str) -> int:
        """A register's value; a 64-bit one is read low word first (that read snapshots it)."""
        reg = regmap.REGISTERS[name]
        low = self._read_words(reg.offset, 1)[0]
        if reg.width == 32:
            return low
        high = self._read_words(reg.offset + WORD_BYTES, 1)[0]
        return (high << 32) | low

    def write_reg(self, name: str, value: int) -> None:
        """Write a 32-bit register and check that its stored bits read back."""
        reg = regmap.REGISTERS[name]
        if reg.width != 32 or "w" not in reg.sw:
            raise ValueError(f"register {name} is not a writable 32-bit register")
        if not 0 <= value <= 0xFFFFFFFF:
            raise ValueError(f"value {value!r} for register {name} is not a 32-bit word")
        self._write_words(reg.offset, [value])
        mask = _verified_mask(reg)
        got = self._read_words(reg.offset, 1)[0]
        if got & mask != value & mask:
            raise ReadBackError(
                f"{self.name}: register {name} ({reg.offset:#x}) wrote {value & mask:#010x}, "
                f"read back {got & mask:#010x}"
            )

    def read_field(self, reg_name: str, field_name: str) -> int:
        reg = regmap.REGISTERS[reg_name]
        return reg.field(field_name).get(self.read_reg(reg_name))

    def write_field(self, reg_name: str, field_name: str, value: int) -> None:
        reg = regmap.REGISTERS[reg_name]
        current = self.read_reg(reg_name)
        # Pulse bits read 0; keep them 0 so a read-modify-write never fires one.
        for f in reg.fields:
            if f.singlepulse:
                current = f.put(current, 0)
        self.write_reg(reg_name, reg.field(field_name).put(current, value))

    # ------------------------------------------------------------- casperfpga's Memory
    def length_in_words(self) -> int:
        return self.length_bytes // (self.width_bits // 8)

    def read_raw(self, **kwargs: Any) -> tuple[bytes, float]:
        """``(bytes, time)`` of the block; ``size`` (default: the register file, up to the
        ARP table) and ``offset`` (bytes, default 0) choose another span."""
        offset = int(kwargs.get("offset", 0))
        size = int(kwargs.get("size", ARP.offset - offset))
        return self.parent.read(self.name, size, offset), time.time()

    def read(self, **kwargs: Any) -> dict[str, Any]:
        """Every register by name, as casperfpga's ``Memory.read``: ``{'data': {name:
        value}, 'timestamp': t}`` (casperfpga's 10/100GbE cores have no fields to decode
        and raise here)."""
        stamp = time.time()
        return {"data": {n: self.read_reg(n) for n in regmap.REGISTERS}, "timestamp": stamp}

    def write(self, **kwargs: Any) -> None:
        """Write registers by name (``gbe.write(ttl=32, port=7148)``), each read back."""
        for name, value in kwargs.items():
            if name not in regmap.REGISTERS:
                raise ValueError(f"{self.name} has no register {name!r}")
            self.write_reg(name, int(value))

    def write_raw(self, uintvalue: int) -> None:
        raise RuntimeError(
            f"{self.name}: a 400GbE core is a register file, not one word; "
            "write registers by name (write(name=value)) or use configure_core()"
        )

    def field_names(self) -> list[str]:
        return list(regmap.REGISTERS)

    def field_get_by_name(self, field_name: str) -> regmap.Register:
        try:
            return regmap.REGISTERS[field_name]
        except KeyError:
            raise ValueError(f"{self.name} has no register {field_name!r}") from None

    def fields_string_get(self) -> str:
        return ", ".join(regmap.REGISTERS)

    def _fixed(self) -> None:
        raise RuntimeError(
            f"{self.name}: the core's registers are fixed by its register map (fhg_regmap)"
        )

    def fields_clear(self) -> None:
        self._fixed()

    def fields_add(self, fields: Any) -> None:
        self._fixed()

    def field_add(self, newfield: Any, auto_offset: bool = False) -> None:
        self._fixed()

    # ------------------------------------------------------------- configuration
    @property
    def mac(self) -> Any:
        """The core's MAC address (casperfpga's ``Mac``)."""
        return mac_object((self.read_reg("mac_hi") << 32) | self.read_reg("mac_lo"))

    @mac.setter
    def mac(self, value: Any) -> None:
        mac = parse_mac(value)
        self.write_reg("mac_hi", mac >> 32)
        self.write_reg("mac_lo", mac & 0xFFFFFFFF)

    @property
    def ip_address(self) -> Any:
        """The core's IPv4 address (casperfpga's ``IpAddress``)."""
        return ip_object(self.read_reg("ip"))

    @ip_address.setter
    def ip_address(self, value: Any) -> None:
        self.write_reg("ip", parse_ip(value))

    @property
    def port(self) -> int:
        return self.read_field("port", "port")

    @port.setter
    def port(self, value: Any) -> None:
        self.write_reg("port", parse_port(value))

    def configure_core(
        self, mac: Any, ip: Any, port: Any, gateway: Any = None, subnet_mask: Any = None
    ) -> None:
        """Set addresses, then enable the fabric and soft-reset the datapath.

        ``gateway``/``subnet_mask`` None write casperfpga's defaults (0.0.0.1,
        255.255.255.0).
        """
        # Parse everything first: a bad argument must not leave a half-written core.
        mac_v, ip_v, port_v = parse_mac(mac), parse_ip(ip), parse_port(port)
        gateway_v = DEFAULT_GATEWAY if gateway is None else parse_ip(gateway)
        mask_v = DEFAULT_SUBNET_MASK if subnet_mask is None else parse_netmask(subnet_mask)
        self.write_reg("mac_hi", mac_v >> 32)
        self.write_reg("mac_lo", mac_v & 0xFFFFFFFF)
        self.write_reg("ip", ip_v)
        self.write_reg("netmask", mask_v)
        self.write_reg("gateway", gateway_v)
        self.write_reg("port", port_v)
        self.fabric_enable()
        self.fabric_soft_reset_toggle()

    def fabric_enable(self) -> None:
        self.write_field("ctrl", "fabric_en", 1)

    def fabric_disable(self) -> None:
        self.write_field("ctrl", "fabric_en", 0)

    def fabric_soft_reset_toggle(self) -> None:
        """Pulse soft_rst: the datapath's FIFOs restart, the configuration stays."""
        self.write_field("ctrl", "soft_rst", 1)

    def set_ttl(self, ttl: int) -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 <= ttl <= 255:
            raise ValueError(f"invalid TTL {ttl!r}: outside 0..255")
        self.write_field("ttl", "ttl", ttl)

    def udp_checksum(self, enable: bool) -> None:
        self.write_field("ctrl", "udp_checksum_en", int(bool(enable)))

    def dhcp_start(self) -> None:
        raise NotImplementedError(
            f"{self.name}: the 400GbE core has no DHCP client (casperfpga runs DHCP in the "
            "board's tap driver, which the 400GbE board server does not have); give the "
            "address with configure_core()"
        )

    # ------------------------------------------------------------- multicast
    def multicast_receive(self, ip_str: Any, group_size: int) -> None:
        """Accept the ``group_size`` multicast groups from ``ip_str`` (mc_ip/mc_mask).

        The core filters in hardware: ``group_size`` must be a power of two and
        ``ip_str`` a multiple of it. No IGMP join is sent (the core has no IGMP); a
        snooping switch must be told by other means.
        """
        base = parse_ip(ip_str)
        if not 0xE0000000 <= base <= 0xEFFFFFFF:
            raise ValueError(f"{ip_str!r} is not an IPv4 multicast address")
        if isinstance(group_size, bool) or not 0 < int(group_size) <= 1 << 28:
            raise ValueError(f"multicast group size {group_size!r}: outside 1..2^28")
        size = int(group_size)
        if size & (size - 1) or base & (size - 1):
            raise ValueError(
                f"multicast groups {format_ip(base)} + {size}: the core matches under a mask, "
                "so the size must be a power of two and the base a multiple of it"
            )
        self.write_reg("mc_ip", base)
        self.write_reg("mc_mask", ~(size - 1) & 0xFFFFFFFF)
        text = str(ip_str)
        if text not in self.multicast_subscriptions:
            self.multicast_subscriptions.append(text)

    def multicast_remove(self, ip_str: Any) -> None:
        """Stop accepting the groups ``multicast_receive(ip_str, …)`` set (mc_mask = 0)."""
        base = parse_ip(ip_str)
        current = self.read_reg("mc_ip")
        if self.read_reg("mc_mask") == 0 or current != base:
            raise RuntimeError(
                f"{self.fullname}: not receiving multicast {format_ip(base)} "
                f"(mc_ip {format_ip(current)}, mc_mask {self.read_reg('mc_mask'):#010x})"
            )
        self.write_reg("mc_mask", 0)
        self.multicast_subscriptions = [
            s for s in self.multicast_subscriptions if parse_ip(s) != base
        ]

    # ------------------------------------------------------------- ARP table
    def set_single_arp_entry(self, ip: Any, mac: Any) -> None:
        """Entry for IP[7:0] of ``ip``; ``mac`` None or 0xffffffffffff empties it."""
        index = parse_ip(ip) & (ARP.entries - 1)
        words = arp_entry_words(mac)
        offset = ARP.offset + index * ARP.entry_bytes
        self._write_words(offset, words)
        self._check_arp(index, words, tuple(self._read_words(offset, 2)))

    def set_arp_table(self, macs: Any) -> None:
        """Write entries 0..len(macs)-1 (casperfpga's order: entry N for IP x.x.x.N),
        then read every word back.

        ``macs``: a sequence or array of MACs in any form (``Mac``, int, NumPy integer,
        text; None or 0xffffffffffff for an empty entry), up to 256; the entries after it
        are left as they are. A mapping from index (or IP address, whose last octet is the
        index) to MAC writes the whole table, unmapped entries empty.
        """
        if isinstance(macs, Mapping):
            table: list[Any] = [None] * ARP.entries
            for key, mac in macs.items():
                table[_arp_index(key)] = mac
        else:
            table = list(macs)
            if not 0 < len(table) <= ARP.entries:
                raise ValueError(f"ARP table takes 1..{ARP.entries} MACs, got {len(table)}")
        words = [w for mac in table for w in arp_entry_words(mac)]
        self._write_words(ARP.offset, words)
        got = self._read_words(ARP.offset, len(words))
        for index in range(len(table)):
            pair = slice(2 * index, 2 * index + 2)
            self._check_arp(index, tuple(words[pair]), tuple(got[pair]))

    def _check_arp(self, index: int, want: tuple[int, ...], got: tuple[int, ...]) -> None:
        if want != got:
            raise ReadBackError(
                f"{self.name}: ARP entry {index} wrote "
                f"{want[0]:#010x} {want[1]:#010x}, read back {got[0]:#010x} {got[1]:#010x}"
            )

    def get_arp_entries(self, N: int = ARP.entries) -> list[dict[str, Any]]:
        """The first N entries as read: index, valid flag and MAC (int and text)."""
        if isinstance(N, bool) or not 0 < int(N) <= ARP.entries:
            raise ValueError(f"invalid ARP entry count {N!r}: outside 1..{ARP.entries}")
        words = self._read_words(ARP.offset, 2 * int(N))
        entries = []
        for index in range(int(N)):
            entry = words[2 * index] | (words[2 * index + 1] << 32)
            mac = (_ARP_MAC_HI.get(entry) << 32) | _ARP_MAC_LO.get(entry)
            entries.append(
                {
                    "index": index,
                    "valid": bool(_ARP_VALID.get(entry)),
                    "mac": mac,
                    "mac_str": format_mac(mac),
                }
            )
        return entries

    def get_arp_details(self, N: int = ARP.entries) -> list[Any]:
        """The first N entries as casperfpga's ``Mac``; an empty entry is 0xffffffffffff."""
        return [
            mac_object(e["mac"] if e["valid"] else EMPTY_ARP_MAC) for e in self.get_arp_entries(N)
        ]

    def print_arp_details(self, refresh: bool = False, only_hits: bool = False) -> None:
        """The ARP table; ``only_hits`` skips empty entries."""
        if refresh or not self.core_details or "arp" not in self.core_details:
            self.get_gbe_core_details(read_arp=True)
        assert self.core_details is not None
        print("ARP Table: ")
        for index, mac in enumerate(self.core_details["arp"]):
            empty = int(mac) == EMPTY_ARP_MAC
            if not (only_hits and empty):
                shown = "(empty)" if empty else format_mac(mac)
                print(f"{self.name}: IP[7:0] {index:3d} -> {shown}")

    # ------------------------------------------------------------- status, details
    def get_gbe_core_details(
        self, read_arp: bool = False, read_cpu: bool = False, read_multicast: bool = False
    ) -> dict[str, Any]:
        """casperfpga's details dict (``ip``, ``mac``, ``gateway_ip``, ``subnet_mask``,
        ``fabric_port``, ``fabric_en``, ``multicast``, ``ip_prefix``; ``arp``; the CPU
        buffers), plus the 400GbE core's own (``core_type``, ``link_up``, ``ttl``,
        ``ctrl``); also kept in ``core_details``."""
        ctrl_reg = regmap.REGISTERS["ctrl"]
        ctrl = self.read_reg("ctrl")
        core_type = self.read_reg("core_type")
        link = self.read_reg("link_status")
        ip = self.read_reg("ip")
        mc_ip, mc_mask = self.read_reg("mc_ip"), self.read_reg("mc_mask")
        details: dict[str, Any] = {
            "ip_prefix": ".".join(format_ip(ip).split(".")[:3]),
            "ip": ip_object(ip),
            "subnet_mask": ip_object(self.read_reg("netmask")),
            "mac": mac_object((self.read_reg("mac_hi") << 32) | self.read_reg("mac_lo")),
            "gateway_ip": ip_object(self.read_reg("gateway")),
            "fabric_port": self.read_field("port", "port"),
            "fabric_en": bool(ctrl_reg.field("fabric_en").get(ctrl)),
            "multicast": {"base_ip": ip_object(mc_ip), "ip_mask": ip_object(mc_mask), "rx_ips": []},
            "name": self.name,
            "core_type": core_type,
            "speed_code": regmap.REGISTERS["core_type"].field("speed").get(core_type),
            "ttl": self.read_field("ttl", "ttl"),
            "link_up": bool(regmap.REGISTERS["link_status"].field("link_up").get(link)),
            "ctrl": {f.name: f.get(ctrl) for f in ctrl_reg.fields if not f.singlepulse},
        }
        if read_multicast and mc_mask:
            # Every address the mask lets through (mc_mask 0 disables reception).
            free = [b for b in range(32) if not mc_mask >> b & 1]
            if len(free) > 16:
                raise ValueError(
                    f"{self.name}: mc_mask {mc_mask:#010x} accepts 2^{len(free)} groups; "
                    "too many to list"
                )
            base = mc_ip & mc_mask
            for n in range(1 << len(free)):
                ip_n = base | sum(1 << b for k, b in enumerate(free) if n >> k & 1)
                details["multicast"]["rx_ips"].append(ip_object(ip_n))
        if read_arp:
            details["arp"] = self.get_arp_details()
        if read_cpu:
            details.update(self.get_cpu_details())
        self.core_details = details
        return details

    def print_gbe_core_details(
        self, arp: bool = False, cpu: bool = False, refresh: bool = True
    ) -> None:
        if refresh or self.core_details is None:
            self.get_gbe_core_details(read_arp=arp, read_cpu=cpu)
        d = self.core_details
        assert d is not None
        print("------------------------")
        print(f"{self.fullname} configuration: 400GbE core, type {d['core_type']:#010x}")
        print(f"  MAC {format_mac(d['mac'])}  IP {format_ip(d['ip'])}  port {d['fabric_port']}")
        print(f"  gateway {format_ip(d['gateway_ip'])}  netmask {format_ip(d['subnet_mask'])}")
        print(f"  fabric_en {int(d['fabric_en'])}  link_up {int(d['link_up'])}  TTL {d['ttl']}")
        mc = d["multicast"]
        print(f"  multicast base_ip {mc['base_ip']}  ip_mask {mc['ip_mask']}")
        # The details were just read (refresh) or are wanted as they are: no second read.
        if arp:
            self.print_arp_details(refresh=False, only_hits=True)
        if cpu:
            self.print_cpu_details(refresh=False)

    def get_cpu_details(self, port_dump: Any = None) -> dict[str, Any]:
        """The CPU buffers, casperfpga's shape: ``cpu_tx``/``cpu_rx`` map a byte offset to
        8 bytes; ``cpu_rx_buf_unack_data`` is the length of the frame waiting (bytes).

        ``port_dump``: the block's bytes from offset 0 (at least to the end of the CPU
        RX buffer) instead of reading the core. The TX buffer is shown up to the length
        last sent, the RX buffer up to the waiting frame's length plus one row.
        """
        if port_dump is None:
            tx_len = self.read_field("cpu_tx_len", "len")
            rx_len = self.read_field("cpu_rx_len", "len")
            tx = self.parent.read(self.name, _rows(tx_len), CPU_TX.offset)
            rx = self.parent.read(self.name, _rows(rx_len + 8), CPU_RX.offset)
        else:
            dump = bytes(port_dump)
            if len(dump) < CPU_RX.offset + CPU_RX.size:
                raise ValueError(
                    f"port_dump of {len(dump)} bytes does not reach the CPU RX buffer's end "
                    f"({CPU_RX.offset + CPU_RX.size:#x})"
                )

            def word(reg: str) -> int:
                at = regmap.REGISTERS[reg].offset
                return int.from_bytes(dump[at : at + 4], "big") & 0xFFFF

            tx_len, rx_len = word("cpu_tx_len"), word("cpu_rx_len")
            tx = dump[CPU_TX.offset : CPU_TX.offset + _rows(tx_len)]
            rx = dump[CPU_RX.offset : CPU_RX.offset + _rows(rx_len + 8)]
        return {
            "cpu_tx": {k: list(tx[k : k + 8]) for k in range(0, len(tx), 8)},
            "cpu_rx_buf_unack_data": rx_len,
            "cpu_rx": {k: list(rx[k : k + 8]) for k in range(0, len(rx), 8)},
        }

    def print_cpu_details(self, refresh: bool = False) -> None:
        if refresh or not self.core_details or "cpu_rx" not in self.core_details:
            self.get_gbe_core_details(read_cpu=True)
        d = self.core_details
        assert d is not None
        print(f"CPU TX Interface (at offset {CPU_TX.offset} bytes):")
        print("Byte offset: Contents (Hex)")
        for offset, row in d["cpu_tx"].items():
            print(f"{offset:04d}:    " + " ".join(f"{b:02x}" for b in row))
        print("------------------------")
        print(f"CPU RX Interface (at offset {CPU_RX.offset} bytes):")
        print(f"CPU packet RX buffer unacknowledged data: {d['cpu_rx_buf_unack_data']}")
        print("Byte offset: Contents (Hex)")
        for offset, row in d["cpu_rx"].items():
            print(f"{offset:04d}:    " + " ".join(f"{b:02x}" for b in row))
        print("------------------------")

    def link_status(self) -> dict[str, int]:
        reg = regmap.REGISTERS["link_status"]
        value = self.read_reg("link_status")
        status = {f.name: f.get(value) for f in reg.fields}
        status["retries"] = self.read_reg("link_retries")
        status["rx_phy_status"] = self.read_reg("rx_phy_status")
        return status

    # ------------------------------------------------------------- counters
    def _core_counter_names(self) -> dict[str, list[str]]:
        names: dict[str, list[str]] = {"tx": [], "rx": []}
        for short in CASPER_COUNTERS:
            names[short[:2]].append(f"{self.name}_{short}")
        for reg in regmap.COUNTERS:
            if reg not in _MAPPED and reg[:3] in ("tx_", "rx_"):
                names[reg[:2]].append(f"{self.name}_{reg}")
        return names

    def read_core_counters(self, prefix: str = "") -> dict[str, int]:
        """The core's counters (those whose name starts with ``prefix``) by register name."""
        return {n: self.read_reg(n) for n in regmap.COUNTERS if n.startswith(prefix)}

    def _named_counters(self, direction: str, core: Mapping[str, int]) -> dict[str, int]:
        out: dict[str, int] = {}
        prefix = self.name + "_"
        for name in self.registers[direction]:
            short = name[len(prefix) :]
            if short in CASPER_COUNTERS:
                out[name] = sum(core[r] for r in CASPER_COUNTERS[short])
            elif short in core:
                out[name] = core[short]
            else:  # a design's own software register under this core's name
                out[name] = self.parent.memory_devices[name].read()["data"]["reg"]
        return out

    def read_tx_counters(self) -> dict[str, int]:
        """TX counters under casperfpga's names (``<core>_txctr`` …), then the core's
        other TX counters as ``<core>_<register>``."""
        return self._named_counters("tx", self.read_core_counters("tx_"))

    def read_rx_counters(self) -> dict[str, int]:
        """RX counters under casperfpga's names (``<core>_rxctr`` …), then the core's
        other RX counters as ``<core>_<register>``."""
        return self._named_counters("rx", self.read_core_counters("rx_"))

    def read_counters(self) -> dict[str, int]:
        core = self.read_core_counters()
        return {**self._named_counters("tx", core), **self._named_counters("rx", core)}

    def rx_drop_counters(self) -> dict[str, int]:
        return self.read_core_counters("rx_drop_")

    def reset_counters(self) -> None:
        self.write_field("count_reset", "clear", 1)

    def _okay(self, direction: str, wait_time: float, checks: int) -> bool:
        if checks < 2:
            raise RuntimeError("Cannot check less often than twice?")
        n = self.name
        counters = [CheckCounter(f"{n}_{direction}ctr", True, True)]
        for short in ("fullctr", "ofctr", "errctr", "badctr"):
            counters.append(CheckCounter(f"{n}_{direction}{short}", False))
        counters.append(CheckCounter(f"{n}_{direction}vldctr"))
        read = self.read_tx_counters if direction == "tx" else self.read_rx_counters
        first = read()
        counters = [c for c in counters if c.name in first]
        for c in counters:
            c.data = first[c.name]
        for _ in range(checks - 1):
            time.sleep(wait_time)
            now = read()
            for c in counters:
                if now[c.name] == c.data:
                    continue
                if not c.must_change:
                    LOGGER.error(
                        "%s: %s changing: %d > %d", self.fullname, c.name, c.data, now[c.name]
                    )
                    return False
                c.changed = True
        for c in counters:
            if c.must_change and not c.changed:
                LOGGER.error("%s: %s is not changing: %d", self.fullname, c.name, c.data)
                return False
        return True

    def rx_okay(self, wait_time: float = 0.2, checks: int = 10) -> bool:
        """Receiving: ``<core>_rxctr``/``rxvldctr`` moving, error counters still."""
        return self._okay("rx", wait_time, checks)

    def tx_okay(self, wait_time: float = 0.2, checks: int = 10) -> bool:
        """Transmitting: ``<core>_txctr``/``txvldctr`` moving, error counters still."""
        return self._okay("tx", wait_time, checks)

    def _snap(self, direction: str) -> Any:
        snap = self.snaps.get(direction)
        if snap is None:
            raise RuntimeError(
                f"{self.fullname}: the design has no {self.name}_{direction}s_ss snapshot "
                "(the 400GbE block has no built-in snapshot; add one to the design)"
            )
        return snap.read(timeout=10)["data"]

    def read_txsnap(self) -> Any:
        return self._snap("tx")

    def read_rxsnap(self) -> Any:
        return self._snap("rx")

    # ------------------------------------------------------------- CPU frame buffers
    def read_cpu_frame(self) -> bytes | None:
        """The frame waiting in the CPU RX buffer, which is then released; None if none."""
        length = self.read_field("cpu_rx_len", "len")
        if length == 0:
            return None
        if length > CPU_RX.size:
            raise OSError(f"{self.name}: cpu_rx_len {length} exceeds the {CPU_RX.size}-B buffer")
        data = self.parent.read(self.name, -(-length // WORD_BYTES) * WORD_BYTES, CPU_RX.offset)
        # The acknowledge clears cpu_rx_len at once, so the next poll never sees this frame.
        ack = regmap.REGISTERS["cpu_rx_ack"]
        self._write_words(ack.offset, [ack.field("ack").put(0, 1)])
        return data[:length]

    def send_cpu_frame(self, frame: bytes, timeout: float = 1.0) -> None:
        """Send one frame (Ethernet header on, no FCS) from the CPU TX buffer.

        Waits up to ``timeout`` seconds for the previous CPU frame to leave
        (``status.cpu_tx_busy``); frames shorter than 60 bytes are padded by the core.
        """
        if not CPU_TX_MIN <= len(frame) <= CPU_TX.size:
            raise ValueError(
                f"CPU frame of {len(frame)} bytes: outside {CPU_TX_MIN}..{CPU_TX.size}"
            )
        if not self.read_field("ctrl", "cpu_tx_en"):
            raise OSError(f"{self.name}: ctrl.cpu_tx_en is 0, the core would not send the frame")
        deadline = time.monotonic() + timeout
        while self.read_field("status", "cpu_tx_busy"):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.name}: CPU TX buffer still busy after {timeout:g} s "
                    "(is the link up and the MAC taking frames?)"
                )
        padded = frame + bytes(-len(frame) % WORD_BYTES)
        self.parent.blindwrite(self.name, padded, CPU_TX.offset)
        self.write_reg("cpu_tx_len", len(frame))

    # ------------------------------------------------------------- software ARP/ICMP
    def tap_start(
        self,
        restart: bool = False,
        hardware_arp: bool | None = None,
        arp: bool = True,
        icmp: bool = True,
        interval: float = 0.01,
    ) -> Tap:
        """Answer ARP and ICMP echo in software from a background thread (``tap.Tap``).

        casperfpga asks the board's tap driver; for the 400GbE core the loop runs here, in
        the client, through the core's CPU buffers. Sets ``ctrl.cpu_rx_en``/``cpu_tx_en``;
        ``hardware_arp`` False also turns the hardware ARP responder off, so that ARP is
        answered here. A running tap is kept unless ``restart``.
        """
        current = self.tap
        if current is not None and current.running:
            if not restart:
                return current
            current.stop()
        tap = Tap(self, arp=arp, icmp=icmp, interval=interval)
        tap.enable(hardware_arp)
        tap.start()
        self.tap = tap
        return tap

    def tap_stop(self) -> None:
        """Stop the background loop; raises ``tap.TapError`` if it had stopped on an error."""
        if self.tap is not None:
            self.tap.stop()

    def tap_running(self) -> bool:
        return self.tap is not None and self.tap.running

    def tap_info(self) -> dict[str, str]:
        """casperfpga's shape: ``{'name': …, 'ip': …}``, both empty when no tap runs."""
        if not self.tap_running():
            return {"name": "", "ip": ""}
        return {"name": self.name, "ip": str(self.ip_address)}

    def tap_arp_reload(self) -> None:
        """Nothing to reload: the tap reads the core's MAC and IP for every frame."""

    # ------------------------------------------------------------- RDMA mode (rdma.py)
    def rdma_connect(self, params: Any, flow_control: bool = True) -> None:
        """Send the user port's datagrams into a receiver's chunk ring (the ``rdma`` source's
        ``Capture.rdma_params``) as RoCEv2 RDMA WRITEs; restarts the ring at datagram 0."""
        _rdma.connect(self, params, flow_control)

    def rdma_disconnect(self) -> None:
        """Back to UDP datagrams."""
        self.write_field("rdma_ctrl", "en", 0)

    def rdma_credit(self, chunk: int) -> None:
        """The consumer released chunk ``chunk`` (and all before it): the core may write
        the ring place it held again. Credit datagrams do the same without software."""
        self.write_reg("rdma_credit", _rdma._int("chunk", chunk, 0, 0xFFFFFFFF))

    def rdma_status(self) -> dict[str, int]:
        """Next PSN, current chunk, credit and the RDMA counters."""
        return _rdma.status(self)


def _rows(length: int) -> int:
    """``length`` bytes rounded up to whole 8-byte rows (at least one)."""
    return max(8, -(-length // 8) * 8)
