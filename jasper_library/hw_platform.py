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
    """Where platforms are looked up: ``extra``, $CASPER400G_PLATFORM_PATH, the library's."""
    dirs = list(extra or [])
    env = os.environ.get("CASPER400G_PLATFORM_PATH")
    if env:
        dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    dirs.append(Path(__file__).resolve().parent / "platforms")
    return dirs


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
        try:
            conf = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise PlatformError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(conf, dict):
            raise PlatformError(f"{path}: expected a mapping at the top level")
        missing = [k for k in REQUIRED_KEYS if k not in conf]
        if missing:
            raise PlatformError(f"{path}: missing key(s) {', '.join(missing)}")
        if conf["name"] != name:
            raise PlatformError(f"{path}: names itself {conf['name']!r}, expected {name!r}")
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

    def __repr__(self) -> str:
        return f"<Platform {self.name} ({self.fpga})>"
