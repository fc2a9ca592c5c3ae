"""The RDMA mode's goodput in simulated cycles: `python -m casper400g_dev.bench_rdma`.

For each path MTU and datagram size, back-to-back datagrams go through fhg_core in the
RDMA mode into a DCMAC model paced at 400 Gb/s (verification/cocotb_bench_rdma.py). The
table gives the RDMA payload goodput on the wire, this traffic's RoCEv2 line goodput (the
same packets back to back: payload over frame + 24 wire bytes), their ratio, and the
user datagrams' goodput (the slot headers excluded). tests/rtl/cocotb_fhg_core_rdma.py
asserts the 4096-byte MTU case (>= 0.995).
"""

from __future__ import annotations

import json
import sys
import time

from . import sim

CASES = [(4096, 4088), (4096, 8184), (4096, 8192), (2048, 8184), (1024, 8184), (4096, 1016)]


def main() -> int:
    t0 = time.monotonic()
    data = sim.run_job(sim.build_core(), "cocotb_bench_rdma",
                       {"CASPER400G_BENCH_CASES": json.dumps(CASES)})  # fmt: skip
    print(
        f"simulated in {time.monotonic() - t0:.0f} s (MAC clock {data['mac_clk_hz'] / 1e6:.2f} MHz)"
    )
    print(
        "| path MTU | datagram B | packets/datagram | RDMA payload Gb/s | RoCEv2 line Gb/s "
        "| ratio | datagram Gb/s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in data["results"]:
        print(
            f"| {r['mtu']} | {r['datagram']} | {r['packets_per_datagram']} | {r['rdma_gbps']:.2f} "
            f"| {r['line_gbps']:.2f} | {r['ratio']:.4f} | {r['user_gbps']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
