"""Fuzzing the frame parser, format decoder, SPEAD parser and engine, the pcap reader, the
RDMA ring's immediates and slot headers, mlx5 completions and strides, and the header-split
placement (atheris; short unless --run-slow). Each target asserts its conservation laws."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fuzz_rss_limit

TOOLS = Path(__file__).resolve().parents[2] / "receiver" / "tools"
TARGET = TOOLS / "fuzz_decoder.py"
SPEAD_TARGET = TOOLS / "fuzz_spead.py"
# Further targets and the runs of their short form (a few tens of seconds each here).
TARGETS = {
    "pcap": (TOOLS / "fuzz_pcap.py", 5000),
    "rdma": (TOOLS / "fuzz_rdma.py", 20000),
    "mlx5": (TOOLS / "fuzz_mlx5.py", 20000),
    "split": (TOOLS / "fuzz_split.py", 4000),
}
# The short form ends at its runs or after this long, whichever comes first: CI's time
# stays bounded on a slow or busy runner.
SHORT_SECONDS = "-max_total_time=15"
# Inputs that once found bugs; every run replays them first.
SEEDS = TOOLS / "fuzz_seeds"


def run_fuzzer(*flags: str, timeout: float, corpus: Path, target: Path = TARGET) -> None:
    pytest.importorskip("atheris", reason="atheris (dev extra) drives the fuzz target")
    # New corpus entries go to the first directory (temporary); the seeds are only read.
    # An input that fails is written there too, not into the checkout.
    out = subprocess.run(
        [
            sys.executable,
            str(target),
            "-seed=1",
            fuzz_rss_limit(),
            f"-artifact_prefix={corpus}/",
            *flags,
            str(corpus),
            str(SEEDS),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "Done" in out.stderr


def test_fuzz_short(tmp_path: Path) -> None:
    run_fuzzer("-runs=20000", SHORT_SECONDS, timeout=300, corpus=tmp_path)


def test_fuzz_spead_short(tmp_path: Path) -> None:
    run_fuzzer("-runs=20000", SHORT_SECONDS, timeout=300, corpus=tmp_path, target=SPEAD_TARGET)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_target_short(tmp_path: Path, name: str) -> None:
    target, runs = TARGETS[name]
    run_fuzzer(f"-runs={runs}", SHORT_SECONDS, timeout=300, corpus=tmp_path, target=target)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_target_long(tmp_path: Path, name: str) -> None:
    run_fuzzer("-max_total_time=600", timeout=900, corpus=tmp_path, target=TARGETS[name][0])


@pytest.mark.slow
def test_fuzz_long(tmp_path: Path) -> None:
    run_fuzzer("-max_total_time=600", timeout=900, corpus=tmp_path)


@pytest.mark.slow
def test_fuzz_spead_long(tmp_path: Path) -> None:
    run_fuzzer("-max_total_time=600", timeout=900, corpus=tmp_path, target=SPEAD_TARGET)
