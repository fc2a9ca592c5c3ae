"""The GPUDirect options have one home for their defaults (gpudirect_config in C++): the
extension's keyword defaults and gpu.GPUDIRECT_DEFAULTS both come from it. No GPU needed."""

from __future__ import annotations

import re

from casper400g_rx import _core, gpu


def test_gpudirect_keyword_defaults_equal_the_python_defaults() -> None:
    doc = _core.gpudirect.__doc__ or ""
    signature = doc.splitlines()[0]
    found = {
        name: int(value)
        for name, value in re.findall(r"(\w+): [^,=]+ = (\d+)", signature)
        if name in gpu.GPUDIRECT_DEFAULTS
    }
    assert found == gpu.GPUDIRECT_DEFAULTS
    assert set(gpu.GPUDIRECT_DEFAULTS) == {"blocks", "batch", "ring_packets", "headroom", "slots"}
    assert gpu.GPUDIRECT_DEFAULTS["ring_packets"] % gpu.GPUDIRECT_DEFAULTS["batch"] == 0
