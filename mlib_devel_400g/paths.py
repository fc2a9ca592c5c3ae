"""Where the toolflow's library files live, in a checkout and in an installed wheel.

A checkout keeps ``jasper_library/`` (the mlib_devel overlay: yellow blocks, platforms,
HDL), ``jasper_runtime/`` (the stand-in for mlib_devel's runtime) and ``xps_library/`` (the
Simulink block) at its root, beside this package; a wheel carries them inside the package
(``wheel.packages`` in pyproject.toml). Everything here works in both. What only a checkout
has (the developer tools, the verification code, the docs) is reached through
:func:`source_tree`.
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

# What marks a casper400g checkout: the developer tools, which never ship in the wheel.
DEV_PACKAGE = "casper400g_dev"


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


class NotACheckout(FileNotFoundError):
    """A command that needs the casper400g checkout ran from an installed wheel."""


def source_tree() -> Path:
    """The casper400g checkout this package runs from; a clear error in an installed wheel."""
    root = PACKAGE_DIR.parent
    if not (root / DEV_PACKAGE / "__init__.py").is_file() or not REGS_RDL.is_file():
        raise NotACheckout(
            "this command needs a casper400g source checkout (the developer tools, the "
            "verification models and the simulation benches are not part of the installed "
            f"package; {PACKAGE_DIR} is not in one): clone the repository and run "
            "`make venv` there"
        )
    return root


def require_source_tree() -> Path:
    """:func:`source_tree`, also putting the checkout on ``sys.path`` so that its
    developer tools (``casper400g_dev``) and verification code (``verification``) import."""
    import sys

    root = source_tree()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return root


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
