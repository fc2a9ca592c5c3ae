"""Where the project's sources live, found from this package's location."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent

# What goes into an mlib_devel checkout (the overlay: yellow blocks, platforms, HDL) ...
JASPER_LIBRARY = REPO_ROOT / "jasper_library"
HDL_ROOT = JASPER_LIBRARY / "hdl_sources"
# ... and the stand-in for mlib_devel's runtime that builds designs without it.
JASPER_RUNTIME = REPO_ROOT / "jasper_runtime"
RUNTIME_HDL = JASPER_RUNTIME / "hdl_sources"
FHG_HDL = HDL_ROOT / "fourhundred_gbe"
REGS_DIR = FHG_HDL / "regs"
REGS_RDL = REGS_DIR / "fhg_regs.rdl"

CASPERFPGA_EXT = REPO_ROOT / "casperfpga_ext"
DOCS_DIR = REPO_ROOT / "docs"

# Simulation builds are cached here, keyed by a hash of their sources. CASPER400G_SIM_CACHE
# moves the cache, so a long run keeps its model while the tree is rebuilt beside it.
SIM_CACHE = Path(os.environ.get("CASPER400G_SIM_CACHE") or REPO_ROOT / ".cache" / "sim")


def require_source_tree() -> None:
    """Raise a clear error when the package runs outside a casper400g checkout."""
    if not REGS_RDL.is_file():
        raise FileNotFoundError(
            f"casper400g source tree not found: expected {REGS_RDL}. "
            "The toolflow commands run from a checkout installed with `pip install -e .`."
        )
