"""Fuzzing the frame parser, format decoder and engine (atheris; short unless --run-slow)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TARGET = Path(__file__).resolve().parents[2] / "receiver" / "tools" / "fuzz_decoder.py"


def run_fuzzer(*flags: str, timeout: float) -> None:
    pytest.importorskip("atheris", reason="atheris (dev extra) drives the fuzz target")
    out = subprocess.run(
        [sys.executable, str(TARGET), "-seed=1", *flags],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "Done" in out.stderr


def test_fuzz_short() -> None:
    run_fuzzer("-runs=20000", timeout=300)


@pytest.mark.slow
def test_fuzz_long() -> None:
    run_fuzzer("-max_total_time=600", timeout=900)
