"""Where the toolflow's library files live, in a checkout and in an installed wheel.

A checkout keeps ``jasper_library/`` (the mlib_devel overlay: yellow blocks, platforms,
HDL), ``jasper_runtime/`` (the stand-in for mlib_devel's runtime) and ``xps_library/`` (the
Simulink block) at its root, beside this package; a wheel carries them inside the package
(the wheel's ``sources`` in pyproject.toml). Everything here works in both. What only a
checkout has (the developer tools, the verification code, the docs) is
``casper400g_dev.checkout``'s, and nothing installed reaches it.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _library_root() -> Path:
    """The folder holding ``jasper_library/``, ``jasper_runtime/`` and ``xps_library/``: the
    package in a wheel, else the checkout."""
    if (PACKAGE_DIR / "jasper_library").is_dir():
        return PACKAGE_DIR
    return PACKAGE_DIR.parent


LIBRARY_ROOT = _library_root()
# What goes into an mlib_devel checkout (the overlay: yellow blocks, platforms, HDL) ...
JASPER_LIBRARY = LIBRARY_ROOT / "jasper_library"
XPS_LIBRARY = LIBRARY_ROOT / "xps_library"
HDL_ROOT = JASPER_LIBRARY / "hdl_sources"
# ... and the stand-in for mlib_devel's runtime that builds designs without it.
JASPER_RUNTIME = LIBRARY_ROOT / "jasper_runtime"
RUNTIME_HDL = JASPER_RUNTIME / "hdl_sources"
FHG_HDL = HDL_ROOT / "fourhundred_gbe"
REGS_DIR = FHG_HDL / "regs"
REGS_RDL = REGS_DIR / "fhg_regs.rdl"
# The 400GbE block's one source list (Verilator -F style, paths relative to it).
CORE_FILE_LIST = FHG_HDL / "fhg_core.f"

# A sibling package both in a checkout and in site-packages.
CASPERFPGA_EXT = PACKAGE_DIR.parent / "casperfpga_ext"


def core_sources(file_list: Path = CORE_FILE_LIST) -> list[Path]:
    """The sources ``file_list`` names, in compile order, read with the yellow block's own
    reader (``fourhundred_gbe_hdl.file_list``) so the toolflow, the simulations and an
    mlib_devel build all see the same list."""
    import importlib.util

    helper = JASPER_LIBRARY / "yellow_blocks" / "fourhundred_gbe_hdl.py"
    spec = importlib.util.spec_from_file_location("_fhg_file_list", helper)
    assert spec is not None and spec.loader is not None, helper
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [Path(p).resolve() for p in module.file_list(file_list)]


_MOVED = {
    "REPO_ROOT": "casper400g_dev.checkout.ROOT (checkout only) or paths.LIBRARY_ROOT",
    "DOCS_DIR": "casper400g_dev.checkout.DOCS_DIR",
    "SIM_CACHE": "casper400g_dev.checkout.SIM_CACHE",
}


def __getattr__(name: str) -> object:
    # Checkout-only locations left this module so that installed code cannot depend on
    # them; say where they went instead of a bare AttributeError.
    if name in _MOVED:
        raise AttributeError(f"mlib_devel_400g.paths.{name} moved: use {_MOVED[name]}")
    raise AttributeError(f"module 'mlib_devel_400g.paths' has no attribute {name!r}")
