"""Where the twin keeps its compiled builds and unpacked images, and the lock that lets one
process at a time make an item of that cache.

``CASPER400G_SIM_CACHE`` moves the cache. Otherwise a twin run from a casper400g checkout
(an editable install) shares the simulations' cache there (``.cache/sim``), and an
installed twin uses the user's cache folder (``$XDG_CACHE_HOME/casper400g/sim``, by default
``~/.cache/casper400g/sim``).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _default_cache() -> Path:
    if os.environ.get("CASPER400G_SIM_CACHE"):
        return Path(os.environ["CASPER400G_SIM_CACHE"])
    root = Path(__file__).resolve().parent.parent
    if (root / "casper400g_dev").is_dir() and (root / "pyproject.toml").is_file():
        return root / ".cache" / "sim"
    user_cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(user_cache) / "casper400g" / "sim"


SIM_CACHE = _default_cache()


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
