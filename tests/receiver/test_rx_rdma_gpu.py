"""The rdma source with its ring in GPU memory (emulate=True, so no RDMA device is needed:
the test writes the ring as a NIC would, through host-to-device copies). The present flags
come from the GPU kernel (casper400g_rdma_present); the data is exported with DLPack and
__cuda_array_interface__ as a strided view. Needs a CUDA device and CuPy; skipped
elsewhere with the reason. On the GPU machine:

    .venv/bin/python -m pytest -n 0 tests/receiver/test_rx_rdma_gpu.py -v -rs
"""

from __future__ import annotations

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_rx import Chunking, Delivery, RdmaSource, _core, gpu
from verification.models.rdma_ring import RingConfig, RingSender
from verification.models.roce import Operation, RdmaWrite

CUDA_OK, CUDA_WHY = gpu.cuda_status()
needs_gpu = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
PAYLOAD = 4096
SLOTS = 300  # more than one thread block of the kernel
CHUNKS = 3


def test_kernel_is_in_the_fatbin() -> None:
    if not _core.cuda_has_kernels():
        pytest.skip("built without nvcc")
    from pathlib import Path

    import casper400g_rx

    # The present kernel shares the reorder kernels' fatbin (cuda_kernels.cu includes it).
    src = Path(casper400g_rx.__file__).parents[1] / "src" / "cuda_kernels.cu"
    if src.is_file():
        assert '#include "rdma_kernels.cuh"' in src.read_text()


@needs_gpu
def test_gpu_ring_present_kernel_and_dlpack() -> None:
    cp = pytest.importorskip("cupy", reason="cupy is not installed")
    cap = rx.Capture(
        RdmaSource(emulate=True, mtu=4096),
        fmt=rx.Format(payload_size=PAYLOAD),
        chunking=Chunking(packets_per_chunk=SLOTS, max_chunks=CHUNKS),
        delivery=Delivery(device="cuda:0"),
    )
    p = cap.rdma_params
    assert p.memory == "cuda:0" and p.registration == "emulated"
    cfg = RingConfig(qpn=0, psn=0, rkey=0, va=p.va, slot_size=p.slot_size, slots=SLOTS,
                     chunks=CHUNKS, flow_ctrl=False)  # fmt: skip
    tmpl = RdmaWrite(src_mac=1, dst_mac=2, src_ip="10.0.0.1", dst_ip="10.0.0.2", dest_qp=0,
                     psn=0, payload=b"")  # fmt: skip
    sender = RingSender(cfg, tmpl)
    payloads = rx.example_payloads(range(2 * CHUNKS * SLOTS), PAYLOAD)
    lost = {7, 299, 300, 301, 1000}
    with cap:
        for c in range(2 * CHUNKS):
            for k in range(c * SLOTS, (c + 1) * SLOTS):
                for w in sender.send(payloads[k].tobytes()):
                    if k in lost and w.va == cfg.va + cfg.slot_offset(k):
                        continue
                    cap._cap.emulate_write(w.va - cfg.va, w.payload)
                    if w.operation is Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE:
                        cap._cap.emulate_immediate(w.immediate)
            chunk = cap._cap.next_chunk(5.0)
            assert chunk.chunk_id == c and chunk.device == 0
            seqs = range(c * SLOTS, (c + 1) * SLOTS)
            want_present = np.array([k not in lost for k in seqs])
            assert np.array_equal(chunk.present, want_present)
            assert chunk.n_present == want_present.sum()
            x = cp.from_dlpack(chunk)
            assert x.shape == (SLOTS, PAYLOAD) and x.strides == (PAYLOAD + 8, 1)
            y = cp.asarray(chunk)  # __cuda_array_interface__
            host = cp.asnumpy(x)
            assert np.array_equal(host, cp.asnumpy(y))
            assert np.array_equal(
                host[want_present], payloads[c * SLOTS : (c + 1) * SLOTS][want_present]
            )
            mask = cp.ndarray((SLOTS,), dtype=cp.uint8,
                              memptr=cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(
                                  chunk.present_ptr, SLOTS, chunk), 0))  # fmt: skip
            assert np.array_equal(cp.asnumpy(mask).astype(bool), want_present)
            chunk.release(cp.cuda.get_current_stream())
    st = cap.stats
    assert st.chunks == 2 * CHUNKS and st.lost == len(lost), st
