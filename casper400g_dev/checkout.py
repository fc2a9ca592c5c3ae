"""Folders of the casper400g checkout that the developer tools read and write."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def cache_lock(path: Path) -> Iterator[None]:
    """Hold the lock file ``path``: one builder of a cached item at a time (pytest-xdist
    workers and a second shell share the caches)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
