"""Builds casper400g_rx._core with AddressSanitizer + UBSan and runs the receiver tests on it.

Usage: python receiver/tools/sanitized_tests.py [pytest arguments]   (or `make test-sanitize`)

The sanitized extension is built apart from the installed one (build/sanitize/) and put in
front of it on the import path; Python itself is not sanitized, so the ASan runtime is
preloaded. Leak detection is off: the interpreter keeps many allocations alive at exit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "sanitize"
PKG_ROOT = BUILD / "pkg"

# Drops the editable install's import redirect so that the sanitized copy is the one found.
BOOTSTRAP = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "ScikitBuildRedirectingFinder"]
sys.path.insert(0, {pkg_root!r})
import casper400g_rx._core as core
assert core.__file__.startswith({pkg_root!r}), core.__file__
print("sanitized extension:", core.__file__, flush=True)
import pytest
sys.exit(pytest.main({args!r}))
"""


def build() -> None:
    cmake = shutil.which("cmake")
    if cmake is None:
        raise SystemExit("cmake not found")
    pybind11_dir = subprocess.check_output(
        [sys.executable, "-m", "pybind11", "--cmakedir"], text=True
    ).strip()
    subprocess.run(
        [
            cmake,
            "-S",
            str(ROOT / "receiver"),
            "-B",
            str(BUILD),
            "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
            "-DCASPER400G_RX_SANITIZE=ON",
            f"-Dpybind11_DIR={pybind11_dir}",
            f"-DPython_EXECUTABLE={sys.executable}",
        ],
        check=True,
    )
    subprocess.run([cmake, "--build", str(BUILD), "-j", str(os.cpu_count() or 1)], check=True)
    pkg = PKG_ROOT / "casper400g_rx"
    shutil.rmtree(pkg, ignore_errors=True)
    shutil.copytree(ROOT / "receiver" / "casper400g_rx", pkg)
    for so in BUILD.glob("_core*.so"):
        shutil.copy2(so, pkg)


def runtime(name: str) -> str:
    return subprocess.check_output(["g++", f"-print-file-name={name}"], text=True).strip()


def main(argv: list[str]) -> int:
    build()
    args = argv or ["-q", "-p", "no:cacheprovider", "tests/receiver", "-k", "not fuzz"]
    env = dict(os.environ)
    env["LD_PRELOAD"] = f"{runtime('libasan.so')}:{runtime('libubsan.so')}"
    env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    code = BOOTSTRAP.format(pkg_root=str(PKG_ROOT), args=args)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
