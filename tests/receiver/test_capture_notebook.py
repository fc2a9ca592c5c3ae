"""examples/capture_to_gpu.ipynb executed top to bottom by nbclient against the twin (as
root: its TAP device; otherwise the pcap fallback), with the spectrum plot and the
receiver's accounting table among its outputs. The executed copy is kept under
build/notebook/ for inspection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from casper400g_dev import checkout

NOTEBOOK = checkout.EXAMPLES_DIR / "capture_to_gpu.ipynb"


def test_the_notebook_runs_top_to_bottom():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), (
        "commit the notebook without outputs"
    )
    client = nbclient.NotebookClient(
        nb,
        timeout=1800,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    try:
        client.execute()
    finally:
        out = checkout.BUILD_DIR / "notebook" / NOTEBOOK.name
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, "no plot in the outputs"
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "packets + lost" in html and "FAIL" not in html
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "peak at +0.15625 fs, configured tone +0.15625 fs" in text, text[-2000:]
    if os.geteuid() == 0:
        assert "from the udp backend" in text
    from casper400g_dev.demo_twin import gpu_device

    device, _why = gpu_device()
    assert f"device {device}:" in text  # on a GPU machine with CuPy: cuda:0
    assert Path(out).is_file()
