"""cocotb side of `python -m casper400g_dev demo` (KATCP part): configure the core through
the board server.

The simulated core sits behind a ``BoardServer`` on 127.0.0.1 (``sim_bus``); the example
script ``examples/configure_core.py`` runs as its own process against it, over KATCP, and
configures the core. Then one datagram goes through the user port and the frame leaving
the core is compared with the one scapy builds for the requested configuration.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import cocotb
from cocotb.task import bridge
from cocotb.triggers import Timer
from cocotb.utils import get_sim_time

from casperfpga_ext import addressing
from verification.core_harness import CoreHarness
from verification.models import frames
from verification.sim_bus import ServerThread, SimWindow

SCRIPT_LIMIT_S = 60.0
PAYLOAD = b"configured over KATCP by examples/configure_core.py"


@cocotb.test()
async def configure_over_katcp(dut) -> None:  # noqa: ANN001
    cfg = json.loads(os.environ["CASPER400G_DEMO_CONFIG"])
    h = CoreHarness(dut)
    mon, drv = h.tx_monitor(), h.user_tx()
    await h.reset()
    window = SimWindow(h.axi)
    server = ServerThread(window, {"fab_mac": cfg["mac"], "fab_ip": cfg["ip"]})
    port = server.start()
    argv = [
        os.environ["CASPER400G_PYTHON"],
        os.environ["CASPER400G_EXAMPLE"],
        "127.0.0.1",
        "--port",
        str(port),
        "--timeout",  # a request for the whole ARP table is 512 simulated bus accesses
        "120",
        "--mac",
        cfg["mac"],
        "--ip",
        cfg["ip"],
        "--udp-port",
        str(cfg["port"]),
        "--gateway",
        cfg["gateway"],
        "--netmask",
        cfg["netmask"],
        *(f"--arp={ip}={mac}" for ip, mac in cfg["arp"].items()),
    ]
    try:
        with tempfile.TemporaryFile() as out:
            # casperfpga_ext from this checkout, also for a Python with the real casperfpga.
            root = str(Path(os.environ["CASPER400G_EXAMPLE"]).resolve().parent.parent)
            env = dict(
                os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
            )
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
            try:
                served = await bridge(window.serve)(lambda: proc.poll() is not None, SCRIPT_LIMIT_S)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
            out.seek(0)
            output = out.read().decode("utf-8", "replace")
    finally:
        server.stop()

    result = {
        "command": " ".join(["python", "examples/configure_core.py", *argv[2:]]),
        "returncode": proc.returncode,
        "output": output,
        "requests": served,
        "bus_accesses": window.bus.accesses,
        "sim_time_us": get_sim_time("us"),
    }
    if proc.returncode == 0:
        await h.wait_tx_ready()
        dst = addressing.parse_ip(cfg["dest_ip"])
        await drv.send(PAYLOAD, dst, cfg["dest_port"])
        for _ in range(250):
            if mon.frames:
                break
            await Timer(200, unit="ns")
        arp = {addressing.parse_ip(ip) & 0xFF: m for ip, m in cfg["arp"].items()}
        next_hop = frames.next_hop_mac(dst, cfg["ip"], cfg["netmask"], cfg["gateway"], arp)
        assert next_hop is not None, f"no ARP entry for {cfg['dest_ip']} in the demo config"
        want = frames.expected_udp_frame(
            cfg["mac"], next_hop, cfg["ip"], cfg["dest_ip"], cfg["port"], cfg["dest_port"],
            0, 64, PAYLOAD, True,
        )  # fmt: skip
        got = mon.frames[0].body if mon.frames else b""
        result.update(frame=got.hex(), expected=want.hex(), frame_ok=got == want)
    with open(os.environ["CASPER400G_JOB_OUT"], "w") as fh:
        json.dump(result, fh)
