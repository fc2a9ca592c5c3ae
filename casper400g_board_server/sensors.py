"""The board server's KATCP sensors: each 400GbE core's link state and counters.

``?sensor-list`` / ``?sensor-value`` (KATCP v5) serve them; every value is read from the
core's registers when asked (no cache, no polling thread), through the same window as
``?read``. Names are ``<core>.<what>``, with the register map's names (``_`` → ``-``):

* ``<core>.link-up`` (boolean; status ``nominal`` when up, ``error`` when down),
  ``<core>.link-state`` (integer, the bring-up state), ``<core>.link-retries``,
  ``<core>.fabric-enabled``;
* ``<core>.tx-overflowed`` and ``<core>.rx-overrun`` (booleans, ``error`` when set: the
  sticky ``status`` flags of a lost TX word and an RX FIFO overrun);
* the per-second rates ``<core>.tx-packet-rate``, ``tx-valid-rate``, ``rx-packet-rate``,
  ``rx-valid-rate`` (integer, events in the last complete second);
* ``<core>.<counter>`` for every counter of the register map (integer, 64-bit counters
  read low word first, as ``FourHundredGbe.read_reg``).

A value that cannot be read (bus error, no design mapped) has status ``unreachable``.
The same readings serve an operator's metrics exporter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.transport import WORD_BYTES

COUNTER_MAX = (1 << 64) - 1
RATES = ("tx_packet_rate", "tx_valid_rate", "rx_packet_rate", "rx_valid_rate")


class WindowReader(Protocol):
    def read(self, device_name: str, size: int, offset: int = 0) -> bytes: ...


@dataclass(frozen=True)
class Sensor:
    name: str
    description: str
    units: str
    type: str  # KATCP v5 type: "integer" or "boolean"
    read: Callable[[WindowReader], int]
    nominal_when: int | None = None  # booleans: the value that is "nominal"

    def params(self) -> list[str]:
        """``#sensor-list`` parameters: an integer sensor's range."""
        return ["0", str(COUNTER_MAX)] if self.type == "integer" else []

    def reading(self, window: WindowReader | None) -> tuple[str, str]:
        """``(status, value)`` as ``#sensor-value`` carries them."""
        if window is None:
            return "unreachable", "0"
        try:
            value = self.read(window)
        except (OSError, ValueError):
            return "unreachable", "0"
        if self.type == "boolean":
            good = self.nominal_when is None or value == self.nominal_when
            return ("nominal" if good else "error"), str(int(bool(value)))
        return "nominal", str(value)


def _reg_reader(device: str, reg: regmap.Register) -> Callable[[WindowReader], int]:
    def read(window: WindowReader) -> int:
        words = [
            int.from_bytes(window.read(device, WORD_BYTES, reg.offset + k * WORD_BYTES), "big")
            for k in range(reg.width // 32)
        ]
        return sum(w << (32 * k) for k, w in enumerate(words))

    return read


def _field_reader(device: str, reg_name: str, field: str) -> Callable[[WindowReader], int]:
    reg = regmap.REGISTERS[reg_name]
    whole = _reg_reader(device, reg)
    return lambda window: reg.field(field).get(whole(window))


def core_sensors(device: str) -> list[Sensor]:
    """The sensors of one 400GbE core mapped as ``device``."""
    sensors = [
        Sensor(
            f"{device}.link-up",
            "400GbE link up (DCMAC aligned, no fault)",
            "",
            "boolean",
            _field_reader(device, "link_status", "link_up"),
            nominal_when=1,
        ),
        Sensor(
            f"{device}.link-state",
            "link bring-up state (link_status.state)",
            "",
            "integer",
            _field_reader(device, "link_status", "state"),
        ),
        Sensor(
            f"{device}.link-retries",
            regmap.REGISTERS["link_retries"].desc,
            "",
            "integer",
            _reg_reader(device, regmap.REGISTERS["link_retries"]),
        ),
        Sensor(
            f"{device}.fabric-enabled",
            "UDP datapath enabled (ctrl.fabric_en)",
            "",
            "boolean",
            _field_reader(device, "ctrl", "fabric_en"),
        ),
        Sensor(
            f"{device}.tx-overflowed",
            "TX buffer lost a word since the last user reset (status.tx_overflow)",
            "",
            "boolean",
            _field_reader(device, "status", "tx_overflow"),
            nominal_when=0,
        ),
        Sensor(
            f"{device}.rx-overrun",
            "RX FIFO overran since the last rx_overrun_ack (status.rx_overrun)",
            "",
            "boolean",
            _field_reader(device, "status", "rx_overrun"),
            nominal_when=0,
        ),
    ]
    for name in RATES:
        reg = regmap.REGISTERS[name]
        sensors.append(
            Sensor(
                f"{device}.{name.replace('_', '-')}",
                reg.desc,
                "1/s",
                "integer",
                _reg_reader(device, reg),
            )
        )
    for name in regmap.COUNTERS:
        reg = regmap.REGISTERS[name]
        units = "B" if name.endswith("_bytes") else ""
        sensors.append(
            Sensor(
                f"{device}.{name.replace('_', '-')}",
                reg.desc,
                units,
                "integer",
                _reg_reader(device, reg),
            )
        )
    return sensors


def design_sensors(core_devices: Iterable[str]) -> dict[str, Sensor]:
    """Every sensor of a design with these 400GbE core devices, by name."""
    return {s.name: s for device in core_devices for s in core_sensors(device)}
