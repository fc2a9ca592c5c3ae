"""A hardware platform: ``platforms/<name>.yaml`` (see jasper_library/README.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

REQUIRED_KEYS = (
    "name",
    "fpga",
    "family",
    "manufacturer",
    "backend_target",
    "mmbus_architecture",
    "mmbus_base_address",
)


class PlatformError(ValueError):
    """The platform does not exist or its YAML is incomplete."""


def platform_dirs(extra: list[Path] | None = None) -> list[Path]:
    """Where platforms are looked up: ``extra``, $CASPER400G_PLATFORM_PATH, the runtime's,
    the overlay's (jasper_library/platforms)."""
    dirs = list(extra or [])
    env = os.environ.get("CASPER400G_PLATFORM_PATH")
    if env:
        dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    here = Path(__file__).resolve().parent
    dirs.append(here / "platforms")  # the runtime's own (board-less) platforms
    dirs.append(here.parent / "jasper_library" / "platforms")  # the overlay's boards
    return dirs


def _merge(base: dict[Any, Any], over: dict[Any, Any], where: str, ctx: str) -> dict[Any, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(key, str) and key.isdigit() and ctx.endswith(".cages"):
            key = int(key)  # cages are numbered; a design file's keys may arrive as text
        # New entries only where the platform lists things (cages, pin groups); elsewhere an
        # unknown key is a typo that would otherwise be ignored.
        if key not in base and not ctx.endswith((".cages", ".pins")):
            known = ", ".join(str(k) for k in base)
            raise PlatformError(f"{where}: {ctx}.{key}: no such platform key (known: {known})")
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            out[key] = _merge(base[key], value, where, f"{ctx}.{key}")
        elif key in base and isinstance(base[key], dict) and not isinstance(value, dict):
            raise PlatformError(f"{where}: {ctx}.{key} must be a mapping (as in the platform)")
        else:
            out[key] = value
    return out


class Platform:
    def __init__(self, name: str, search: list[Path] | None = None) -> None:
        dirs = platform_dirs(search)
        for d in dirs:
            path = d / f"{name}.yaml"
            if path.is_file():
                break
        else:
            known = sorted({p.stem for d in dirs if d.is_dir() for p in d.glob("*.yaml")})
            raise PlatformError(
                f"unknown platform {name!r} (known: {', '.join(known) or 'none'}; "
                f"searched {', '.join(str(d) for d in dirs)})"
            )
        self.path = path
        self.requested = name
        try:
            conf = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise PlatformError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(conf, dict):
            raise PlatformError(f"{path}: expected a mapping at the top level")
        self._set_conf(conf)

    def _set_conf(self, conf: dict[str, Any]) -> None:
        path = self.path
        missing = [k for k in REQUIRED_KEYS if k not in conf]
        if missing:
            raise PlatformError(f"{path}: missing key(s) {', '.join(missing)}")
        if conf["name"] != self.requested:
            raise PlatformError(
                f"{path}: names itself {conf['name']!r}, expected {self.requested!r}"
            )
        self.conf: dict[str, Any] = conf
        self.name: str = conf["name"]
        self.fpga: str = conf["fpga"]
        self.family: str = conf["family"]
        self.manufacturer: str = conf["manufacturer"]
        self.backend_target: str = conf["backend_target"]
        arch = conf["mmbus_architecture"]
        self.mmbus_architecture: list[str] = arch if isinstance(arch, list) else [arch]
        if self.mmbus_architecture[0] != "AXI4-Lite":
            raise PlatformError(
                f"{path}: mmbus_architecture {arch!r}: this toolflow builds AXI4-Lite only"
            )
        self.mmbus_base_address: int = int(conf["mmbus_base_address"])
        self.mmbus_address_window: int | None = conf.get("mmbus_address_window")
        self.provides: list[str] = list(conf.get("provides") or [])
        self.sources: list[str] = list(conf.get("sources") or [])
        self.constraints: list[str] = list(conf.get("constraints") or [])
        self.pins: dict[str, Any] = dict(conf.get("pins") or {})
        # MHz; the design's XSG block (clk_rate) overrides it, as in mlib_devel.
        self.user_clk_rate: float | None = conf.get("user_clk_mhz")
        self.axil_clk_mhz: float = float(conf.get("axil_clk_mhz", 100.0))

    def apply_options(self, options: dict[str, Any] | None, where: str = "design") -> None:
        """Merge ``options`` over the YAML, key by key (mappings recursively, anything else
        replaced): how a design overrides a platform value (``platform_options``)."""
        if not options:
            return
        if not isinstance(options, dict):
            raise PlatformError(f"{where}: platform_options must be a mapping, got {options!r}")
        for key in ("name", "family"):
            if key in options:
                raise PlatformError(f"{where}: platform_options cannot change {key!r}")
        user_clk = self.user_clk_rate
        conf = _merge(self.conf, options, where, "platform_options")
        self._set_conf(conf)
        if user_clk != conf.get("user_clk_mhz") and "user_clk_mhz" not in options:
            self.user_clk_rate = user_clk  # keep an XSG clk_rate already applied

    def __repr__(self) -> str:
        return f"<Platform {self.name} ({self.fpga})>"
