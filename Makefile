# Two entry points on a fresh Debian 12 machine (root or sudo):
#   make demo   the main job
#   make test   lint + the whole test suite
# Both create .venv and install what is missing; a second run reuses everything.

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.casper400g-installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=
# cocotb embeds Python in the simulator and needs the shared libpython.
export LIBPYTHON_CHECK := import glob, sys, sysconfig as s; \
  n = s.get_config_var("INSTSONAME") or ""; d = s.get_config_var("LIBDIR") or ""; \
  sys.exit(0 if n and glob.glob(d + "/**/" + n, recursive=True) else 1)

.PHONY: demo test test-sanitize lint regs regs-check sysdeps venv clean

demo: $(STAMP) | sysdeps
	$(VPY) -m casper400g_dev demo

test: $(STAMP) | sysdeps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VPY) -m pytest -n auto --dist loadfile --durations=40 $(PYTEST_ARGS)

# The receiver's tests against its C++ extension built with ASan + UBSan.
test-sanitize: $(STAMP)
	$(VPY) receiver/tools/sanitized_tests.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

regs: $(STAMP)
	$(VPY) -m casper400g_dev regs

regs-check: $(STAMP)
	$(VPY) -m casper400g_dev regs --check

sysdeps:
	@need=""; \
	command -v g++ >/dev/null 2>&1 || need="$$need g++"; \
	command -v perl >/dev/null 2>&1 || need="$$need perl"; \
	command -v tclsh >/dev/null 2>&1 || need="$$need tcl"; \
	$(PYTHON) -c "import venv, ensurepip" >/dev/null 2>&1 || need="$$need python3-venv"; \
	$(PYTHON) -c "$$LIBPYTHON_CHECK" || need="$$need libpython3-dev"; \
	[ -f /usr/include/infiniband/mlx5dv.h ] || need="$$need libibverbs-dev"; \
	command -v ip >/dev/null 2>&1 || need="$$need iproute2"; \
	command -v arping >/dev/null 2>&1 || need="$$need iputils-arping"; \
	command -v ping >/dev/null 2>&1 || need="$$need iputils-ping"; \
	command -v sysctl >/dev/null 2>&1 || need="$$need procps"; \
	if [ -n "$$need" ]; then \
	  echo "installing Debian packages:$$need"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need; \
	fi
	@# GNU Octave runs the Simulink block's scripts in the tests (octave-cli only: no
	@# recommended packages, so no GUI, Java or documentation).
	@if ! command -v octave-cli >/dev/null 2>&1; then \
	  echo "installing Debian package: octave (--no-install-recommends)"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends octave; \
	fi

$(VPY): | sysdeps
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

venv: $(STAMP)

# The four distributions of the repository (pyproject.toml says which is which), installed
# editable into the one venv, with the checkout's own needs (the `dev` dependency group).
PROJECTS := pyproject.toml casperfpga_ext/pyproject.toml \
  casper400g_board_server/pyproject.toml receiver/pyproject.toml
# Editable installs do not rebuild the C++ extension by themselves: the receiver's
# sources are prerequisites so that editing them reinstalls (and recompiles) it.
RX_SOURCES := $(wildcard receiver/CMakeLists.txt receiver/*.cmake receiver/src/*.cpp receiver/src/*.cu receiver/src/*.cuh receiver/include/*/*.h)
# nvcc from PyPI compiles the receiver's GPUDirect kernels (no GPU needed to build).
# 13.0 matches the oldest driver the kernels' PTX must load on; CUDA_NVCC= skips it.
CUDA_NVCC ?= nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
  nvidia-cuda-runtime==13.0.96

$(STAMP): $(PROJECTS) $(RX_SOURCES) | $(VPY)
	$(VPY) -m pip install -q --upgrade "pip>=25.1"
	$(VPY) -m pip install -q "hatchling>=1.26" "scikit-build-core>=0.10" "pybind11>=2.12" \
	  $(CUDA_NVCC)
	$(VPY) -m pip install -q --no-build-isolation --group dev -e ".[twin,synth]" \
	  -e ./casperfpga_ext -e ./casper400g_board_server -e "./receiver[metrics,fpga]"
	touch $(STAMP)

clean:
	rm -rf .cache build receiver/build
