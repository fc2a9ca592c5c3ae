// GPUDirect placement: frames lie in a GPU arrival ring in the order the NIC wrote
// them. Per batch three kernels run:
//  * gd_parse (many blocks, a tile of 1024 packets per block step): parses and checks
//    every header, writes each packet's chunk id, slot and payload offset, and lists the
//    tile's "window events": the packets that may change the window (the first packet
//    of the tile of each chunk that had no buffer when the batch began);
//  * gd_walk (one block): walks the events in arrival order exactly as the CPU engine
//    treats packets (late / window advance / chunk opening), takes buffers from the
//    free ring the host fills, and records for each chunk that left the window the
//    arrival interval in which its packets were placed;
//  * gd_scatter (a configurable number of blocks, the SM footprint): decides each
//    packet from its chunk's entry (placed if it arrived while the chunk was in the
//    window, else late), copies payloads into their slots, marks presence, counts;
//    its last block settles the chunks that left the window and reports to the host.
// Only events are walked one by one: for an in-order stream, one per chunk and tile.
// Packets that are not events never change the window: their chunk either had a
// buffer when the batch began, or an earlier packet of the same tile opened it (or
// found it late, which it then stays). Parse and walk run on one stream, scatter on
// another, so a batch's parse and walk overlap the previous batch's scatter.
#include <cuda.h>

#include <cstdint>

#include "casper400g_rx/cuda_driver.h"
#include "casper400g_rx/cuda_kernels.h"

namespace cu = casper400g_rx::cu;
using namespace casper400g_rx::gd;
using u8 = std::uint8_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

// The hand-written driver declarations must match the real ones.
static_assert(cu::success == CUDA_SUCCESS, "CUresult");
static_assert(cu::error_not_ready == CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY");
static_assert(cu::stream_non_blocking == CU_STREAM_NON_BLOCKING, "stream flag");
static_assert(cu::event_blocking_sync == CU_EVENT_BLOCKING_SYNC, "event flag");
static_assert(cu::event_disable_timing == CU_EVENT_DISABLE_TIMING, "event flag");
static_assert(cu::memhostalloc_portable == CU_MEMHOSTALLOC_PORTABLE, "host alloc flag");
static_assert(cu::memhostalloc_devicemap == CU_MEMHOSTALLOC_DEVICEMAP, "host alloc flag");
static_assert(cu::memhostregister_portable == CU_MEMHOSTREGISTER_PORTABLE, "register flag");
static_assert(cu::attr_multiprocessor_count == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "attr");
static_assert(cu::attr_compute_capability_major == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
              "attr");
static_assert(cu::attr_can_map_host_memory == CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, "attr");
static_assert(cu::attr_pci_bus_id == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, "attr");
static_assert(cu::attr_pci_device_id == CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, "attr");
static_assert(cu::attr_pci_domain_id == CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, "attr");
static_assert(cu::func_attr_max_dynamic_shared_size_bytes ==
                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              "func attr");
static_assert(sizeof(cu::deviceptr) == sizeof(CUdeviceptr), "CUdeviceptr");

namespace {

constexpr u32 full_mask = 0xffffffffu;

__device__ __forceinline__ u64 read_field(const u8 *p, u32 offset, u32 width, u32 big_endian) {
    u64 v = 0;
    p += offset;
    if (big_endian) {
        for (u32 i = 0; i < width; i++) v = (v << 8) | p[i];
    } else {
        for (u32 i = width; i-- > 0;) v = (v << 8) | p[i];
    }
    return v;
}

// Mirrors parse_frame() (Ethernet) followed by decoder::decode() of the CPU engine.
__device__ bool parse(const u8 *f, u32 len, const format_desc &fmt, u32 &poff, u64 &seq) {
    u32 plen = 0;
    if (!frame_udp_payload(f, len, fmt.udp_port, poff, plen)) return false;
    if (plen != fmt.payload_size) return false;
    const u8 *pl = f + poff;
    if (fmt.has_stream_id &&
        read_field(pl, fmt.sid_offset, fmt.sid_width, fmt.sid_big_endian) != fmt.sid_value)
        return false;
    seq = read_field(pl, fmt.seq_offset, fmt.seq_width, fmt.seq_big_endian);
    return true;
}

__device__ __forceinline__ u64 max64(u64 a, u64 b) { return a > b ? a : b; }
__device__ __forceinline__ u64 min64(u64 a, u64 b) { return a < b ? a : b; }
__device__ __forceinline__ u64 sat_add(u64 a, u64 b) { return b > ~a ? ~u64{0} : a + b; }
__device__ __forceinline__ u64 sat_mul(u64 a, u64 b) {
    return (a != 0 && b > ~u64{0} / a) ? ~u64{0} : a * b;
}

// Block-wide max scan (identity 0): returns the exclusive prefix; `total` gets the
// block's maximum. Every thread of the block takes part.
__device__ u64 block_scan_max(u64 v, u64 *warp_tot, u64 &total) {
    const u32 lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    u64 x = v;
    for (u32 o = 1; o < 32; o <<= 1) {
        const u64 y = __shfl_up_sync(full_mask, x, o);
        if (lane >= o) x = max64(x, y);
    }
    u64 xe = __shfl_up_sync(full_mask, x, 1);
    if (lane == 0) xe = 0;
    if (lane == 31) warp_tot[w] = x;
    __syncthreads();
    if (w == 0) {
        u64 z = lane < blockDim.x / 32 ? warp_tot[lane] : 0;
        for (u32 o = 1; o < 32; o <<= 1) {
            const u64 y = __shfl_up_sync(full_mask, z, o);
            if (lane >= o) z = max64(z, y);
        }
        warp_tot[lane] = z;
    }
    __syncthreads();
    const u64 excl = w > 0 ? max64(xe, warp_tot[w - 1]) : xe;
    total = warp_tot[blockDim.x / 32 - 1];
    __syncthreads();
    return excl;
}

// Exclusive sum scan of small counts (compaction).
__device__ u32 block_scan_sum(u32 v, u32 *warp_tot, u32 &total) {
    const u32 lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    u32 x = v;
    for (u32 o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(full_mask, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_tot[w] = x;
    __syncthreads();
    if (w == 0) {
        u32 z = lane < blockDim.x / 32 ? warp_tot[lane] : 0;
        for (u32 o = 1; o < 32; o <<= 1) {
            const u32 y = __shfl_up_sync(full_mask, z, o);
            if (lane >= o) z += y;
        }
        warp_tot[lane] = z;
    }
    __syncthreads();
    const u32 excl = x - v + (w > 0 ? warp_tot[w - 1] : 0);
    total = warp_tot[blockDim.x / 32 - 1];
    __syncthreads();
    return excl;
}

__device__ __forceinline__ const u8 *frame_at(const params &p, u64 i) {
    return reinterpret_cast<const u8 *>(p.ring) + (i % p.ring_packets) * p.stride + p.headroom;
}

// A launch's packets never wrap around the ring (the host issues at most one ring
// region per launch), so ring slot = slot of the launch's start + its index.
__device__ __forceinline__ const u8 *frame_in_slot(const params &p, u32 slot) {
    return reinterpret_cast<const u8 *>(p.ring) + u64(slot) * p.stride + p.headroom;
}

__device__ __forceinline__ bool mapped_to(const window_entry &e, u64 id) {
    return e.buffer >= 0 && e.chunk_id == id;
}

// The free ring's tail (host-written); entries below it are read only after it.
__device__ __forceinline__ u64 free_ring_tail(const params &p) {
    const u64 tail = *reinterpret_cast<const volatile u64 *>(p.free_tail);
    __threadfence_system();
    return tail;
}

}  // namespace

// Parses a batch's headers, one tile of `tile` packets per block step, and lists each
// tile's window events (see the top of the file).
extern "C" __global__ void __launch_bounds__(tile) casper400g_gd_parse(params p, u64 start, u32 n) {
    __shared__ u64 wmax[32];
    __shared__ u32 wsum[32];
    parsed *out = reinterpret_cast<parsed *>(p.parsed_ptr);
    const window_entry *win = reinterpret_cast<const window_entry *>(p.win);
    u32 *ev_idx = reinterpret_cast<u32 *>(p.ev_idx);
    u32 *ev_count = reinterpret_cast<u32 *>(p.ev_count);
    const u32 tid = threadIdx.x, lane = tid & 31;
    const u32 tiles = (n + tile - 1) / tile;
    for (u32 t = blockIdx.x; t < tiles; t += gridDim.x) {
        const u32 li = t * tile + tid;
        const bool valid = li < n;
        const u64 gi = start + li;
        bool acc = false;
        u64 id = 0;
        if (valid) {
            const u32 len = reinterpret_cast<const u32 *>(p.lens)[gi % p.ring_packets];
            u32 poff = 0;
            u64 seq = 0;
            parsed h{0, sr_frame, rejected_offset};
            if (len > p.stride - p.headroom) {
                // Longer than a ring slot holds: not a frame of this stream.
            } else if (p.spead.enabled) {
                spead_fields sf;
                u64 chunk = 0;
                u32 slot = 0;
                const u32 why = parse_spead_frame(frame_at(p, gi), len, p.fmt.udp_port, p.spead,
                                                  sf, chunk, slot, poff);
                if (why == sr_none) {
                    acc = route_chunk(chunk, p.gpus, p.gpu, id);
                    h = parsed{id, slot, acc ? poff : other_gpu_offset};
                    u64 *items = reinterpret_cast<u64 *>(p.packet_items) +
                                 u64(gi % p.ring_packets) * p.spead.n_items;
                    for (u32 k = 0; k < p.spead.n_items; k++) items[k] = sf.items[k];
                } else {
                    h = parsed{0, why, rejected_offset};
                }
            } else if (parse(frame_at(p, gi), len, p.fmt, poff, seq)) {
                // Window, walk and scatter see this GPU's local chunk ids only.
                acc = route_chunk(seq / p.ppc, p.gpus, p.gpu, id);
                h = parsed{id, u32(seq % p.ppc), acc ? poff : other_gpu_offset};
            }
            out[gi % p.ring_packets] = h;
        }
        // Chunks with a buffer when the batch began never change the window.
        const bool premapped = acc && mapped_to(win[id % p.max_chunks], id);
        // Not an event either: a packet whose chunk is the running maximum of the tile
        // (an earlier packet of the tile has it). Key id + 1 leaves 0 for "none";
        // the largest id has no key and is always an event.
        const u64 key = (acc && id != ~u64{0}) ? id + 1 : 0;
        u64 tile_max;
        const u64 before = block_scan_max(key, wmax, tile_max);
        const bool cand = acc && !premapped && !(key != 0 && before == key);
        // ... nor a later packet of a warp with the same chunk (every lane votes).
        const unsigned peers = __match_any_sync(full_mask, cand ? id : ~u64{0});
        const unsigned cands = __ballot_sync(full_mask, cand);
        const bool event = cand && lane == unsigned(__ffs(peers & cands) - 1);
        u32 n_ev;
        const u32 pos = block_scan_sum(event ? 1u : 0u, wsum, n_ev);
        if (event) ev_idx[t * tile + pos] = li;
        if (tid == 0) ev_count[t] = n_ev;
    }
}

namespace {

struct walk_shared {
    u32 n_events, stop, stalled, refill;
    u32 fc_have;  // free-ring entries cached, starting at entry `fc_base`
    u64 fc_base;
};

}  // namespace

// Walks a batch's window events in arrival order (one thread; the block stages the
// events, the window and the free-ring entries in shared memory around it).
extern "C" __global__ void __launch_bounds__(walk_threads, 1)
    casper400g_gd_walk(params p, u64 start, u32 n, u32 slot_index, u32 finish) {
    __shared__ walk_shared sh;
    __shared__ u32 wsum[32];
    extern __shared__ u64 dyn[];
    const u32 M = p.max_chunks;
    window_entry *win = reinterpret_cast<window_entry *>(dyn);
    u64 *ev_id = reinterpret_cast<u64 *>(win + M);
    u32 *ev_li = reinterpret_cast<u32 *>(ev_id + walk_page);
    u32 *log_buf = ev_li + walk_page;
    u32 *fc = log_buf + p.n_buffers;

    state *st = reinterpret_cast<state *>(p.st);
    slot_state *ss = reinterpret_cast<slot_state *>(p.slots) + slot_index;
    resolve_entry *rs = reinterpret_cast<resolve_entry *>(p.resolve) + u64(slot_index) * p.n_buffers;
    window_entry *gwin = reinterpret_cast<window_entry *>(p.win);
    window_entry *snap = reinterpret_cast<window_entry *>(p.snap) + u64(slot_index) * M;
    const parsed *pk = reinterpret_cast<const parsed *>(p.parsed_ptr);
    const u32 *ev_idx = reinterpret_cast<const u32 *>(p.ev_idx);
    const u32 *ev_count = reinterpret_cast<const u32 *>(p.ev_count);
    const volatile u32 *free_ring = reinterpret_cast<const volatile u32 *>(p.free_ring);
    const u32 tid = threadIdx.x;

    // A launch queued behind one that stalled (or after the end) does nothing: the
    // host re-issues the packets from where processing stopped.
    if (st->processed != start || st->finished) {
        if (tid == 0) {
            ss->skipped = 1;
            ss->n_flush = 0;
            ss->lost = 0;
            ss->consumed = start;
        }
        return;
    }
    for (u32 w = tid; w < M; w += blockDim.x) win[w] = gwin[w];
    if (tid == 0) {
        sh.stop = n;
        sh.stalled = 0;
        sh.fc_have = 0;
        sh.fc_base = st->free_head;
    }
    __syncthreads();

    // Thread 0's walk state.
    u64 head = st->head, top = st->top, lost = 0, fh = st->free_head;
    u32 started = st->started, n_flush = 0, n_log = 0;
    auto flush_range = [&](u64 from, u64 end, u64 when) {
        for (u64 c = from; c < end; c++) {
            window_entry &e = win[c % M];
            if (mapped_to(e, c)) {
                rs[n_flush++] = resolve_entry{c, e.mapped_at, when, u32(e.buffer), 0};
            } else {
                lost = sat_add(lost, p.ppc);
            }
            e = window_entry{~u64{0}, ~u64{0}, -1, 0};
        }
    };
    // Takes the next free buffer from the cache; false when the host has none posted.
    auto take = [&](u32 &b) {
        if (fh == sh.fc_base + sh.fc_have) {
            // Cache used up: one more look at the ring (slow path, one entry).
            if (free_ring_tail(p) == fh) return false;
            sh.fc_base = fh;
            sh.fc_have = 1;
            fc[fh % free_cache] = free_ring[fh % p.n_buffers];
        }
        b = fc[fh % free_cache];
        fh++;
        return true;
    };

    if (finish) {
        if (tid == 0) {
            if (started && head <= top) flush_range(head, top + 1, start);
            st->finished = 1;
        }
    } else {
        const u32 tiles = (n + tile - 1) / tile;
        for (u32 t0 = 0; t0 < tiles;) {
            // A page: the next tiles whose events fit walk_page (at least one tile).
            const u32 nt = min(tiles - t0, walk_threads);
            const u32 c = tid < nt ? ev_count[t0 + tid] : 0;
            u32 total;
            const u32 o = block_scan_sum(c, wsum, total);
            const bool fits = tid < nt && o + c <= walk_page;
            const u32 page_tiles = __syncthreads_count(fits);
            if (fits) {
                for (u32 k = 0; k < c; k++) ev_li[o + k] = ev_idx[(t0 + tid) * tile + k];
            }
            if (tid == page_tiles - 1) sh.n_events = o + c;
            __syncthreads();
            const u32 ne = sh.n_events;
            for (u32 k = tid; k < ne; k += blockDim.x)
                ev_id[k] = pk[(start + ev_li[k]) % p.ring_packets].chunk_id;
            // Read ahead the free-ring entries this page may take, all in one go (unless
            // the cache already holds enough).
            if (tid == 0) {
                sh.refill = ne > 0 && sh.fc_base + sh.fc_have - fh < min(ne, free_cache);
                if (sh.refill) {
                    sh.fc_base = fh;
                    sh.fc_have = u32(min64(free_ring_tail(p) - fh, min(ne, free_cache)));
                }
            }
            __syncthreads();
            if (sh.refill) {
                const u64 base = sh.fc_base;
                const u32 have = sh.fc_have;
                for (u32 k = tid; k < have; k += blockDim.x)
                    fc[(base + k) % free_cache] = free_ring[(base + k) % p.n_buffers];
                __syncthreads();
            }
            if (tid == 0) {
                for (u32 k = 0; k < ne; k++) {
                    const u64 id = ev_id[k];
                    const u64 gi = start + ev_li[k];
                    if (!started) {
                        // The first accepted packet opens the window.
                        head = top = p.has_first_chunk ? p.first_chunk : id;
                        started = 1;
                    }
                    if (id < head) continue;  // late
                    const bool adv = id > top;
                    if (!adv && mapped_to(win[id % M], id)) continue;
                    u32 b;
                    if (!take(b)) {
                        sh.stop = ev_li[k];
                        sh.stalled = 1;
                        break;
                    }
                    if (adv) {
                        const u64 h = max64(head, id >= M - 1 ? id - (M - 1) : 0);
                        flush_range(head, min64(h, top + 1), gi);
                        if (h > top + 1) lost = sat_add(lost, sat_mul(h - top - 1, p.ppc));
                        head = h;
                        top = id;
                    }
                    win[id % M] = window_entry{id, gi, int(b), 0};
                    log_buf[n_log++] = b;
                }
            }
            __syncthreads();
            if (sh.stalled) break;
            t0 += page_tiles;
        }
    }
    if (tid == 0) {
        const u64 consumed = finish ? start : start + sh.stop;
        st->head = head;
        st->top = top;
        st->started = started;
        st->free_head = fh;
        st->processed = consumed;
        ss->skipped = 0;
        ss->lost = lost;
        ss->consumed = consumed;
        ss->n_flush = n_flush;
        sh.n_events = n_log;  // reused: chunks mapped by this walk
    }
    __syncthreads();
    // The window after the walk: for the next batch and, per slot, for the scatter.
    for (u32 w = tid; w < M; w += blockDim.x) {
        gwin[w] = win[w];
        snap[w] = win[w];
    }
    // Chunks that just got a buffer start empty.
    const u32 bw = p.bit_words;
    for (u32 k = 0; k < sh.n_events; k++) {
        const u64 b = log_buf[k];
        u8 *pres = reinterpret_cast<u8 *>(p.present) + b * p.ppc;
        u32 *bits = reinterpret_cast<u32 *>(p.bits) + b * bw;
        for (u64 j = tid; j < p.ppc; j += blockDim.x) pres[j] = 0;
        for (u32 j = tid; j < bw; j += blockDim.x) bits[j] = 0;
        if (tid == 0) reinterpret_cast<u32 *>(p.n_present)[b] = 0;
        const u64 n_items = u64(p.spead.n_items) * p.ppc;
        u64 *items = reinterpret_cast<u64 *>(p.items) + b * n_items;
        for (u64 j = tid; j < n_items; j += blockDim.x) items[j] = spead_absent;
    }
}

namespace {

// Unaligned payloads (the aligned ones take the scatter's pipelined path).
__device__ __forceinline__ void warp_copy(u8 *dst, const u8 *src, u32 size, u32 lane) {
    const auto a = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src) |
                   size;
    if ((a & 3) == 0) {
        const u32 *s = reinterpret_cast<const u32 *>(src);
        u32 *d = reinterpret_cast<u32 *>(dst);
        for (u32 i = lane; i < size / 4; i += 32) d[i] = s[i];
    } else {
        for (u32 i = lane; i < size; i += 32) dst[i] = src[i];
    }
}

// 16-byte words each lane of a copying warp keeps in flight.
constexpr u32 copy_unroll = 8;

// Words of type W from s to d (n of them, both aligned to W), four per lane in flight.
template <class W>
__device__ __forceinline__ void warp_copy_words(W *__restrict__ d, const W *__restrict__ s,
                                                u32 n, u32 lane) {
    u32 i = lane;
    for (; i + 96 < n; i += 128) {
        const W a = s[i], b = s[i + 32], c = s[i + 64], e = s[i + 96];
        d[i] = a;
        d[i + 32] = b;
        d[i + 64] = c;
        d[i + 96] = e;
    }
    for (; i < n; i += 32) d[i] = s[i];
}

// A SPEAD heap's piece at any alignment. Source and destination are misaligned alike
// as often as not (spead2's and the example design's cuts put a packet's heap bytes 8
// bytes off 16 in the frame and in the heap alike): the bytes up to the wider word
// boundary they share go one by one, the rest in 16-, 8- or 4-byte words.
__device__ __forceinline__ void warp_copy_piece(u8 *dst, const u8 *src, u32 size, u32 lane) {
    const auto x =
        reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src);
    const u32 w = (x & 15) == 0 ? 16 : (x & 7) == 0 ? 8 : (x & 3) == 0 ? 4 : 1;
    const u32 to_boundary = u32((w - (reinterpret_cast<std::uintptr_t>(dst) & (w - 1))) & (w - 1));
    const u32 head = w == 1 ? size : min(size, to_boundary);
    if (lane < head) dst[lane] = src[lane];
    if (w == 1) {
        for (u32 i = lane + 32; i < size; i += 32) dst[i] = src[i];
        return;
    }
    const u32 n = (size - head) / w;
    u8 *d = dst + head;
    const u8 *s = src + head;
    if (w == 16)
        warp_copy_words(reinterpret_cast<uint4 *>(d), reinterpret_cast<const uint4 *>(s), n,
                        lane);
    else if (w == 8)
        warp_copy_words(reinterpret_cast<uint2 *>(d), reinterpret_cast<const uint2 *>(s), n,
                        lane);
    else
        warp_copy_words(reinterpret_cast<u32 *>(d), reinterpret_cast<const u32 *>(s), n, lane);
    const u32 done = head + n * w;
    if (done + lane < size) dst[done + lane] = src[done + lane];
}

// Lane `i`'s words i, i + 32, ... of a group of 32 * copy_unroll words (those < n).
__device__ __forceinline__ void load_group(uint4 (&r)[copy_unroll], const uint4 *s, u32 i, u32 n) {
#pragma unroll
    for (u32 k = 0; k < copy_unroll; k++)
        if (i + 32 * k < n) r[k] = __ldcs(s + i + 32 * k);
}

// Streaming stores: the chunk is read later by the consumer, not by this kernel, and
// evict-first writes measured 1-3 % faster than plain ones on the H100.
__device__ __forceinline__ void store_group(uint4 *d, const uint4 (&r)[copy_unroll], u32 i, u32 n) {
#pragma unroll
    for (u32 k = 0; k < copy_unroll; k++)
        if (i + 32 * k < n) __stcs(d + i + 32 * k, r[k]);
}

// Where packets of chunk `id` go in this launch: the window after the walk, else the
// chunks that left it during the walk (sorted by id). Uniform across the warp. Arrival
// indices relative to the launch's start (a launch is at most one ring region).
struct placement {
    u64 chunk_id;
    u32 from, until;  // packets [from, until) of the launch were placed
    int buffer;       // < 0: the chunk had no buffer in this launch (its packets are late)
};

__device__ __forceinline__ u32 rel(u64 at, u64 start) {
    return at <= start ? 0u : u32(min64(at - start, 0xffffffffu));
}

__device__ placement find_chunk(const params &p, const window_entry *snap,
                                const resolve_entry *rs, u32 nr, u64 id, u64 start) {
    const window_entry e = snap[id % p.max_chunks];
    if (mapped_to(e, id)) return placement{id, rel(e.mapped_at, start), 0xffffffffu, e.buffer};
    u32 lo = 0, hi = nr;
    while (lo < hi) {
        const u32 mid = (lo + hi) / 2;
        if (rs[mid].chunk_id < id) lo = mid + 1;
        else hi = mid;
    }
    if (lo < nr && rs[lo].chunk_id == id)
        return placement{id, rel(rs[lo].mapped_at, start), rel(rs[lo].flushed_at, start),
                         int(rs[lo].buffer)};
    return placement{id, 0, 0, -1};
}

// SPEAD, the scatter's last block: of the packets of this launch placed with an item,
// the one whose bid (arrival index + 1) won its heap's item writes the value. Every
// block's bids are in (they fenced before counting themselves done).
__device__ void settle_items(const params &p, u64 start, u32 n, u32 first_slot) {
    const u32 n_items = p.spead.n_items;
    const volatile u32 *placed_in = reinterpret_cast<const volatile u32 *>(p.spead_placed);
    const volatile unsigned long long *tags =
        reinterpret_cast<const volatile unsigned long long *>(p.item_tags);
    const parsed *pk = reinterpret_cast<const parsed *>(p.parsed_ptr);
    const u64 *packet_items = reinterpret_cast<const u64 *>(p.packet_items);
    u64 *items = reinterpret_cast<u64 *>(p.items);
    for (u32 li = threadIdx.x; li < n; li += blockDim.x) {
        const u32 b = placed_in[first_slot + li];
        if (b == not_placed) continue;
        const u64 heap_slot = pk[first_slot + li].slot / p.spead.parts;
        const u64 *pv = packet_items + u64(first_slot + li) * n_items;
        for (u32 k = 0; k < n_items; k++) {
            const u64 at = (u64(b) * n_items + k) * p.ppc + heap_slot;
            if (pv[k] != spead_absent && tags[at] == start + li + 1) items[at] = pv[k];
        }
    }
    __syncthreads();
}

// SPEAD, the scatter's last block, for a chunk that left the window (in `buffer`): each
// heap's bytes are the lengths of its packets received (one bit each), it is present when
// they cover it; the per-heap arrays go to their host copies. counts: heaps complete,
// heaps partial. Every thread of the block takes part.
__device__ void settle_heaps(const params &p, u32 buffer, u32 *counts) {
    const spead_desc &d = p.spead;
    const u64 heaps = p.ppc;
    const volatile u32 *bits =
        reinterpret_cast<const volatile u32 *>(p.bits) + u64(buffer) * p.bit_words;
    u64 *host = reinterpret_cast<u64 *>(p.extras_host) + u64(buffer) * heaps * (1 + d.n_items);
    __syncthreads();  // every thread has read the previous chunk's counts
    if (threadIdx.x < 2) counts[threadIdx.x] = 0;
    __syncthreads();
    u32 complete = 0, partial = 0;
    for (u64 h = threadIdx.x; h < heaps; h += blockDim.x) {
        u64 bytes = 0;
        for (u32 k = 0; k < d.parts; k++) {
            const u64 s = h * d.parts + k;
            if ((bits[s / 32] >> (s % 32)) & 1u) bytes += spead_part_len(d, k);
        }
        const u64 at = u64(buffer) * heaps + h;
        const u8 whole = bytes == d.heap ? 1 : 0;
        reinterpret_cast<u64 *>(p.heap_bytes)[at] = bytes;
        host[h] = bytes;
        reinterpret_cast<u8 *>(p.present)[at] = whole;
        reinterpret_cast<u8 *>(p.present_host)[at] = whole;
        complete += whole;
        partial += bytes != 0 && !whole;
    }
    const u64 n_items = u64(d.n_items) * heaps;
    const u64 *items = reinterpret_cast<const u64 *>(p.items) + u64(buffer) * n_items;
    for (u64 j = threadIdx.x; j < n_items; j += blockDim.x) host[heaps + j] = items[j];
    if (complete) atomicAdd(&counts[0], complete);
    if (partial) atomicAdd(&counts[1], partial);
    __syncthreads();
}

}  // namespace

// The scatter, compiled apart for fixed-size formats and SPEAD (sp), so that the fixed
// path's registers are what they were before SPEAD came.
template <bool sp>
__device__ __forceinline__ void scatter(const params &p, u64 start, u32 slot_index,
                                        u32 launch_end) {
    __shared__ unsigned long long placed_sh, dup_sh, late_sh, rejected_sh, other_sh, bytes_sh;
    __shared__ unsigned long long by_sh[n_spead_reasons];
    __shared__ u32 last, heaps_sh[2];
    state *st = reinterpret_cast<state *>(p.st);
    const slot_state *ss = reinterpret_cast<const slot_state *>(p.slots) + slot_index;
    const parsed *pk = reinterpret_cast<const parsed *>(p.parsed_ptr);
    const window_entry *snap =
        reinterpret_cast<const window_entry *>(p.snap) + u64(slot_index) * p.max_chunks;
    const resolve_entry *rs =
        reinterpret_cast<const resolve_entry *>(p.resolve) + u64(slot_index) * p.n_buffers;
    const u32 lane = threadIdx.x & 31;
    const u32 warps = gridDim.x * (blockDim.x / 32);
    const u32 gw = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
    const bool skipped = ss->skipped != 0;
    const u64 end = skipped ? start : ss->consumed;
    const u32 nr = skipped ? 0 : ss->n_flush;
    const u32 size = p.fmt.payload_size;
    const u32 n_items = sp ? p.spead.n_items : 0;
    if (threadIdx.x == 0) placed_sh = dup_sh = late_sh = rejected_sh = other_sh = bytes_sh = 0;
    if (sp && threadIdx.x < n_spead_reasons) by_sh[threadIdx.x] = 0;
    __syncthreads();
    u32 placed = 0;  // this warp's; the rarer outcomes go straight to shared counters
    u64 placed_bytes = 0;
    placement at{~u64{0}, 0u, 0u, -1};
    bool have = false;
    const u32 n = u32(end - start);
    // Each warp copies one payload at a time. The next packet's header is read while
    // the current payload is copied, and the duplicate check (an L2 atomic) runs while
    // the payload's first loads are in flight: per payload, only the copy's own
    // latency is left on the warp's path.
    const u32 first_slot = u32(start % p.ring_packets);
    parsed h = gw < n ? pk[first_slot + gw] : parsed{0, 0, rejected_offset};
    for (u32 li = gw; li < n; li += warps) {
        const parsed cur = h;
        if (li + warps < n) h = pk[first_slot + li + warps];
        u32 *placed_in = sp ? reinterpret_cast<u32 *>(p.spead_placed) + first_slot + li : nullptr;
        if (sp && n_items != 0 && lane == 0) *placed_in = not_placed;
        if (cur.offset >= other_gpu_offset) {
            if (lane == 0) {
                const bool rej = cur.offset == rejected_offset;
                atomicAdd(rej ? &rejected_sh : &other_sh, 1ull);
                if (sp && rej)
                    atomicAdd(&by_sh[(cur.slot >= 1 && cur.slot <= n_spead_reasons ? cur.slot
                                                                                  : sr_frame) -
                                     1],
                              1ull);
            }
            continue;
        }
        if (!have || at.chunk_id != cur.chunk_id) {
            at = find_chunk(p, snap, rs, nr, cur.chunk_id, start);
            have = true;
        }
        if (at.buffer < 0 || li < at.from || li >= at.until) {
            if (lane == 0) atomicAdd(&late_sh, 1ull);
            continue;
        }
        const u32 bit = 1u << (cur.slot & 31);
        u32 old = 0;
        if (lane == 0)
            old = atomicOr(reinterpret_cast<u32 *>(p.bits) + u64(at.buffer) * p.bit_words +
                               (cur.slot >> 5),
                           bit);
        // Fixed formats: slot * size. SPEAD: packet k of heap slot h at the heap offset
        // the split layout gives it (the parse checked the packet's offset and length).
        u32 len = size;
        u64 at_byte = u64(cur.slot) * size;
        if constexpr (sp) {
            const u32 part = cur.slot % p.spead.parts;
            len = u32(spead_part_len(p.spead, part));
            at_byte = u64(cur.slot / p.spead.parts) * p.spead.heap + spead_part_offset(p.spead, part);
        }
        const u8 *src = frame_in_slot(p, first_slot + li) + cur.offset;
        u8 *dst = reinterpret_cast<u8 *>(p.data) + u64(at.buffer) * p.chunk_bytes + at_byte;
        const bool fast = ((reinterpret_cast<std::uintptr_t>(dst) |
                            reinterpret_cast<std::uintptr_t>(src) | len) &
                           15) == 0;
        // The duplicate check waits for the atomic; on the aligned path the payload's
        // first loads go out before it (two copies of the check keep the load group's
        // registers out of the unaligned path; one shared check made ptxas spill more).
        if (fast) {
            const uint4 *s16 = reinterpret_cast<const uint4 *>(src);
            uint4 *d16 = reinterpret_cast<uint4 *>(dst);
            const u32 n16 = len / 16;
            uint4 r[copy_unroll];
            load_group(r, s16, lane, n16);
            if (__shfl_sync(full_mask, old, 0) & bit) {
                if (lane == 0) atomicAdd(&dup_sh, 1ull);
                continue;
            }
            for (u32 base = 0;;) {
                store_group(d16, r, base + lane, n16);
                base += 32 * copy_unroll;
                if (base >= n16) break;
                load_group(r, s16, base + lane, n16);
            }
        } else {
            if (__shfl_sync(full_mask, old, 0) & bit) {
                if (lane == 0) atomicAdd(&dup_sh, 1ull);
                continue;
            }
            if constexpr (sp)
                warp_copy_piece(dst, src, len, lane);
            else
                warp_copy(dst, src, len, lane);
        }
        if (lane == 0) {
            if constexpr (sp) {
                // Presence per heap is settled when the chunk leaves the window. Of the
                // packets placed that carry an item, the last to arrive sets it (as on
                // the CPU): each bids its arrival index, the last block writes the winner.
                if (n_items != 0) {
                    *placed_in = u32(at.buffer);
                    const u64 *pv = reinterpret_cast<const u64 *>(p.packet_items) +
                                    u64(first_slot + li) * n_items;
                    const u64 heap_slot = cur.slot / p.spead.parts;
                    for (u32 k = 0; k < n_items; k++)
                        if (pv[k] != spead_absent)
                            atomicMax(reinterpret_cast<unsigned long long *>(p.item_tags) +
                                          (u64(at.buffer) * n_items + k) * p.ppc + heap_slot,
                                      (unsigned long long)(start + li + 1));
                }
            } else {
                reinterpret_cast<u8 *>(p.present)[u64(at.buffer) * p.ppc + cur.slot] = 1;
            }
            atomicAdd(reinterpret_cast<u32 *>(p.n_present) + at.buffer, 1u);
        }
        placed++;
        if constexpr (sp) placed_bytes += len;
    }
    if constexpr (!sp) placed_bytes = u64(placed) * size;
    if (lane == 0 && placed) {
        atomicAdd(&placed_sh, (unsigned long long)placed);
        atomicAdd(&bytes_sh, (unsigned long long)placed_bytes);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        auto add = [](u64 &total, unsigned long long v) {
            if (v) atomicAdd(reinterpret_cast<unsigned long long *>(&total), v);
        };
        add(st->sc_packets, placed_sh);
        add(st->sc_duplicate, dup_sh);
        add(st->sc_late, late_sh);
        add(st->sc_rejected, rejected_sh);
        add(st->sc_other_gpu, other_sh);
        add(st->sc_bytes, bytes_sh);
        if (sp)
            for (u32 r = 0; r < n_spead_reasons; r++) add(st->sc_rejected_by[r], by_sh[r]);
        __threadfence();
        last = atomicAdd(&st->blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();

    // The last block settles the chunks that left the window and reports to the host.
    record *rec = reinterpret_cast<record *>(p.records + u64(slot_index) * p.record_stride);
    flush_entry *out = reinterpret_cast<flush_entry *>(rec + 1);
    if constexpr (sp) {
        if (n_items != 0) settle_items(p, start, n, first_slot);
    }
    u64 lost = 0, chunks = 0, partial_heaps = 0;
    for (u32 k = 0; k < nr; k++) {
        const resolve_entry f = rs[k];
        u32 np = 0, partial = 0;
        if constexpr (sp) {
            settle_heaps(p, f.buffer, heaps_sh);
            np = heaps_sh[0];
            partial = heaps_sh[1];
        } else {
            np = *reinterpret_cast<const volatile u32 *>(
                reinterpret_cast<const u32 *>(p.n_present) + f.buffer);
            if (np > 0) {
                const u8 *src = reinterpret_cast<const u8 *>(p.present) + u64(f.buffer) * p.ppc;
                u8 *dst = reinterpret_cast<u8 *>(p.present_host) + u64(f.buffer) * p.ppc;
                for (u64 j = threadIdx.x; j < p.ppc; j += blockDim.x) dst[j] = src[j];
            }
        }
        if (threadIdx.x == 0) {
            out[k] = flush_entry{f.chunk_id, f.buffer, np, partial, 0};
            lost = sat_add(lost, p.ppc - np);
            chunks += np > 0 || partial > 0;
            partial_heaps += partial;
        }
    }
    if (threadIdx.x == 0) {
        counters &t = st->totals;
        const volatile state *vs = st;
        const u64 pk_n = vs->sc_packets, dp = vs->sc_duplicate, lt = vs->sc_late,
                  rj = vs->sc_rejected, og = vs->sc_other_gpu, by = vs->sc_bytes;
        if (!skipped) {
            t.received += end - start;
            t.lost = sat_add(t.lost, sat_add(ss->lost, lost));
        }
        t.late += lt;
        t.rejected += rj;
        t.other_gpu += og;
        t.packets += pk_n;
        t.bytes += by;
        t.duplicate += dp;
        t.chunks += chunks;
        t.heaps_partial += partial_heaps;
        if (sp) {
            for (u32 r = 0; r < n_spead_reasons; r++) {
                t.rejected_by[r] += vs->sc_rejected_by[r];
                st->sc_rejected_by[r] = 0;
            }
        }
        st->sc_packets = st->sc_duplicate = st->sc_late = st->sc_rejected = st->sc_other_gpu = 0;
        st->sc_bytes = 0;
        st->blocks_done = 0;
        rec->start = start;
        rec->end = launch_end;
        rec->consumed = end;
        rec->n_flush = nr;
        rec->skipped = skipped;
        rec->totals = t;
        rec->free_head = st->free_head;
        __threadfence_system();
    }
}

extern "C" __global__ void __launch_bounds__(scatter_threads)
    casper400g_gd_scatter(params p, u64 start, u32 slot_index, u32 launch_end) {
    scatter<false>(p, start, slot_index, launch_end);
}

extern "C" __global__ void __launch_bounds__(scatter_threads)
    casper400g_gd_scatter_spead(params p, u64 start, u32 slot_index, u32 launch_end) {
    scatter<true>(p, start, slot_index, launch_end);
}

// Holds a stream until the host sets *flag (benchmarks queue work behind it).
extern "C" __global__ void casper400g_gd_gate(const volatile u32 *flag) {
    while (*flag == 0) __nanosleep(1000);
}

// The rdma source's present kernel shares this fatbin.
#include "rdma_kernels.cuh"
