"""`casper400g-rx hwcheck` on hosts without an RDMA NIC, and its PCIe topology reading."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from casper400g_rx import _core
from casper400g_rx.tools.hwcheck import EXIT_NO_DEVICE, EXIT_NO_IBV, pcie_relation

lib_loads = _core.ibv_compiled() and _core.ibv_load_error() == ""


def hwcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "casper400g_rx", "hwcheck", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.skipif(
    not lib_loads or bool(lib_loads and _core.ibv_devices()),
    reason="needs rdma-core loadable and no RDMA device",
)
def test_no_rdma_device_reports_cleanly() -> None:
    out = hwcheck()
    assert out.returncode == EXIT_NO_DEVICE == 4, out.stderr
    assert "no RDMA device: rdma-core is installed but no NIC registered" in out.stdout
    assert "result: no RDMA device (exit status 4)" in out.stdout
    assert out.stderr == ""
    report = json.loads(hwcheck("--json").stdout)
    assert report["status"] == 4 and report["devices"] == []


def test_rdma_core_missing_reports_cleanly() -> None:
    out = hwcheck("--json", env={"CASPER400G_RX_LIBIBVERBS": "libnot-there.so.1"})
    assert out.returncode == EXIT_NO_IBV == 3
    report = json.loads(out.stdout)
    assert report["status"] == 3
    assert "libnot-there.so.1" in report["message"] or "not compiled" in report["message"]


@pytest.mark.parametrize(
    ("a", "b", "word"),
    [
        (
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0",
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0",
            "PIX/PXB",
        ),
        (
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
            "/sys/devices/pci0000:00/0000:00:03.1/0000:05:00.0",
            "PHB",
        ),
        (
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
            "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0",
            "SYS/NODE",
        ),
    ],
)
def test_pcie_relation(a: str, b: str, word: str) -> None:
    assert pcie_relation(a, b).startswith(word)
    assert pcie_relation(b, a).startswith(word)
