"""`casper400g install-mlib-devel <path>`: overlay the 400GbE block onto an mlib_devel
checkout.

Copies the yellow block (with its interface description ``fourhundred_gbe.json`` and the
register map it reads, as ``yellow_blocks/fourhundred_gbe_regmap.py``), the core's HDL,
any platforms listed in :data:`MLIB_PLATFORMS` and the Simulink files (``xps_library/``)
that exist in this tree, then adds ``'xps:fourhundred_gbe'`` to the tag list in
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
# Board platforms meant for mlib_devel (its platform blocks provide mlib_devel's signals);
# copied when this tree has them. generic400g is this project's test platform only.
MLIB_PLATFORMS = ("vpk180",)
DESIGN_INFO = "xps_library/gen_xps_add_design_info.m"


class InstallError(RuntimeError):
    pass


def _plan(dest: Path) -> list[tuple[Path, Path]]:
    lib = paths.JASPER_LIBRARY
    pairs: list[tuple[Path, Path]] = []
    yb = lib / "yellow_blocks"
    for name in ("fourhundred_gbe.py", "fourhundred_gbe.json", "fourhundred_gbe_hdl.py"):
        pairs.append((yb / name, dest / "jasper_library/yellow_blocks" / name))
    pairs.append(
        (
            paths.CASPERFPGA_EXT / "fhg_regmap.py",
            dest / "jasper_library/yellow_blocks/fourhundred_gbe_regmap.py",
        )
    )
    for sub in ("fourhundred_gbe",):
        for src in sorted((paths.HDL_ROOT / sub).rglob("*")):
            if src.is_file() and "__pycache__" not in src.parts:
                rel = src.relative_to(paths.HDL_ROOT)
                pairs.append((src, dest / "jasper_library/hdl_sources" / rel))
    boot = paths.HDL_ROOT / "fhg_toolflow" / "fhg_gbe_boot.sv"
    pairs.append((boot, dest / "jasper_library/hdl_sources/fhg_toolflow/fhg_gbe_boot.sv"))
    for plat in MLIB_PLATFORMS:
        yaml_src = lib / "platforms" / f"{plat}.yaml"
        if yaml_src.is_file():
            pairs.append((yaml_src, dest / "jasper_library/platforms" / f"{plat}.yaml"))
            blk = yb / f"{plat}.py"
            if blk.is_file():
                pairs.append((blk, dest / "jasper_library/yellow_blocks" / f"{plat}.py"))
    xps = paths.XPS_LIBRARY
    if xps.is_dir():
        for src in sorted(xps.rglob("*")):
            # Our README documents this tree; a checkout's own README stays untouched.
            if src.is_file() and "__pycache__" not in src.parts and src.name != "README.md":
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
