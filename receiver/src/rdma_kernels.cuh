// The rdma source's GPU kernel (included by cuda_kernels.cu, so it shares its fatbin):
// a chunk's present flags from its slot headers, in GPU memory. Slot s of the chunk is
// present when its first 8 bytes, big-endian, are its own sequence number first_seq + s
// (docs/design/core.md §6); a slot left from the ring's previous pass holds an older one.
// One thread per slot; the count is summed per warp, then once per warp into `count`.
#pragma once

extern "C" __global__ void casper400g_rdma_present(const unsigned char *chunk,
                                                   unsigned long long slot_size,
                                                   unsigned long long slots,
                                                   unsigned long long first_seq,
                                                   unsigned char *present,
                                                   unsigned long long *count) {
    const unsigned long long s = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
    bool ok = false;
    if (s < slots) {
        const unsigned char *h = chunk + s * slot_size;
        unsigned long long v = 0;
        for (int b = 0; b < 8; b++) v = (v << 8) | h[b];
        ok = v == first_seq + s;
        present[s] = ok ? 1 : 0;
    }
    const unsigned n = __popc(__ballot_sync(0xffffffffu, ok));
    if ((threadIdx.x & 31) == 0 && n != 0) atomicAdd(count, static_cast<unsigned long long>(n));
}
