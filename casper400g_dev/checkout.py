"""Folders of the casper400g checkout that the developer tools read and write."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEV_DIR = ROOT / "casper400g_dev"
VERIFICATION_DIR = ROOT / "verification"
DOCS_DIR = ROOT / "docs"
EXAMPLES_DIR = ROOT / "examples"
BUILD_DIR = ROOT / "build"

# Simulation builds are cached here, keyed by a hash of their sources. CASPER400G_SIM_CACHE
# moves the cache, so a long run keeps its model while the tree is rebuilt beside it.
SIM_CACHE = Path(os.environ.get("CASPER400G_SIM_CACHE") or ROOT / ".cache" / "sim")
