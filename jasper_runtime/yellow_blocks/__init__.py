"""Yellow blocks: one module per block tag (``xps:<tag>`` -> ``yellow_blocks/<tag>.py``).

This package is the stand-in for mlib_devel's ``jasper_library/yellow_blocks``: it holds
the runtime's own blocks (``yellow_block``, ``sw_reg``, ``sys_block``, ``generic400g``)
and, as mlib_devel's would after ``casper400g install-mlib-devel``, the overlay's blocks
from ``jasper_library/yellow_blocks`` (the sibling folder, added to the package path), so a
block module sees the same package either way.
"""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))
OVERLAY_DIR = os.path.join(
    os.path.dirname(os.path.dirname(_HERE)), "jasper_library", "yellow_blocks"
)
if os.path.isdir(OVERLAY_DIR) and OVERLAY_DIR not in __path__:
    __path__.append(OVERLAY_DIR)
