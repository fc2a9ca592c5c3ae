"""The real casperfpga against ``fhg_core``: a OneHundredGbe script over KATCP, then a frame.

The simulated core sits behind a ``BoardServer`` on 127.0.0.1 (``sim_bus.ServerThread``:
every request to ``gbe0`` is carried out on the core's simulated AXI4-Lite slave; the
sys_block casperfpga's ``get_system_information`` requires is modelled beside it). The script
``tests/data/onehundredgbe_script.py`` runs unchanged under the casperfpga venv
(``CASPER400G_CASPERFPGA_PYTHON``); then one datagram goes through the user port and
the frame leaving the core must equal scapy's for the configuration the script wrote.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time

import cocotb
from cocotb.task import bridge
from cocotb.triggers import Timer

from casperfpga_ext import addressing
from verification.core_harness import CoreHarness
from verification.models import frames
from verification.sim_bus import BOARD_ID, DEVICE, ServerThread, SimWindow

SCRIPT_LIMIT_S = 900.0
PAYLOAD = b"sent after a casperfpga OneHundredGbe script configured the core"
CONFIG = {
    "gbe": DEVICE,
    "mac": "02:00:0a:00:00:2a",
    "ip": "10.0.0.42",
    "port": 7150,
    "gateway": "10.0.0.254",
    "netmask": "255.255.255.0",
    "arp": [f"0c:42:a1:00:00:{i:02x}" for i in range(8)],
    "single_arp": ["10.0.0.77", "0c:42:a1:00:00:4d"],
    "registers": {},
    "estimate_clock": False,  # simulated time does not follow the wall clock
    # A request for the whole ARP table is 512 simulated AXI4-Lite reads: slower than a
    # board's, so the KATCP request timeout is longer.
    "timeout": 300,
}
DEST_IP, DEST_PORT = "10.0.0.5", 9000  # ARP entry 5 of the short list


@cocotb.test()
async def onehundredgbe_script_then_scapy_frame(dut) -> None:  # noqa: ANN001
    h = CoreHarness(dut)
    mon, drv = h.tx_monitor(), h.user_tx()
    await h.reset()
    core = SimWindow(h.axi)
    server = ServerThread(core)  # the core and a sys_block, as casperfpga expects
    port = server.start()
    argv = [
        os.environ["CASPER400G_CASPERFPGA_PYTHON"],
        os.environ["CASPER400G_SCRIPT"],
        "127.0.0.1",
        str(port),
        "-",
        json.dumps(CONFIG),
    ]
    # On a timeout SIGABRT makes the script print where each of its threads was.
    env = dict(os.environ, PYTHONPATH=os.environ["CASPER400G_REPO"], PYTHONFAULTHANDLER="1")
    started, late = time.monotonic(), None
    try:
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
            try:
                await bridge(core.serve)(lambda: proc.poll() is not None, SCRIPT_LIMIT_S)
            except TimeoutError as exc:
                late = exc
            finally:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGABRT)
                proc.wait()
            out.seek(0)
            output = out.read().decode("utf-8", "replace")
    finally:
        server.stop()
    took = f"{time.monotonic() - started:.0f} s, {core.bus.accesses} bus accesses"
    assert late is None and proc.returncode == 0, f"{late} ({took})\n{output[-6000:]}"
    cocotb.log.info("the script ran in %s", took)
    result = json.loads(output.split("RESULT ", 1)[1].splitlines()[0])
    assert result["gbe_type"] == "FourHundredGbe", result
    assert result["test_connection"] and result["board_id"] == BOARD_ID
    assert result["details"]["mac"] == "02:00:0A:00:00:2A", result["details"]
    assert result["details"]["fabric_en"] and result["fabric_en_after_enable"]

    # Every register the script wrote, read here over the bus.
    mac = addressing.parse_mac(CONFIG["mac"])
    assert await h.read_reg("mac_hi") == mac >> 32
    assert await h.read_reg("mac_lo") == mac & 0xFFFFFFFF
    for reg, key in (("ip", "ip"), ("gateway", "gateway"), ("netmask", "netmask")):
        assert await h.read_reg(reg) == addressing.parse_ip(CONFIG[key]), reg
    assert await h.read_reg("port") == CONFIG["port"]

    await h.wait_tx_ready()
    await drv.send(PAYLOAD, addressing.parse_ip(DEST_IP), DEST_PORT)
    for _ in range(250):
        if mon.frames:
            break
        await Timer(200, unit="ns")
    arp = {i: addressing.parse_mac(m) for i, m in enumerate(CONFIG["arp"])}
    next_hop = frames.next_hop_mac(
        addressing.parse_ip(DEST_IP), CONFIG["ip"], CONFIG["netmask"], CONFIG["gateway"], arp
    )
    assert next_hop == arp[5]
    want = frames.expected_udp_frame(
        CONFIG["mac"], next_hop, CONFIG["ip"], DEST_IP, CONFIG["port"], DEST_PORT,
        0, 64, PAYLOAD, True,
    )  # fmt: skip
    assert mon.frames, "the core sent no frame"
    assert mon.frames[0].body == want, f"got {mon.frames[0].body.hex()}\nwant {want.hex()}"
