"""FourHundredGbe offers every member of the real casperfpga's OneHundredGbe."""

from __future__ import annotations

import json
import subprocess

from conftest import REPO_ROOT

ROOT = REPO_ROOT


def test_fourhundredgbe_has_every_member_of_onehundredgbe(
    casperfpga_python: str, casperfpga_env: dict[str, str]
):
    """Names, member kinds, parameter names/order/defaults and instance attributes of
    casperfpga's OneHundredGbe (and its bases), read from casperfpga itself."""
    script = ROOT / "tests" / "data" / "compare_onehundredgbe_api.py"
    done = subprocess.run(
        [casperfpga_python, str(script)], env=casperfpga_env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert {"configure_core", "set_arp_table", "rx_okay", "read_raw", "tap_info"} <= set(
        got["checked"]
    )
    assert (got["missing"], got["other_kind"], got["other_params"]) == ([], [], [])
    assert got["missing_attributes"] == []
