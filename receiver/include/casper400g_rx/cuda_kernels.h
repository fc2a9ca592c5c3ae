// Memory layouts shared by the GPUDirect reorder kernels (cuda_kernels.cu) and the
// host code that drives them (cuda_gpudirect.cpp). Plain structs, no CUDA headers.
#pragma once

#include <cstdint>

// The chunk routing below and the frame parse (gd_spead.h) are compiled for both sides:
// the parse kernel and the host code (and its tests) run the same arithmetic.
#include "casper400g_rx/gd_spead.h"

namespace casper400g_rx::gd {

// A capture into several GPUs gives global chunk `id` to GPU id mod gpus, which knows it
// as its local chunk id / gpus: each GPU's window walks its own chunks only, so none
// counts another GPU's chunks as lost. False (with `local` untouched) for another GPU's
// chunk. gpus <= 1: every chunk, local = id (the one-GPU capture).
CASPER400G_GD_HD inline bool route_chunk(std::uint64_t id, std::uint32_t gpus, std::uint32_t gpu,
                                         std::uint64_t &local) {
    if (gpus <= 1) {
        local = id;
        return true;
    }
    if (id % gpus != gpu) return false;
    local = id / gpus;
    return true;
}

// Packets per parse-kernel step: one per thread of a parse block.
inline constexpr unsigned tile = 1024;
inline constexpr unsigned walk_threads = 1024;
inline constexpr unsigned scatter_threads = 1024;
// Most GPU chunks a GPUDirect capture may have, and its largest window (max_chunks):
// the walk kernel keeps the window and the chunks it maps in shared memory.
inline constexpr unsigned max_buffers = 1024;
inline constexpr unsigned max_window = 1024;
// Window events the walk kernel stages in shared memory at a time.
inline constexpr unsigned walk_page = 1024;
// Free-ring entries the walk kernel reads ahead (one PCIe round trip for all).
inline constexpr unsigned free_cache = 256;

struct format_desc {
    std::uint32_t payload_size;
    std::uint32_t seq_offset, seq_width, seq_big_endian;
    std::uint32_t has_stream_id, sid_offset, sid_width, sid_big_endian;
    std::uint64_t sid_value;
    std::uint32_t udp_port, pad;
};

struct counters {
    std::uint64_t received, packets, bytes, lost, late, duplicate, rejected, chunks;
    std::uint64_t other_gpu;  // packets of another GPU's chunks (never placed here)
    // SPEAD formats: heaps some bytes but not all of which came when their chunk left,
    // and `rejected` by reason (spead_reason - 1).
    std::uint64_t heaps_partial;
    std::uint64_t rejected_by[n_spead_reasons];
};

// Device-resident state of the placement window.
struct state {
    std::uint64_t head, top;    // chunks [head, top] are the window
    std::uint64_t processed;    // packets (global arrival index) consumed so far
    std::uint64_t free_head;    // entries of the free ring taken
    std::uint32_t started, finished, blocks_done, pad;
    counters totals;
    // The running launch's scatter results.
    std::uint64_t sc_packets, sc_duplicate, sc_late, sc_rejected, sc_other_gpu, sc_bytes;
    std::uint64_t sc_rejected_by[n_spead_reasons];
};

// One window position (chunk id % max_chunks): the chunk mapped there and since when.
struct window_entry {
    std::uint64_t chunk_id;  // ~0: none
    std::uint64_t mapped_at;  // arrival index of the packet that mapped it
    std::int32_t buffer;      // < 0: none
    std::uint32_t pad;
};

// Dynamic shared memory of the walk kernel for a window of m chunks: the window, a page
// of events (index + chunk id), the chunks it maps, the free-ring read-ahead.
constexpr unsigned walk_shared_bytes(unsigned m, unsigned n_buffers) {
    return unsigned(m * sizeof(window_entry) + walk_page * (4 + 8) + n_buffers * 4 +
                    free_cache * 4);
}

// A chunk that left the window during a launch. Packets of it with arrival index in
// [mapped_at, flushed_at) were placed, later ones were late.
struct resolve_entry {
    std::uint64_t chunk_id;
    std::uint64_t mapped_at, flushed_at;
    std::uint32_t buffer, pad;
};

// Per launch slot (device memory): what the walk kernel decided.
struct slot_state {
    std::uint64_t lost;      // chunks skipped over entirely or never filled
    std::uint64_t consumed;  // packets [start, consumed) were handled
    std::uint32_t n_flush, skipped;
};

struct flush_entry {
    std::uint64_t chunk_id;
    std::uint32_t buffer;
    std::uint32_t n_present;  // slots present (SPEAD: heaps complete)
    std::uint32_t partial;    // SPEAD: heaps with some bytes but not all
    std::uint32_t pad;
};

// Per launch slot, in mapped host memory: the launch's outcome for the host.
// Followed by n_buffers flush_entry records.
struct record {
    std::uint64_t start, end, consumed;
    std::uint32_t n_flush, skipped;
    counters totals;         // the capture's counters once this launch is done
    std::uint64_t free_head;  // free-ring entries the kernels have taken so far
};

// One parsed header, written by the parse kernel, read by the walk and scatter kernels.
inline constexpr std::uint32_t rejected_offset = 0xffffffffu;
inline constexpr std::uint32_t other_gpu_offset = 0xfffffffeu;  // another GPU's chunk
inline constexpr std::uint32_t not_placed = 0xffffffffu;        // spead_placed: none
struct parsed {
    std::uint64_t chunk_id;
    std::uint32_t slot;    // packet slot (SPEAD: heap slot * parts + packet of the heap);
                           // rejected: the reason (spead_reason)
    std::uint32_t offset;  // payload (SPEAD: heap bytes) offset inside the frame;
                           // rejected_offset: failed a check; other_gpu_offset: another
                           // GPU's chunk
};

struct params {
    std::uint64_t ring;  // arrival ring: ring_packets slots of `stride` bytes, frame at +headroom
    std::uint64_t lens;  // uint32 frame length per ring slot (the NIC's completion byte count)
    std::uint32_t ring_packets, stride, headroom, max_chunks;
    std::uint64_t ppc;
    std::uint32_t n_buffers, bit_words;
    format_desc fmt;
    std::uint64_t data, chunk_bytes;  // GPU chunks: n_buffers * chunk_bytes
    std::uint64_t present;            // n_buffers * ppc bytes
    std::uint64_t bits;               // n_buffers * bit_words uint32
    std::uint64_t n_present;          // n_buffers uint32
    std::uint64_t present_host;       // mapped host copy of the present masks
    std::uint64_t st, win, slots, records, parsed_ptr;
    std::uint64_t snap;               // per slot: the window (max_chunks window_entry) after the walk
    std::uint64_t resolve;            // per slot: n_buffers resolve_entry
    std::uint64_t ev_idx, ev_count;   // window events per parse tile: batch uint32, tiles uint32
    std::uint64_t record_stride;
    std::uint64_t free_ring, free_tail;  // mapped host memory written by the host
    std::uint32_t has_first_chunk, pad;
    std::uint64_t first_chunk;        // local id (route_chunk)
    std::uint32_t gpus, gpu;          // this GPU of a capture's several (route_chunk)
    // SPEAD formats (spead.enabled): ppc above is heaps per chunk, present and n_present
    // count heaps, bits has a bit per packet slot (heaps * parts per chunk).
    spead_desc spead;
    std::uint64_t heap_bytes;       // n_buffers * ppc uint64: bytes per heap
    std::uint64_t items;            // n_buffers * n_items * ppc uint64: item k of heap h
                                    // at [(buffer * n_items + k) * ppc + h]
    std::uint64_t item_tags;        // as items: arrival index + 1 of the packet that set it
    std::uint64_t extras_host;      // mapped host copies, per buffer ppc * (1 + n_items)
                                    // uint64: heap bytes, then the items (gpu_chunk_pool)
    std::uint64_t packet_items;     // per ring slot: the packet's n_items item values
    std::uint64_t spead_placed;     // per ring slot uint32: the buffer it was placed in
};

}  // namespace casper400g_rx::gd
