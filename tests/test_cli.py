"""The casper400g command line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mlib_devel_400g import cli


def test_regs_check_passes_on_the_committed_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["regs", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_unknown_command_is_an_error() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2


def test_console_script_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mlib_devel_400g", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("casper400g ")
