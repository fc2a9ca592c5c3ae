"""Fuzzing the .fpg header parser and the board server's request parser and upload path
(atheris; a bounded run each, ten minutes each with --run-slow). The targets are in
tests/fuzz/; each asserts its counts are conserved (see their docstrings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, fuzz_rss_limit

FUZZ = REPO_ROOT / "tests" / "fuzz"
# Runs per target in the short test: each about half a minute on one core (a request or an
# upload is served start to end, worker threads and temporary files included).
SHORT_RUNS = {"fpg_header": 20000, "board_requests": 3000, "board_upload": 2000}


def run_fuzzer(name: str, *flags: str, timeout: float, corpus: Path) -> None:
    pytest.importorskip("atheris", reason="atheris (dev extra) drives the fuzz targets")
    target = FUZZ / f"fuzz_{name}.py"
    # New corpus entries go to the first directory (temporary); the seeds (inputs that once
    # found bugs, replayed first) are only read.
    seeds = [str(d) for d in [FUZZ / "seeds" / name] if d.is_dir()]
    out = subprocess.run(
        [sys.executable, str(target), "-seed=1", fuzz_rss_limit(), *flags, str(corpus), *seeds],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=corpus,  # where a crashing input is written
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "Done" in out.stderr


@pytest.mark.parametrize("name", SHORT_RUNS)
def test_fuzz_short(name: str, tmp_path: Path) -> None:
    run_fuzzer(name, f"-runs={SHORT_RUNS[name]}", timeout=300, corpus=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", SHORT_RUNS)
def test_fuzz_long(name: str, tmp_path: Path) -> None:
    run_fuzzer(name, "-max_total_time=600", timeout=900, corpus=tmp_path)
