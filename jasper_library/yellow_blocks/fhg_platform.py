"""What this project's platform blocks share, in mlib_devel's terms.

:func:`clock_groups` writes clock-group constraints that find clocks made inside IP.
:func:`user_reset_sync` makes ``user_rst`` from the platform's reset.
:func:`system_block` is the ``xps:sys_block`` child every CASPER platform block creates in
``gen_children`` (mlib_devel's own sys_block inside mlib_devel, the stand-in runtime's
otherwise), with the identity the platform YAML gives under ``sys_block``.
"""

from __future__ import annotations

from typing import Any

from constraints import RawConstraint

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


def user_reset_sync(top: Any, source: str) -> None:
    """``user_rst``: ``source`` (an active-high reset in another clock domain) synchronised
    into user_clk (``fhg_sync_bits``), for the system block and the software registers."""
    rst = top.get_instance("fhg_sync_bits", "user_rst_sync")
    rst.add_parameter("WIDTH", 1)
    rst.add_port("clk", "user_clk", parent_sig=False)
    rst.add_port("rst", "1'b0", parent_sig=False)
    rst.add_port("d", source)
    rst.add_port("q", "user_rst")


def clock_ref(platform: Any, clock: str) -> str:
    """Tcl that finds ``clock``: the platform's ``clock_refs`` entry for clocks made inside IP
    (a block design's clocking wizard has no clock of our name), else the clock by name."""
    refs = platform.conf.get("clock_refs") or {}
    if clock in refs:
        return str(refs[clock])
    return f"[get_clocks -include_generated_clocks {{{clock}}}]"


def clock_groups(platform: Any, clocks: list[str]) -> list[Any]:
    """Raw ``set_clock_groups -asynchronous`` constraints for every pair of ``clocks`` (raw
    text, so mlib_devel's backend and the stand-in write the same line)."""
    out = []
    for i, a in enumerate(clocks):
        for b in clocks[i + 1 :]:
            out.append(
                RawConstraint(
                    f"set_clock_groups -asynchronous -group {clock_ref(platform, a)} "
                    f"-group {clock_ref(platform, b)}"
                )
            )
    return out


def instantiated_modules(top: Any) -> list[str]:
    """The module names instantiated in ``top`` so far, in either runtime: mlib_devel's
    ``top.instances`` is ``{block: {instance: VerilogModule}}`` (the module's ``name`` is the
    entity), the stand-in's ``{instance: Instance}`` (with ``entity``)."""
    out: list[str] = []
    for value in top.instances.values():
        if isinstance(value, dict):
            out.extend(inst.name for inst in value.values())
        else:
            out.append(value.entity)
    return out
