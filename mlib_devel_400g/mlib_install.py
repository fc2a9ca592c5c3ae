"""`casper400g install-mlib-devel <path>`: overlay the 400GbE block onto an mlib_devel
checkout.

``jasper_library/`` of this tree holds exactly what goes into a checkout's
``jasper_library/`` (the yellow blocks with their interface description and register map,
the VPK180 platform and its blocks, the core's HDL); every file of it is copied to the same
place there, except its README (a checkout's own stays untouched). The Simulink files
(``xps_library/``) follow, then ``'xps:fourhundred_gbe'`` is added to the tag list in
``xps_library/gen_xps_add_design_info.m``. Files already identical are left alone, so a
second run changes nothing. ``dry_run`` only lists what would change.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

from . import paths

TAG = "xps:fourhundred_gbe"
MARKERS = (
    "jasper_library/yellow_blocks/yellow_block.py",
    "xps_library/gen_xps_add_design_info.m",
)
DESIGN_INFO = "xps_library/gen_xps_add_design_info.m"


class InstallError(RuntimeError):
    pass


def _files(tree: Path) -> list[Path]:
    """The files of ``tree`` an install copies: no caches, no READMEs (ours document this
    tree; a checkout's own stay untouched)."""
    return [
        src
        for src in sorted(tree.rglob("*"))
        if src.is_file()
        and "__pycache__" not in src.parts
        and src.suffix != ".pyc"
        and src.name != "README.md"
    ]


def _plan(dest: Path) -> list[tuple[Path, Path]]:
    pairs: list[tuple[Path, Path]] = []
    lib = paths.JASPER_LIBRARY
    for src in _files(lib):
        pairs.append((src, dest / "jasper_library" / src.relative_to(lib)))
    xps = paths.XPS_LIBRARY
    if xps.is_dir():
        for src in _files(xps):
            pairs.append((src, dest / "xps_library" / src.relative_to(xps)))
    return pairs


def add_tag(text: str, source: str) -> str | None:
    """``text`` with TAG added to the design-info tag list; None when already there."""
    if f"'{TAG}'" in text:
        return None
    # The list of tags is a MATLAB cell array of 'xps:...' strings; add ours after the
    # last Ethernet core's entry, keeping the separator style of the list.
    found = list(re.finditer(r"'xps:(?:\w*gbe\w*)'", text))
    if not found:
        raise InstallError(
            f"{source}: found no list of block tags (a cell array with an 'xps:...gbe' entry); "
            f"add '{TAG}' to it by hand"
        )
    m = found[-1]
    after = text[m.end() :]
    sep = re.match(r"\s*([,;]?)", after)
    glue = sep.group(1) if sep and sep.group(1) else ","
    return text[: m.end()] + f"{glue} '{TAG}'" + text[m.end() :]


def install(
    dest: Path, dry_run: bool = False, say: Callable[[str], None] | None = print
) -> list[str]:
    """Install into ``dest``; return the list of changes (made, or planned with dry_run)."""
    out = say or (lambda _m: None)
    dest = Path(dest)
    if not dest.is_dir():
        raise InstallError(f"{dest}: no such directory")
    missing = [m for m in MARKERS if not (dest / m).is_file()]
    if missing:
        raise InstallError(f"{dest} is not an mlib_devel checkout (missing {', '.join(missing)})")
    info = dest / DESIGN_INFO
    # Checked before anything is copied: a checkout we cannot finish is left untouched.
    new = add_tag(info.read_text(), str(info))
    changes: list[str] = []
    for src, dst in _plan(dest):
        data = src.read_bytes()
        if dst.is_file() and dst.read_bytes() == data:
            continue
        verb = "update" if dst.exists() else "add"
        changes.append(f"{verb} {dst.relative_to(dest)}")
        if not dry_run:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
    if new is not None:
        changes.append(f"edit {DESIGN_INFO}: add '{TAG}' to the design-info tag list")
        if not dry_run:
            info.write_text(new)
    prefix = "would " if dry_run else ""
    for c in changes:
        out(f"  {prefix}{c}")
    out(
        f"{len(changes)} change(s) {'planned' if dry_run else 'made'} in {dest}"
        if changes
        else f"{dest} is up to date"
    )
    return changes
