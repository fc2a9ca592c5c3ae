"""``xps:xsg``: the design's platform block (the XSG core config block of a model), as in
mlib_devel.

It names the platform (``hw_sys``), the design clock's rate (``clk_rate``, MHz) and its
source (``clk_src``); ``gen_children`` creates the platform's own block (``xps:<platform>``)
with the same parameters. When the source is a platform clock such as ``sys_clk`` it
requires that clock and its 90/180/270-degree phases and drives ``user_clk``,
``user_clk90``, ``user_clk180`` and ``user_clk270`` from them, as mlib_devel's does. A source
of ``user_clk`` means the platform drives ``user_clk`` itself (the board-less test
platform, whose top level takes it as a port): nothing is assigned, so no
``assign user_clk = user_clk`` can appear.
"""

from __future__ import annotations

from .yellow_block import YellowBlock

PHASES = ("", "90", "180", "270")


class xsg(YellowBlock):
    def initialize(self) -> None:
        self.clk_src = str(self.blk.get("clk_src", "user_clk"))
        if self.clk_src != "user_clk":
            self.requires = [self.clk_src + ph for ph in PHASES]
            self.provides = ["user_clk" + ph for ph in PHASES]

    def gen_children(self) -> list[YellowBlock]:
        params = dict(self.blk)
        params["tag"] = f"xps:{self.platform.name}"
        return [YellowBlock.make_block(params, self.platform, self.hdl_root)]

    def modify_top(self, top) -> None:  # noqa: ANN001
        if self.clk_src == "user_clk":
            return
        for ph in PHASES:
            top.add_signal("user_clk" + ph)
            top.assign_signal("user_clk" + ph, self.clk_src + ph)
        # The phases are there for designs that use them (mlib_devel drives them always);
        # marked as possibly unused so the generated top lints clean either way.
        top.add_signal("unused_user_clk_phases")
        top.assign_signal("unused_user_clk_phases", "^{user_clk90, user_clk180, user_clk270}")

    def meta(self) -> dict[str, str]:
        return {}
