"""Tools around the receiver library: benchmarks (bench, bench_gpu, bench_spead2),
hardware checks (hwcheck, hwcheck_rdma), the multi-socket sender (multisend) and the
loopback and GPU demonstrations (demo). The library never imports them."""
