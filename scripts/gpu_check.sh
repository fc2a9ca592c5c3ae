#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build the receiver (kernels with the local nvcc),
# run the GPU tests, run them again under compute-sanitizer (memcheck, racecheck, synccheck, initcheck),
# run the GPU benchmarks, and write a results table.
#
#   scripts/gpu_check.sh [OUTDIR]          (default build/gpu_check)
#
# Installs into the environment of $PYTHON (default python3), the one with CuPy/PyTorch
# (editable, no dependencies fetched); wheels the tests need beyond those (scapy) may
# be put in $GPU_CHECK_WHEELS (a folder).
# BENCH_ARGS passes options to casper400g_rx.tools.bench_gpu; SANITIZE=0 skips the sanitizer.
#
# PRESET=shared: the one-capture runs (about 8 minutes on a 16-core host): no sanitizer;
# the GPU tests plus the CPU tests of queues sharing chunks; benchmarks 1c (copying path,
# K queues, ladder + 1.25x overload), 1d (one capture with its defaults, header-data
# split, whole payload and headers + prefix, ladder + overload), DLPack, and the loopback
# spead2 side-by-side and SO_REUSEPORT scaling with a 4-thread sender. Its wheels
# (spead2, the build backend, pytest, scapy) come from scripts/gpu_wheels.sh.
#
# PRESET=defaults: issue 30's figures (about 8 minutes after the build on a 16-core host):
# no sanitizer; the GPU tests plus the spectrometer's and the placement's; benchmark 1d
# only (ONE capture with its defaults, nothing set by hand, the spectrometer consuming:
# ladder, 3 trials of 10 s at 400 Gb/s, 1.25x overload, both emulated DMA fills), DLPack;
# then Mpps per receive core by payload (bench_pps, $OUTDIR/pps.md), SPEAD heaps from
# memory against spead2 ($OUTDIR/spead2.log; spead2 from the receiver's [bench] extra),
# SPEAD heaps placed by the GPUDirect kernels ($OUTDIR/gd_spead.log)
# and the spectrometer example for 5 s at 400 Gb/s ($OUTDIR/spectra.npz).
#
# PRESET=multigpu: one capture into several GPUs, within 5 minutes on a 2-GPU host once
# built: no sanitizer; the multi-GPU tests (every chunk on its GPU with the CPU engine's
# bytes, exact accounting under faults, placement by each GPU's node, each GPU's copy
# threads on its node), GPUDirect into two GPUs and the one-GPU GPUDirect tests (the same
# kernels with one GPU), and the one-GPU host-staged tests, which run the same lanes; the
# benchmark bench_multigpu into every GPU: pinned H2D peaks, 3 trials of 10 s at 400 Gb/s
# with an FFT per chunk on its GPU (the issue's goal), the ladder (2 s a rate) to the
# highest zero-loss rate. Tests and benchmark are capped at 200 s and 170 s (the
# benchmark keeps its tables after every step). BENCH_MODULE
# names the benchmark module (default bench_gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu_check}
mkdir -p "$out"
py=${PYTHON:-python3}
status=0
tests="tests/receiver/test_rx_gpu.py tests/receiver/test_rx_spead.py::test_host_staged_gpu_delivery_equals_cpu tests/receiver/test_rx_spead_split.py tests/receiver/test_rx_rdma_gpu.py tests/receiver/test_rx_gpudirect_spead.py"
if [ "${PRESET:-}" = shared ]; then
  SANITIZE=${SANITIZE:-0}
  TEST_TIMEOUT=${TEST_TIMEOUT:-120}
  BENCH_TIMEOUT=${BENCH_TIMEOUT:-330}
  tests="$tests tests/receiver/test_rx_shared_accounting.py tests/receiver/test_rx_queues.py"
  BENCH_ARGS=${BENCH_ARGS:-"--skip-split --skip-copy-path --skip-gpudirect --seconds 1.0 \
    --queues 4 8 12 --shared-queues 4 8 12 --shared-capture-rates 150 200 250 300 350 375 400 \
    --default-rates 250 300 350 380 400 420 440 --spead2 --sender-threads 4 \
    --udp-sender-threads 8 --udp-queues 2 4 8"}
  # Loopback receivers (ours and spead2) get the same 64 MiB socket buffers.
  sysctl -w net.core.rmem_max=67108864 > /dev/null 2>&1 || true
fi
if [ "${PRESET:-}" = defaults ]; then
  SANITIZE=${SANITIZE:-0}
  TEST_TIMEOUT=${TEST_TIMEOUT:-240}
  BENCH_TIMEOUT=${BENCH_TIMEOUT:-420}
  tests="$tests tests/receiver/test_rx_spectrometer.py::test_gpu_spectra_equal_the_cpu_ones \
    tests/receiver/test_rx_placement.py"
  BENCH_ARGS=${BENCH_ARGS:-"--skip-split --skip-copy-path --skip-shared --skip-gpudirect \
    --seconds 1.0 --default-rates 300 350 380 400 420 440 --default-target 400 \
    --default-trials 3 --default-trial-seconds 10"}
fi
if [ "${PRESET:-}" = multigpu ]; then
  SANITIZE=${SANITIZE:-0}
  TEST_TIMEOUT=${TEST_TIMEOUT:-200}
  BENCH_TIMEOUT=${BENCH_TIMEOUT:-170}
  tests="tests/receiver/test_rx_multigpu.py tests/receiver/test_rx_gpudirect_multi.py \
    tests/receiver/test_rx_gpu.py::test_gpudirect_equals_cpu_engine \
    tests/receiver/test_rx_gpu.py::test_gpudirect_equals_cpu_engine_wild \
    tests/receiver/test_rx_gpu.py::test_host_to_gpu_equals_cpu \
    tests/receiver/test_rx_gpu.py::test_split_placement_to_gpu_equals_cpu_faults \
    tests/receiver/test_rx_placement.py::test_into_a_gpu_the_copy_and_driver_threads_keep_off_the_lanes"
  BENCH_MODULE=${BENCH_MODULE:-bench_multigpu}
  BENCH_ARGS=${BENCH_ARGS:-"--rate 400 --trials 3 --seconds 10 --ladder-seconds 2 --ladder 500 600 700 800"}
fi
bench=${BENCH_MODULE:-bench_gpu}

step() { echo; echo "== $*"; }

step "environment"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
command -v nvcc && nvcc --version | tail -1
"$py" --version

step "build (pip install -e receiver, kernels by nvcc)"
if [ -n "${GPU_CHECK_WHEELS:-}" ]; then
  "$py" -m pip install -q --no-index --no-deps "$GPU_CHECK_WHEELS"/*.whl
fi
export CUDACXX=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if ! "$py" -m pip install -q --no-build-isolation --no-deps -e ./receiver \
    -Ccmake.define.CASPER400G_RX_REQUIRE_CUDA_KERNELS=ON > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
"$py" -c "from casper400g_rx import _core; assert _core.cuda_has_kernels(); print('kernels embedded; devices:', _core.cuda_device_count())"

step "GPU tests"
# shellcheck disable=SC2086
timeout "${TEST_TIMEOUT:-300}" "$py" -m pytest -p no:cacheprovider $tests -v -rs \
  > "$out/tests.log" 2>&1 || status=1
tail -25 "$out/tests.log"
tests_line=$(tail -1 "$out/tests.log")

san_lines=""
if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer > /dev/null; then
  # initcheck runs on a capture without loss: the other tests copy whole chunks to the
  # host, slots of lost packets included, which are never written (present says so).
  for tool in memcheck racecheck synccheck initcheck; do
    if [ "$tool" = initcheck ]; then
      sel="gpudirect_generator_and_slow_consumer or host_to_gpu_equals_cpu and cupy"
    else
      sel="gpudirect_equals_cpu_engine and opts1 or wild and stalls or host_to_gpu_equals_cpu and cupy or split_placement_to_gpu or 64k_heaps and many or loss_reordering and stalls"
    fi
    step "compute-sanitizer --tool $tool on the GPU tests ($sel)"
    timeout "${SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool "$tool" --error-exitcode 99 --target-processes all \
      "$py" -m pytest -p no:cacheprovider -q tests/receiver/test_rx_gpu.py \
      tests/receiver/test_rx_gpudirect_spead.py -k "$sel" \
      > "$out/sanitizer-$tool.log" 2>&1
    rc=$?
    [ $rc = 0 ] || status=1
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer-$tool.log" | tail -1)
    echo "rc=$rc ${summary}"
    tail -3 "$out/sanitizer-$tool.log"
    san_lines+="| compute-sanitizer $tool | rc $rc; ${summary:-no summary}; $(tail -1 "$out/sanitizer-$tool.log") |"$'\n'
  done
fi

step "demo GPU stage"
"$py" -c "from casper400g_rx.tools.demo import demo_gpu
ok, lines = demo_gpu()
print(*lines, sep='\n')
raise SystemExit(0 if ok else 1)" 2>&1 | tee "$out/demo.log" || status=1

step "GPU benchmarks"
# shellcheck disable=SC2086
timeout "${BENCH_TIMEOUT:-600}" "$py" -m "casper400g_rx.tools.$bench" --out "$out/bench.md" ${BENCH_ARGS:-} \
  2>&1 | tee "$out/bench.log" || status=1

if [ "${PRESET:-}" = defaults ]; then
  step "Mpps per receive core by payload (bench_pps)"
  timeout "${PPS_TIMEOUT:-300}" "$py" -m casper400g_rx.tools.bench_pps --out "$out/pps.md" \
    2>&1 | tee "$out/pps.log" || status=1
  step "SPEAD heaps from memory against spead2 (bench_spead2)"
  timeout "${SPEAD2_TIMEOUT:-120}" "$py" -m casper400g_rx.tools.bench_spead2 --mbytes 128 \
    --trials 5 2>&1 | tee "$out/spead2.log" || status=1
  step "SPEAD heaps into GPU memory by the GPUDirect kernels (bench_gd_spead)"
  timeout "${GD_SPEAD_TIMEOUT:-150}" "$py" -m casper400g_rx.tools.bench_gd_spead --mbytes 256 \
    --blocks 2 8 128 2>&1 | tee "$out/gd_spead.log" || status=1
  step "the spectrometer example, 5 s at 400 Gb/s into cuda:0"
  timeout "${EXAMPLE_TIMEOUT:-120}" "$py" examples/spectrometer.py --device cuda:0 --rate 400 \
    --seconds 5 --out "$out/spectra.npz" 2>&1 | tee "$out/spectrometer.log" || status=1
fi

{
  echo "# gpu_check results ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "| check | result |"
  echo "|---|---|"
  echo "| GPU tests | ${tests_line} |"
  printf '%s' "$san_lines"
  echo "| demo GPU stage | $(tail -1 "$out/demo.log" 2>/dev/null) |"
  echo
  cat "$out/bench.md" 2>/dev/null
  if [ -f "$out/pps.md" ]; then echo; echo "## Mpps per receive core"; echo; cat "$out/pps.md"; fi
} > "$out/results.md"
echo
cat "$out/results.md"
exit $status
