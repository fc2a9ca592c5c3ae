"""The real casperfpga (the reference tree, katcp 0.9.3 from PyPI) against board-server.

``casper400g-board-server`` serves the example design (``casper400g build`` + ``mkfpg``)
from a file that stands for the board's bus, initialised with every register's reset
value from the build's ``memory_map.json``. ``tests/data/onehundredgbe_script.py`` — a
script written for casperfpga's ``OneHundredGbe`` — programs it, configures the core
with ``Mac``/``IpAddress`` objects and reads it back; every register it touched is then
read from the file here with ``struct`` and compared with ``ipaddress``'s values.
The same script against the simulated core is ``tests/rtl/test_casperfpga_real_on_core.py``.
"""

from __future__ import annotations

import ipaddress
import json
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, board_server

from casper400g_board_server.sensors import design_sensors
from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.transport import KatcpTransport
from mlib_devel_400g import cli
from verification.named_registers import agree

ROOT = REPO_ROOT
SCRIPT = ROOT / "tests" / "data" / "onehundredgbe_script.py"
DESIGN = ROOT / "examples" / "pktgen_400g" / "design.yaml"
TWO_PORT = ROOT / "examples" / "pktgen2x400g" / "design.yaml"
BASE = 0xA4000000
CLOCK_MHZ = 390.625  # board-server's default for a file-backed window
TIMEOUT = 15.0
CONFIG: dict[str, Any] = {
    "gbe": "gbe0",
    "mac": "02:00:0a:00:00:2a",
    "ip": "10.0.0.42",
    "port": 7150,
    "gateway": "10.0.0.254",
    "netmask": "255.255.255.0",
    "arp": [f"0c:42:a1:00:00:{i:02x}" for i in range(8)],  # a short list: entries 0..7
    "single_arp": ["10.0.0.77", "0c:42:a1:00:00:4d"],
    "registers": {"pkt_period": 1234, "pkt_size": 8192},
}


def built_design(out: Path, design: Path = DESIGN) -> tuple[Path, list[dict[str, Any]]]:
    """The example design's .fpg (placeholder image: no Vivado) and memory map."""
    assert cli.main(["build", str(design), "-o", str(out)]) == 0
    image = out / "placeholder.pdi"
    image.write_bytes(b"no bitstream: board-server maps the design without programming")
    assert cli.main(["mkfpg", str(out), "--image", str(image)]) == 0
    fpgs = sorted(out.glob("*.fpg"))
    assert len(fpgs) == 1, fpgs
    return fpgs[0], json.loads((out / "memory_map.json").read_text())


def word(image: Path, address: int) -> int:
    """The register at bus ``address`` as the board's CPU sees it (host byte order)."""
    with open(image, "rb") as f:
        f.seek(address)
        return struct.unpack("=I", f.read(4))[0]


def reset_image(image: Path, memory_map: list[dict[str, Any]]) -> None:
    """A bus right after reset: every register at its reset value."""
    end = max(d["base"] + d["size"] for d in memory_map)
    with open(image, "wb") as f:
        f.truncate(end)  # sparse: the window sits at its bus address, as in /dev/mem
        for device in memory_map:
            for reg in device.get("registers", []):
                if reg.get("default"):
                    f.seek(reg["address"])
                    f.write(struct.pack("=I", reg["default"] & 0xFFFFFFFF))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[int, Path, Path, list[dict[str, Any]]]]:
    fpg, memory_map = built_design(tmp_path / "build")
    names = {f"{d['name']}_{r['name']}" for d in memory_map for r in d.get("registers", [])}
    missing = {"sys_board_id", "sys_rev", "sys_rev_rcs", "sys_scratchpad", "sys_clkcounter"}
    missing -= names
    assert not missing, f"the example design lacks the sys_block registers {sorted(missing)}"
    image = tmp_path / "bus.bin"
    reset_image(image, memory_map)
    # The script programs the design with upload_to_ram_and_program (?progremote).
    with board_server(fpg, image, BASE, TIMEOUT, ["--allow-upload"]) as (port, _out):
        yield port, fpg, image, memory_map


def run_script(python: str, env: dict[str, str], port: int, fpg: str, cfg: dict) -> dict:
    argv = [python, str(SCRIPT), "127.0.0.1", str(port), fpg, json.dumps(cfg)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert results, done.stdout[-3000:]
    return {"printed": done.stdout, **json.loads(results[-1][len("RESULT ") :])}


def reg_address(memory_map: list[dict[str, Any]], device: str, reg: str | None = None) -> int:
    for d in memory_map:
        if d["name"] == device:
            return d["base"] + (regmap.REGISTERS[reg].offset if reg else 0)
        for r in d.get("registers", []):
            # A one-register device has the register's name; the sys_block lists
            # board_id ... under device "sys" (sys_board_id ... in the .fpg).
            if device in (r["name"], f"{d['name']}_{r['name']}"):
                return r["address"]
    raise KeyError(device)


def test_onehundredgbe_script_drives_the_core_unchanged(
    served: tuple[int, Path, Path, list[dict[str, Any]]],
    casperfpga_python: str,
    casperfpga_env: dict[str, str],
):
    port, fpg, image, memory_map = served
    got = run_script(casperfpga_python, casperfpga_env, port, str(fpg), CONFIG)

    assert got["programmed"] and got["is_running"] and got["test_connection"]
    assert got["gbe_type"] == "FourHundredGbe" and got["gbe_repr"] == "FourHundredGbe:gbe0"
    assert {"gbe0", "pkt_period", "sys_board_id", "sys_clkcounter"} <= set(got["listdev"])
    assert got["board_id"] == word(image, reg_address(memory_map, "sys_board_id"))

    def reg(name: str) -> int:
        return word(image, reg_address(memory_map, "gbe0", name))

    mac = int(CONFIG["mac"].replace(":", ""), 16)
    want = {
        "mac_hi": mac >> 32,
        "mac_lo": mac & 0xFFFFFFFF,
        "ip": int(ipaddress.IPv4Address(CONFIG["ip"])),
        "gateway": int(ipaddress.IPv4Address(CONFIG["gateway"])),
        "netmask": int(ipaddress.IPv4Address(CONFIG["netmask"])),
        "port": CONFIG["port"],
    }
    assert {name: reg(name) for name in want} == want
    assert reg("ctrl") & 1 == 1  # fabric_en, left enabled by the script
    assert (got["mac"], got["ip_address"], got["port"]) == (mac, want["ip"], CONFIG["port"])

    # ARP: entries 0..7 from the short list, 77 from set_single_arp_entry, the rest empty.
    arp_base = reg_address(memory_map, "gbe0") + regmap.REGIONS["arp_table"].offset
    table = {i: int(m.replace(":", ""), 16) for i, m in enumerate(CONFIG["arp"])}
    table[77] = int(CONFIG["single_arp"][1].replace(":", ""), 16)
    for index in range(256):
        words = (word(image, arp_base + 8 * index), word(image, arp_base + 8 * index + 4))
        entry = table.get(index)
        assert words == ((0x10000 | entry >> 32, entry & 0xFFFFFFFF) if entry else (0, 0))
    assert got["arp"] == [table.get(i, 0xFFFFFFFFFFFF) for i in range(256)]

    # casperfpga's own value objects, formatted by casperfpga.
    assert got["details"] == {
        "mac": "02:00:0A:00:00:2A",
        "ip": CONFIG["ip"],
        "gateway_ip": CONFIG["gateway"],
        "subnet_mask": CONFIG["netmask"],
        "ip_prefix": "10.0.0",
        "fabric_port": CONFIG["port"],
        "fabric_en": True,
    }
    assert got["str"] == f"gbe0: MAC(02:00:0A:00:00:2A) IP({CONFIG['ip']}) Port({CONFIG['port']})"
    assert (got["fabric_en_after_disable"], got["fabric_en_after_enable"]) == (False, True)
    assert "MAC 02:00:0a:00:00:2a  IP 10.0.0.42  port 7150" in got["printed"]
    assert "IP[7:0]  77 -> 0c:42:a1:00:00:4d" in got["printed"]
    assert "IP[7:0]  78" not in got["printed"]  # print_arp_details(only_hits=True)

    # Counters under casperfpga's names (the file holds zeros: nothing was sent).
    assert {"gbe0_txctr", "gbe0_txvldctr", "gbe0_txerrctr"} <= set(got["tx_counters"])
    assert {"gbe0_rxctr", "gbe0_rxvldctr", "gbe0_rxbadctr"} <= set(got["rx_counters"])
    assert got["counters"] == {**got["tx_counters"], **got["rx_counters"]}
    assert all(v == 0 for v in got["counters"].values())

    for name, value in CONFIG["registers"].items():
        assert got["registers"][name] == value
        assert got["register_objects"][name] == value + 1
        assert word(image, reg_address(memory_map, name)) == value + 1

    # board-server advances a file-backed sys_clkcounter at the nominal user clock.
    # casperfpga divides the counts between two reads by the 2 s it slept between them;
    # the reads are at least that far apart, more on a loaded machine: never below.
    assert CLOCK_MHZ * 0.999 <= got["clock_mhz"] <= CLOCK_MHZ * 1.15


def test_example_configure_core_runs_with_casperfpga(
    served: tuple[int, Path, Path, list[dict[str, Any]]],
    casperfpga_python: str,
    casperfpga_env: dict[str, str],
):
    port, _, image, memory_map = served
    argv = [casperfpga_python, str(ROOT / "examples" / "configure_core.py"), "127.0.0.1"]
    argv += ["--port", str(port), "--mac", "02:00:0a:00:00:0c", "--ip", "10.0.0.12"]
    argv += ["--udp-port", "7160", "--gateway", "10.0.0.1", "--arp=10.0.0.20=0c:42:a1:00:00:14"]
    done = subprocess.run(argv, env=casperfpga_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "(casperfpga " in done.stdout  # the real one, not casperfpga_ext.Fpga
    assert "IP[7:0]  20 -> 0c:42:a1:00:00:14" in done.stdout

    def reg(name: str) -> int:
        return word(image, reg_address(memory_map, "gbe0", name))

    assert (reg("mac_hi"), reg("mac_lo"), reg("port")) == (0x0200, 0x0A00000C, 7160)
    assert reg("ip") == int(ipaddress.IPv4Address("10.0.0.12"))
    arp20 = reg_address(memory_map, "gbe0") + regmap.REGIONS["arp_table"].offset + 8 * 20
    assert (word(image, arp20), word(image, arp20 + 4)) == (0x10C42, 0xA1000014)


NAMES_SCRIPT = ROOT / "tests" / "data" / "named_registers_script.py"


def test_registers_by_name_on_the_example_design(
    served: tuple[int, Path, Path, list[dict[str, Any]]],
    casperfpga_python: str,
    casperfpga_env: dict[str, str],
):
    """The real casperfpga lists the core's registers as devices; read_uint/write_int by
    name agree with the Gbe methods and with the bus (the board's file read here)."""
    port, fpg, image, memory_map = served
    base = reg_address(memory_map, "gbe0")
    # Counters as a running core would hold them: distinct values, the 64-bit ones above
    # 2^32 so a torn or half read shows.
    with open(image, "r+b") as f:
        for k, reg in enumerate(r for r in regmap.REGISTERS.values() if r.is_counter):
            f.seek(base + reg.offset)
            value = (k + 1) * 0x01010101 + (0x5_0000_0000 * (k + 1) if reg.width == 64 else 0)
            f.write(struct.pack(f"={'Q' if reg.width == 64 else 'I'}", value))
    writes = {
        "gmac_reg_local_ip_address": int(ipaddress.IPv4Address("10.0.0.77")),
        "gmac_reg_gateway_ip_address": int(ipaddress.IPv4Address("10.0.0.254")),
        "gmac_reg_local_ip_netmask": int(ipaddress.IPv4Address("255.255.0.0")),
        "gmac_reg_mac_address_h": 0x0200,
        "gmac_reg_mac_address_l": 0x0A00004D,
        "gmac_reg_udp_port": 7200,
        "ttl": 17,
    }
    argv = [casperfpga_python, str(NAMES_SCRIPT), "127.0.0.1", str(port), str(fpg)]
    argv.append(json.dumps({"gbe": "gbe0", "writes": writes}))
    done = subprocess.run(argv, env=casperfpga_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    got = json.loads(done.stdout.split("RESULT ", 1)[1].splitlines()[0])

    listed = {f"gbe0_{d.name}": d for d in regmap.DEVICES.values()}
    assert set(listed) <= set(got["listdev"]) and "gbe0" in got["listdev"]
    assert {n: got["sizes"][n] for n in listed} == {n: d.nbytes for n, d in listed.items()}
    for view in (got["before"], got["after_writes"]):
        assert set(view["names"]) == {n for n, d in listed.items() if not d.ram}
        agree("gbe0", view)
    # What the bus holds now, read here with struct: the last values read by name.
    for name, value in got["after_writes"]["names"].items():
        at = base + listed[name].offset
        bus = word(image, at) | (word(image, at + 4) << 32 if listed[name].nbytes == 8 else 0)
        assert value == bus, name
    assert got["before"]["names"]["gbe0_tx_frames"] > 1 << 32
    after = got["after_writes"]
    assert after["details"]["ip"] == writes["gmac_reg_local_ip_address"]
    assert after["details"]["subnet_mask"] == 0xFFFF0000
    assert after["mac"] == 0x02000A00004D and after["port"] == 7200
    assert word(image, base + regmap.REGISTERS["ttl"].offset) == 17
    assert word(image, base + regmap.REGISTERS["port"].offset) == 7200
    # A 100GbE name this core does not have is no device (docs/registers.md says why).
    assert "unknown" in got["absent_name"] and "gmac_reg_bytes_rdy" in got["absent_name"]


def test_board_sensors_are_the_cores_with_its_registers_named(
    served: tuple[int, Path, Path, list[dict[str, Any]]],
):
    """Naming the core's registers adds devices, not cores: the sensors are one core's."""
    with KatcpTransport("127.0.0.1", served[0], timeout=TIMEOUT) as katcp:
        assert "gbe0_gmac_reg_tx_packet_count" in katcp.listdev()
        reply, informs = katcp.request("sensor-list")
    sensors = set(design_sensors(["gbe0"]))
    assert {i[0].decode() for i in informs} == sensors and reply == [b"%d" % len(sensors)]


PROGRAM_FLOW = """
import sys
import casperfpga
import casperfpga_ext  # noqa: F401

fpga = casperfpga.CasperFpga("127.0.0.1", int(sys.argv[1]), transport=casperfpga.KatcpTransport)
print("running", fpga.is_running())
fpga.transport.program(sys.argv[2])  # ?progdev <file>, then #fpga ready or ?status
status = fpga.transport.katcprequest("status")[0].arguments[0]  # status() compares to str
print("programmed", fpga.is_running(), status.decode())
print("words", fpga.transport.wordread("sys_scratchpad", 1, 0, 0).decode())
fpga.deprogram()  # ?tap-info (multicast clean-up), then ?progdev
print("deprogrammed", fpga.is_running())
fpga.transport.stop()  # see close() in data/onehundredgbe_script.py
fpga.transport.join(10)
"""


def test_program_and_deprogram_flows(
    served: tuple[int, Path, Path, list[dict[str, Any]]],
    casperfpga_python: str,
    casperfpga_env: dict[str, str],
):
    port, fpg, _, _ = served
    argv = [casperfpga_python, "-c", PROGRAM_FLOW, str(port), fpg.name]
    done = subprocess.run(argv, env=casperfpga_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "running True",
        "programmed True ok",
        "words 0x00000000",
        "deprogrammed False",
    ]


# What a casperfpga user's script sees of a design with two cores.
GBES_SNIPPET = """
import json, sys
import casperfpga
import casperfpga_ext  # registers xps:fourhundred_gbe with casperfpga
fpga = casperfpga.CasperFpga("127.0.0.1", int(sys.argv[1]), transport=casperfpga.KatcpTransport)
try:
    fpga.get_system_information(sys.argv[2])
    out = {
        n: [type(g).__name__, g.address, str(g.ip_address), str(g.mac)]
        for n, g in ((n, getattr(fpga.gbes, n)) for n in fpga.gbes.names())
    }
finally:
    fpga.transport.stop()
    fpga.transport.join(10)
print("RESULT " + json.dumps(out))
"""


def test_two_cores_are_two_fourhundredgbes_to_the_real_casperfpga(
    tmp_path: Path, casperfpga_python: str, casperfpga_env: dict[str, str]
):
    """examples/pktgen2x400g served by board-server: the real casperfpga's fpga.gbes has
    gbe0 and gbe1, both FourHundredGbe at their own windows; examples/configure_core.py,
    run with casperfpga, configures both in one run."""
    fpg, memory_map = built_design(tmp_path / "build", TWO_PORT)
    image = tmp_path / "bus.bin"
    reset_image(image, memory_map)
    with board_server(fpg, image, BASE, TIMEOUT) as (port, _out):
        argv = [casperfpga_python, str(ROOT / "examples" / "configure_core.py"), "127.0.0.1"]
        argv += ["--port", str(port), "--fpg", str(fpg)]
        # Addresses other than the design's start-up ones: what is read back was written.
        argv += ["--gbe", "gbe0:ip=10.0.0.11,mac=02:00:0a:00:00:0b,netmask=255.255.255.0"]
        argv += ["--gbe", "gbe1:ip=10.0.1.11,mac=02:00:0a:00:01:0b,netmask=255.255.255.0"]
        argv += ["--arp=10.0.0.20=0c:42:a1:00:00:14", "--arp=10.0.1.20=0c:42:a1:00:01:14"]
        done = subprocess.run(argv, env=casperfpga_env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "(casperfpga " in done.stdout
        got = subprocess.run(
            [casperfpga_python, "-c", GBES_SNIPPET, str(port), str(fpg)],
            env=casperfpga_env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-3000:]
    result = json.loads(got.stdout.split("RESULT ", 1)[1])
    assert result == {
        "gbe0": [
            "FourHundredGbe",
            reg_address(memory_map, "gbe0"),
            "10.0.0.11",
            "02:00:0A:00:00:0B",
        ],
        "gbe1": [
            "FourHundredGbe",
            reg_address(memory_map, "gbe1"),
            "10.0.1.11",
            "02:00:0A:00:01:0B",
        ],
    }
    arp = regmap.REGIONS["arp_table"].offset + 8 * 20
    for gbe, low in (("gbe0", 0xA1000014), ("gbe1", 0xA1000114)):
        at = reg_address(memory_map, gbe) + arp
        assert (word(image, at), word(image, at + 4)) == (0x10C42, low), gbe
