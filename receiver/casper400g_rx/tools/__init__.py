"""Tools around the receiver library: benchmarks (bench, bench_gpu with bench_defaults,
bench_pps, bench_spead2),
hardware checks (hwcheck, hwcheck_rdma), the multi-socket sender (multisend) and the
loopback and GPU demonstrations (demo). The library never imports them."""
