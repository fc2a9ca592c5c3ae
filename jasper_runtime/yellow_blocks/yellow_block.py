"""The YellowBlock base class: one object per block of a design (jasper's API).

Every key of the block's ``jasper.per`` entry becomes an attribute. ``fullname`` is the
block path with ``/`` replaced by ``_`` (the prefix of the block's Simulink gateways, and so
of its signals in ``top.v``); ``unique_name`` is the path without the model name (the
software name of its registers). Subclasses set their requirements in ``initialize`` and
override the hooks they need; see jasper_library/README.md for the order they run in.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any

from .yellow_block_typecodes import TYPECODE_UNKNOWN

# The runtime's own HDL (interconnect, software register, system block): searched after the
# design's HDL root, as mlib_devel's hdl_sources holds both its own and the overlay's HDL.
RUNTIME_HDL = Path(__file__).resolve().parents[1] / "hdl_sources"

TCL_STAGES = (
    "init",
    "create_bd",
    "pre_synth",
    "synth",
    "post_synth",
    "pre_impl",
    "impl",
    "post_impl",
    "pre_bitgen",
    "bitgen",
    "post_bitgen",
    "prom_gen",
)


class BlockError(ValueError):
    """A block's parameters are invalid (a design rule check failed); names the block."""


class YellowBlock:
    # Parameters a design may set, with their defaults (the block's mask). Blocks
    # that declare it get unknown keys refused by the design frontend.
    PARAMETERS: dict[str, Any] | None = None

    @staticmethod
    def make_block(blk: dict[str, Any], platform: Any, hdl_root: str | None = None) -> YellowBlock:
        """The block object for one ``jasper.per`` entry (its class, or its factory's pick)."""
        tag = str(blk.get("tag", ""))
        if not tag.startswith("xps:") or len(tag) <= 4:
            raise BlockError(f"block {blk.get('fullpath', '?')}: tag {tag!r} is not xps:<name>")
        name = tag[4:]
        try:
            module = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{name}":
                raise
            raise BlockError(
                f"block {blk.get('fullpath', '?')}: no yellow block for tag {tag!r} "
                f"(expected yellow_blocks/{name}.py)"
            ) from None
        cls = getattr(module, name, None)
        if cls is None:
            raise BlockError(f"yellow_blocks/{name}.py defines no class {name}")
        factory = getattr(cls, "factory", None)
        if callable(factory):
            return factory(blk, platform, hdl_root)
        return cls(blk, platform, hdl_root)

    def __init__(self, blk: dict[str, Any], platform: Any, hdl_root: str | None = None) -> None:
        self.blk = blk
        self.platform = platform
        self.hdl_root = hdl_root
        self.logger = logging.getLogger(f"jasper.{type(self).__name__}")
        for key in ("tag", "fullpath"):
            if key not in blk:
                raise BlockError(f"block {blk!r} has no {key!r}")
        for key, value in blk.items():
            setattr(self, key, value)
        self.tag: str = blk["tag"]
        self.blocktype = self.tag[4:]
        self.fullpath: str = blk["fullpath"]
        self.name: str = blk.get("name", self.fullpath.split("/")[-1])
        self.fullname = self.fullpath.replace("/", "_").replace(" ", "_")
        parts = self.fullpath.split("/", 1)
        self.unique_name = (parts[1] if len(parts) > 1 else parts[0]).replace("/", "_")
        self.requires: list[str] = []
        self.provides: list[str] = []
        self.exc_requires: list[str] = []
        self.sources: list[str] = []
        self.ips: list[dict[str, Any]] = []
        self.platform_support = "all"
        self.typecode = TYPECODE_UNKNOWN
        self.initialize()

    # ------------------------------------------------------------------ helpers
    def add_source(self, path: str) -> None:
        """An HDL source (a path under the HDL root; globs allowed)."""
        if path not in self.sources:
            self.sources.append(path)

    def error(self, message: str) -> BlockError:
        return BlockError(f"{self.fullpath} ({self.tag}): {message}")

    def source_files(self) -> list[Path]:
        """The block's sources resolved under the HDL root (then the runtime's HDL), globs
        expanded."""
        roots = [Path(self.hdl_root or "."), RUNTIME_HDL]
        out: list[Path] = []
        for src in self.sources:
            for root in roots:
                if any(c in src for c in "*?["):
                    matches = sorted(root.glob(src))
                else:
                    matches = [root / src] if (root / src).is_file() else []
                if matches and all(m.is_file() for m in matches):
                    break
            else:
                raise self.error(
                    f"HDL source {src} not found under {' or '.join(str(r) for r in roots)}"
                )
            out.extend(matches)
        return out

    # ------------------------------------------------------------------ hooks
    def initialize(self) -> None:
        """Set requires/provides/sources/typecode; read the platform's settings."""

    def drc(self) -> None:
        """Raise BlockError (via ``self.error``) when the block cannot be built."""

    def gen_children(self) -> list[YellowBlock]:
        return []

    def modify_top(self, top: Any) -> None:
        """Add this block's instances, ports and bus interfaces to ``top``."""

    def finalize_top(self, top: Any) -> Any:
        """Runs after every block's ``modify_top`` (sees the whole design); returns the top
        level to go on with (mlib_devel's contract: usually ``top`` itself)."""
        return top

    def gen_constraints(self) -> list[Any]:
        return []

    def gen_tcl_cmds(self) -> dict[str, list[str]]:
        return {}

    def gateways(self) -> list[tuple[str, str, int]]:
        """The block's user-side ports as (suffix, dir, width); signal ``<fullname>_<suffix>``.

        ``dir`` is seen from the block: ``in`` is driven by the user's logic.
        """
        return []

    def meta(self) -> dict[str, str]:
        """The block's parameters for ``?meta`` lines in the .fpg (every jasper.per key)."""
        return {str(k): str(v) for k, v in self.blk.items() if k not in ("tag",)}
