"""FourHundredGbe: the 400GbE core with casperfpga's Gbe method names and semantics.

Every register access goes through the generated register map; every configuration
write is read back, so a write that did not take (wrong address map, bus error, a core
held in reset) raises instead of leaving a silently misconfigured core.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import fhg_regmap as regmap
from .addressing import format_ip, format_mac, parse_ip, parse_mac, parse_netmask, parse_port
from .transport import WORD_BYTES, Transport

if TYPE_CHECKING:
    from .tap import Tap

ARP = regmap.REGIONS["arp_table"]
_ARP_VALID = next(f for f in ARP.entry_fields if f.name == "valid")
_ARP_MAC_HI = next(f for f in ARP.entry_fields if f.name == "mac_hi")
_ARP_MAC_LO = next(f for f in ARP.entry_fields if f.name == "mac_lo")
CPU_RX = regmap.REGIONS["cpu_rx_buf"]
CPU_TX = regmap.REGIONS["cpu_tx_buf"]
CPU_TX_MIN = 14  # an Ethernet header


class ReadBackError(OSError):
    """A value written to the core did not read back."""


def _verified_mask(reg: regmap.Register) -> int:
    """Bits that must read back as written: stored, software-writable, not pulses."""
    mask = 0
    for f in reg.fields:
        if f.sw == "rw" and f.reset is not None and not f.singlepulse:
            mask |= f.mask
    return mask


def arp_entry_words(mac: int | str | None) -> tuple[int, int]:
    """The two words of one ARP entry; None gives an invalid (empty) entry."""
    if mac is None:
        return 0, 0
    value = parse_mac(mac)
    entry = _ARP_VALID.put(0, 1)
    entry = _ARP_MAC_HI.put(entry, value >> 32)
    entry = _ARP_MAC_LO.put(entry, value & 0xFFFFFFFF)
    return entry & 0xFFFFFFFF, entry >> 32


def _arp_index(key: int | str) -> int:
    """An ARP table key: an index 0..255, or an IP address whose last octet is the index."""
    if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < ARP.entries:
        return key
    return parse_ip(key) & (ARP.entries - 1)


class FourHundredGbe:
    """One fhg_core instance, reached as device ``device_name`` of ``parent_transport``.

    Offsets passed to the transport are relative to the device; ``address`` and
    ``length`` record where the block sits on the bus (from the .fpg file).
    """

    def __init__(
        self,
        parent_transport: Transport,
        device_name: str,
        address: int = 0,
        length: int = regmap.BLOCK_SIZE,
        meta: Mapping[str, str] | None = None,
    ) -> None:
        self.parent = parent_transport
        self.name = device_name
        self.address = address
        self.length = length
        self.meta = dict(meta or {})
        self.tap: Tap | None = None  # the software ARP/ICMP loop, once tap_start() ran

    @classmethod
    def from_device_info(
        cls,
        parent: Transport,
        device_name: str,
        device_info: Mapping[str, str],
        memorymap_dict: Mapping[str, Mapping[str, int]],
        **kwargs: Any,
    ) -> FourHundredGbe:
        """The constructor casperfpga calls for each block tagged with our tag."""
        entry = memorymap_dict.get(device_name)
        if entry is None:
            raise ValueError(f"400GbE block {device_name!r} has no memory-mapped register")
        return cls(parent, device_name, entry["address"], entry["bytes"], device_info)

    def __repr__(self) -> str:
        return f"FourHundredGbe({self.name!r}, address={self.address:#x})"

    # ------------------------------------------------------------- raw register access
    def _read_words(self, offset: int, count: int) -> list[int]:
        data = self.parent.read(self.name, count * WORD_BYTES, offset)
        if len(data) != count * WORD_BYTES:
            raise OSError(f"{self.name}: read of {count} words at {offset:#x} got {len(data)} B")
        return [
            int.from_bytes(data[k : k + WORD_BYTES], "big") for k in range(0, len(data), WORD_BYTES)
        ]

    def _write_words(self, offset: int, words: Sequence[int]) -> None:
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

    # ------------------------------------------------------------- configuration
    @property
    def mac(self) -> int:
        return (self.read_reg("mac_hi") << 32) | self.read_reg("mac_lo")

    @mac.setter
    def mac(self, value: int | str) -> None:
        mac = parse_mac(value)
        self.write_reg("mac_hi", mac >> 32)
        self.write_reg("mac_lo", mac & 0xFFFFFFFF)

    @property
    def ip_address(self) -> int:
        return self.read_reg("ip")

    @ip_address.setter
    def ip_address(self, value: int | str) -> None:
        self.write_reg("ip", parse_ip(value))

    @property
    def port(self) -> int:
        return self.read_field("port", "port")

    @port.setter
    def port(self, value: int | str) -> None:
        self.write_reg("port", parse_port(value))

    def configure_core(
        self,
        mac: int | str,
        ip: int | str,
        port: int | str,
        gateway: int | str | None = None,
        subnet_mask: int | str | None = None,
    ) -> None:
        """Set addresses, then enable the fabric and soft-reset the datapath."""
        # Parse everything first: a bad argument must not leave a half-written core.
        mac_v, ip_v, port_v = parse_mac(mac), parse_ip(ip), parse_port(port)
        gateway_v = None if gateway is None else parse_ip(gateway)
        mask_v = None if subnet_mask is None else parse_netmask(subnet_mask)
        self.write_reg("mac_hi", mac_v >> 32)
        self.write_reg("mac_lo", mac_v & 0xFFFFFFFF)
        self.write_reg("ip", ip_v)
        self.write_reg("port", port_v)
        if gateway_v is not None:
            self.write_reg("gateway", gateway_v)
        if mask_v is not None:
            self.write_reg("netmask", mask_v)
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

    # ------------------------------------------------------------- ARP table
    def set_single_arp_entry(self, ip: int | str, mac: int | str | None) -> None:
        """Entry for IP[7:0] of ``ip``; ``mac`` None invalidates it."""
        index = parse_ip(ip) & (ARP.entries - 1)
        words = arp_entry_words(mac)
        offset = ARP.offset + index * ARP.entry_bytes
        self._write_words(offset, words)
        self._check_arp(index, words, tuple(self._read_words(offset, 2)))

    def set_arp_table(
        self, macs: Sequence[int | str | None] | Mapping[int | str, int | str]
    ) -> None:
        """Write all entries at once, then read every word back.

        ``macs`` is a list of one MAC per entry (None: invalid), or a mapping from index
        (or IP address, whose last octet is the index) to MAC; unmapped entries are
        written invalid.
        """
        table: list[int | str | None] = [None] * ARP.entries
        if isinstance(macs, Mapping):
            for key, mac in macs.items():
                table[_arp_index(key)] = mac
        else:
            if len(macs) != ARP.entries:
                raise ValueError(f"ARP table needs {ARP.entries} MACs, got {len(macs)}")
            table = list(macs)
        words = [w for mac in table for w in arp_entry_words(mac)]
        self._write_words(ARP.offset, words)
        got = self._read_words(ARP.offset, len(words))
        for index in range(ARP.entries):
            pair = slice(2 * index, 2 * index + 2)
            self._check_arp(index, tuple(words[pair]), tuple(got[pair]))

    def _check_arp(self, index: int, want: tuple[int, ...], got: tuple[int, ...]) -> None:
        if want != got:
            raise ReadBackError(
                f"{self.name}: ARP entry {index} wrote "
                f"{want[0]:#010x} {want[1]:#010x}, read back {got[0]:#010x} {got[1]:#010x}"
            )

    def get_arp_details(self, N: int = ARP.entries) -> list[dict[str, Any]]:
        """The first N entries: index, valid flag and MAC (int and text)."""
        if not 0 < N <= ARP.entries:
            raise ValueError(f"invalid ARP entry count {N!r}: outside 1..{ARP.entries}")
        words = self._read_words(ARP.offset, 2 * N)
        entries = []
        for index in range(N):
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

    def print_arp_details(self, only_valid: bool = True) -> None:
        for e in self.get_arp_details():
            if e["valid"] or not only_valid:
                flag = "" if e["valid"] else " (invalid)"
                print(f"{self.name}: IP[7:0] {e['index']:3d} -> {e['mac_str']}{flag}")

    # ------------------------------------------------------------- status, counters
    def get_gbe_core_details(self, read_arp: bool = False, read_cpu: bool = False) -> dict:
        ctrl_reg = regmap.REGISTERS["ctrl"]
        ctrl = self.read_reg("ctrl")
        core_type = self.read_reg("core_type")
        link = self.read_reg("link_status")
        details: dict[str, Any] = {
            "name": self.name,
            "core_type": core_type,
            "speed_code": regmap.REGISTERS["core_type"].field("speed").get(core_type),
            "mac": self.mac,
            "ip": self.ip_address,
            "fabric_port": self.port,
            "gateway_ip": self.read_reg("gateway"),
            "subnet_mask": self.read_reg("netmask"),
            "multicast": {"base_ip": self.read_reg("mc_ip"), "ip_mask": self.read_reg("mc_mask")},
            "ttl": self.read_field("ttl", "ttl"),
            "link_up": bool(regmap.REGISTERS["link_status"].field("link_up").get(link)),
            "ctrl": {f.name: f.get(ctrl) for f in ctrl_reg.fields if not f.singlepulse},
            "fabric_en": bool(ctrl_reg.field("fabric_en").get(ctrl)),
        }
        if read_arp:
            details["arp"] = self.get_arp_details()
        if read_cpu:
            details["cpu"] = {
                "tx_len": self.read_reg("cpu_tx_len"),
                "rx_len": self.read_reg("cpu_rx_len"),
            }
        return details

    def print_gbe_core_details(
        self, arp: bool = False, cpu: bool = False, refresh: bool = True
    ) -> None:
        if refresh or not hasattr(self, "core_details"):
            self.core_details = self.get_gbe_core_details(read_arp=arp, read_cpu=cpu)
        d = self.core_details
        print(f"{self.name} at {self.address:#x}: 400GbE core, type {d['core_type']:#010x}")
        print(f"  MAC {format_mac(d['mac'])}  IP {format_ip(d['ip'])}  port {d['fabric_port']}")
        print(f"  gateway {format_ip(d['gateway_ip'])}  netmask {format_ip(d['subnet_mask'])}")
        print(f"  fabric_en {int(d['fabric_en'])}  link_up {int(d['link_up'])}  TTL {d['ttl']}")
        if arp:
            self.print_arp_details()
        if cpu and "cpu" in d:
            print(f"  CPU tx_len {d['cpu']['tx_len']}  rx_len {d['cpu']['rx_len']}")

    def link_status(self) -> dict[str, int]:
        reg = regmap.REGISTERS["link_status"]
        value = self.read_reg("link_status")
        status = {f.name: f.get(value) for f in reg.fields}
        status["retries"] = self.read_reg("link_retries")
        status["rx_phy_status"] = self.read_reg("rx_phy_status")
        return status

    def _counters(self, prefix: str = "") -> dict[str, int]:
        return {n: self.read_reg(n) for n in regmap.COUNTERS if n.startswith(prefix)}

    def read_counters(self) -> dict[str, int]:
        return self._counters()

    def read_rx_counters(self) -> dict[str, int]:
        return self._counters("rx_")

    def read_tx_counters(self) -> dict[str, int]:
        return self._counters("tx_")

    def rx_drop_counters(self) -> dict[str, int]:
        return self._counters("rx_drop_")

    def reset_counters(self) -> None:
        self.write_field("count_reset", "clear", 1)

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

        Sets ``ctrl.cpu_rx_en``/``cpu_tx_en``; ``hardware_arp`` False also turns the
        hardware ARP responder off, so that ARP is answered here. A running tap is kept
        unless ``restart``.
        """
        from .tap import Tap

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
