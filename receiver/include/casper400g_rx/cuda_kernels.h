// Memory layouts shared by the GPUDirect reorder kernels (cuda_kernels.cu) and the
// host code that drives them (cuda_gpudirect.cpp). Plain structs, no CUDA headers.
#pragma once

#include <cstdint>

namespace casper400g_rx::gd {

// Threads of the control kernel's single block; also its tile of packets.
inline constexpr unsigned control_threads = 1024;
inline constexpr unsigned scatter_threads = 1024;
// Most GPU chunks a GPUDirect capture may have (the control block keeps a log of
// the chunks it maps per tile in shared memory).
inline constexpr unsigned max_buffers = 1024;

struct format_desc {
    std::uint32_t payload_size;
    std::uint32_t seq_offset, seq_width, seq_big_endian;
    std::uint32_t has_stream_id, sid_offset, sid_width, sid_big_endian;
    std::uint64_t sid_value;
    std::uint32_t udp_port, pad;
};

struct counters {
    std::uint64_t received, packets, bytes, lost, late, duplicate, rejected, chunks;
};

// Device-resident state of the placement window.
struct state {
    std::uint64_t head, top;    // chunks [head, top] are mapped to buffers
    std::uint64_t processed;    // packets (global arrival index) consumed so far
    std::uint64_t free_head;    // entries of the free ring taken
    std::uint32_t started, finished, blocks_done, pad;
    counters totals;
    std::uint64_t sc_packets, sc_duplicate;  // the running launch's scatter results
};

// Per launch slot (device memory): what the control kernel decided.
struct slot_state {
    std::uint64_t received, late, rejected, lost;  // lost: chunks skipped over entirely
    std::uint64_t consumed;                         // packets [start, consumed) were handled
    std::uint32_t n_flush, skipped;
};

struct flush_entry {
    std::uint64_t chunk_id;
    std::uint32_t buffer;
    std::uint32_t n_present;
};

// Per launch slot, in mapped host memory: the launch's outcome for the host.
// Followed by n_buffers flush_entry records.
struct record {
    std::uint64_t start, end, consumed;
    std::uint32_t n_flush, skipped;
    counters totals;         // the capture's counters once this launch is done
    std::uint64_t free_head;  // free-ring entries the kernels have taken so far
};

// Destination of one packet, written by the control kernel for the scatter kernel.
struct meta {
    std::int32_t buffer;  // < 0: not placed (rejected or late)
    std::uint32_t slot;
    std::uint32_t offset;  // payload offset inside the frame
    std::uint32_t pad;
};

// One parsed header, written by the parse kernel (many blocks) for the control block.
struct parsed {
    std::uint64_t seq;
    std::uint32_t offset;  // payload offset inside the frame
    std::uint32_t ok;      // passed every check
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
    std::uint64_t st, win, win_id, slots, flush, records, meta_ptr, parsed_ptr;
    std::uint64_t record_stride;
    std::uint64_t free_ring, free_tail;  // mapped host memory written by the host
    std::uint32_t has_first_chunk, pad;
    std::uint64_t first_chunk;
};

}  // namespace casper400g_rx::gd
