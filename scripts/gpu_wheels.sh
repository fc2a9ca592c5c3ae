#!/usr/bin/env bash
# Downloads the wheels scripts/gpu_check.sh installs on a GPU host that has no package
# index (GPU_CHECK_WHEELS=DIR): the build backend of the extension, the test runner and
# scapy for the GPU tests, spead2 for the side-by-side benchmark, and h5py for the
# spectrometer's HDF5 output. Pure-Python wheels, and spead2 and h5py for CPython 3.12 on
# x86-64 (PYVER changes it).
#
#   scripts/gpu_wheels.sh [DIR]            (default build/gpu_wheels)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/gpu_wheels}
py=${PYTHON:-python3}
pyver=${PYVER:-3.12}
mkdir -p "$dir"
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dir" \
  spead2==4.5.1 "scikit-build-core==1.1.2" "pybind11==3.1.0" pathspec packaging \
  "pytest==9.2.0" pluggy iniconfig pygments "scapy==2.8.0" "h5py==3.16.0"
ls -1 "$dir"
