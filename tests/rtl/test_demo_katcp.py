"""`make demo` part 6: examples/configure_core.py configures the simulated core over KATCP."""

from __future__ import annotations

import io

from rich.console import Console

from casper400g_dev import demo


def test_demo_configures_the_core_over_katcp():
    out = io.StringIO()
    status = demo.run_katcp(Console(file=out, width=200), False, demo.DEMO_CONFIG)
    text = out.getvalue()
    assert status == 0, text
    cfg = demo.DEMO_CONFIG
    assert f"MAC {cfg['mac']}  IP {cfg['ip']}  port {cfg['port']}" in text
    assert "fabric_en 1" in text
    for ip, mac in cfg["arp"].items():
        assert f"IP[7:0] {int(ip.split('.')[-1]):3d} -> {mac}" in text
    assert "the frame equals scapy's, byte for byte" in text
