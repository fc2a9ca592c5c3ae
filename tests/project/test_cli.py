"""The command lines: one per installed package, and the checkout's developer commands.

``casper400g`` (the toolflow and the twin), ``casper400g-board-server`` (on the board) and
``casper400g-rx`` (the receiver) are console scripts of their distributions; what only a
checkout can do is ``python -m casper400g_dev``, never a subcommand of an installed one.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib import metadata

import pytest

from casper400g_dev import cli as dev_cli
from mlib_devel_400g import cli

# Each distribution's console scripts, as its pyproject.toml declares them.
CONSOLE_SCRIPTS = {
    "casper400g": {"casper400g": "mlib_devel_400g.cli:main"},
    "casper400g-board-server": {"casper400g-board-server": "casper400g_board_server.cli:main"},
    "casper400g-rx": {"casper400g-rx": "casper400g_rx.cli:main"},
    "casper400g-casperfpga": {},
}
TOOLFLOW_COMMANDS = {"build", "mkfpg", "install-mlib-devel", "twin"}
DEV_COMMANDS = {"regs", "simulink-gen", "demo", "soak", "bench", "synth"}


def subcommands(parser: argparse.ArgumentParser) -> set[str]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(action.choices)


def test_installed_cli_has_the_toolflow_and_twin_commands_only() -> None:
    assert subcommands(cli.build_parser()) == TOOLFLOW_COMMANDS


def test_developer_commands_are_the_checkouts() -> None:
    assert subcommands(dev_cli.build_parser()) == DEV_COMMANDS


@pytest.mark.parametrize("command", sorted(DEV_COMMANDS | {"rx", "board-server"}))
def test_other_jobs_are_not_subcommands_of_the_installed_cli(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([command])
    assert exc.value.code == 2
    assert f"invalid choice: '{command}'" in capsys.readouterr().err


def test_regs_check_passes_on_the_committed_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert dev_cli.main(["regs", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_unknown_command_is_an_error() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2


@pytest.mark.parametrize(
    ("module", "prog"),
    [
        ("mlib_devel_400g", "casper400g"),
        ("casper400g_board_server", "casper400g-board-server"),
        ("casper400g_dev", "python -m casper400g_dev"),
        ("casper400g_rx", "casper400g-rx"),
    ],
)
def test_each_command_line_runs_as_a_module(module: str, prog: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: {prog} "), out.stdout[:200]


@pytest.mark.parametrize("module", ["mlib_devel_400g", "casper400g_board_server"])
def test_version(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1] == metadata.version(
        "casper400g" if module == "mlib_devel_400g" else "casper400g-board-server"
    )


@pytest.mark.parametrize("dist", sorted(CONSOLE_SCRIPTS))
def test_console_scripts_of_each_installed_distribution(dist: str) -> None:
    """What `make venv` installed: each distribution's own scripts, no other's."""
    try:
        found = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        pytest.fail(f"{dist} is not installed in this environment (make venv installs all four)")
    scripts = {e.name: e.value for e in found.entry_points if e.group == "console_scripts"}
    assert scripts == CONSOLE_SCRIPTS[dist]
