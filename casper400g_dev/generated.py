"""Files generated from a single source and committed (the register map's outputs, the
Simulink block's interface): which differ from what the generator renders, and rewriting
them. Paths are relative to the checkout (``checkout.ROOT``) unless a root is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from . import checkout

P = TypeVar("P", str, Path)


def stale_files(files: Mapping[P, str], root: Path | None = None) -> list[P]:
    """The paths of ``files`` ({relative path: text}) whose file is missing or differs."""
    base = root or checkout.ROOT
    return [
        rel
        for rel, text in files.items()
        if not (base / rel).is_file() or (base / rel).read_text() != text
    ]


def write_files(files: Mapping[P, str], root: Path | None = None) -> list[P]:
    """Write the files that changed; return their relative paths."""
    base = root or checkout.ROOT
    changed = stale_files(files, base)
    for rel in changed:
        dst = base / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(files[rel])
    return changed
