"""What this project's platform blocks share, in mlib_devel's terms.

:func:`system_block` is the ``xps:sys_block`` child every CASPER platform block creates in
``gen_children`` (mlib_devel's own sys_block inside mlib_devel, the stand-in runtime's
otherwise), with the identity the platform YAML gives under ``sys_block``.
"""

from __future__ import annotations

from typing import Any

from .yellow_block import YellowBlock

SYS_BLOCK_KEYS = ("board_id", "rev_maj", "rev_min", "rev_rcs")


def system_block(platform_block: Any) -> Any:
    """The ``xps:sys_block`` child of ``platform_block`` (values from the YAML's
    ``sys_block`` section; every key is required, so a platform cannot ship without one)."""
    plat = platform_block.platform
    conf = plat.conf.get("sys_block") or {}
    missing = [k for k in SYS_BLOCK_KEYS if k not in conf]
    if missing:
        raise ValueError(
            f"platform {plat.name}: sys_block lacks {', '.join(missing)} (the identity "
            "casperfpga reads from sys_board_id / sys_rev / sys_rev_rcs)"
        )
    blk = {
        "fullpath": platform_block.fullpath,
        "tag": "xps:sys_block",
        "scratchpad": "0",
    }
    blk.update({k: str(conf[k]) for k in SYS_BLOCK_KEYS})
    return YellowBlock.make_block(blk, plat, hdl_root=platform_block.hdl_root)
