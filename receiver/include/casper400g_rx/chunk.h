// Chunks: fixed-size blocks of packet slots, allocated once and recycled
// between the engine and the consumer through two queues.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "casper400g_rx/ptr_queue.h"
#include "casper400g_rx/staging.h"

namespace casper400g_rx {

struct chunk {
    std::uint8_t *data = nullptr;     // packets_per_chunk * payload_size bytes
    std::uint8_t *present = nullptr;  // packets_per_chunk flags (0/1)
    std::uint64_t chunk_id = 0;
    std::size_t n_present = 0;
    std::size_t index = 0;  // position in the pool, stable for the chunk's lifetime
    // Per-slot arrays of SPEAD formats (spead.h); null otherwise.
    std::uint64_t *heap_bytes = nullptr;  // heap bytes covered per slot (spead.h)
    std::uint64_t *items = nullptr;       // named items: item i of slot s at [i * ppc + s]
    std::uint64_t *cells = nullptr;       // received 8-byte cells: cell_words per slot
    // Bytes of each cell that packets starting or ending inside it covered: edge_bytes
    // per slot, written only where a packet boundary falls off a cell boundary
    // (`edges_used` marks those slots, so that only they are cleared for reuse).
    std::uint8_t *edges = nullptr;
    std::uint8_t *edges_used = nullptr;  // one flag per slot
};

// How many of `n` presence flags (0 or 1) are set: a chunk's n_present when it leaves.
std::size_t count_present(const std::uint8_t *present, std::size_t n) noexcept;

// The per-slot arrays a pool gives each chunk beside its payload and presence flags.
struct slot_extras {
    bool heap_bytes = false;
    std::size_t items = 0;       // uint64 values per slot
    std::size_t cell_words = 0;  // uint64 words of cell bitmap per slot
    std::size_t edge_bytes = 0;  // bytes of cell edges per slot (a byte per cell)

    std::size_t words() const noexcept { return (heap_bytes ? 1 : 0) + items + cell_words; }
    // Bytes of edges and their per-slot flags, in uint64 words, for `ppc` slots.
    std::size_t edge_words(std::size_t ppc) const noexcept {
        return edge_bytes == 0 ? 0 : (ppc * (edge_bytes + 1) + 7) / 8;
    }
};

// Owns the memory of every chunk. Page-aligned so that a later pinning or DMA
// registration can cover it directly. Split as `staging` says (staging.h): chunk i in
// part staging.part_of(i), each part's memory one block per kind, bound to its node.
class chunk_pool {
public:
    chunk_pool(std::size_t n_chunks, std::size_t packets_per_chunk, std::size_t payload_size,
               const slot_extras &extras = {}, const staging_plan &staging = {});
    chunk_pool(const chunk_pool &) = delete;
    chunk_pool &operator=(const chunk_pool &) = delete;

    std::size_t size() const noexcept { return chunks_.size(); }
    chunk *get(std::size_t i) noexcept { return &chunks_[i]; }
    std::size_t packets_per_chunk() const noexcept { return packets_per_chunk_; }
    std::size_t payload_size() const noexcept { return payload_size_; }
    const slot_extras &extras() const noexcept { return extras_; }
    // Clears a chunk's per-slot arrays for reuse (items to spead_item_absent).
    void reset_extras(chunk &c) const noexcept;

    const staging_plan &staging() const noexcept { return staging_; }
    std::size_t parts() const noexcept { return parts_.size(); }
    // The part chunk number `id` takes its chunk from (that of the pool's chunk `id` too).
    std::size_t part_of(std::uint64_t id) const noexcept { return staging_.part_of(id); }
    std::size_t part_size(std::size_t p) const noexcept { return parts_[p].chunks; }
    const staging_binding &binding(std::size_t p) const noexcept { return parts_[p].binding; }
    // [first, last) of part p's payload memory.
    const std::uint8_t *part_begin(std::size_t p) const noexcept { return parts_[p].data.get(); }
    const std::uint8_t *part_end(std::size_t p) const noexcept {
        return parts_[p].data.get() + parts_[p].chunks * chunk_bytes_;
    }

private:
    struct free_deleter {
        void operator()(void *p) const noexcept;
    };
    using block = std::unique_ptr<std::uint8_t, free_deleter>;
    struct part {
        std::size_t chunks = 0;
        block data, extra, present;
        staging_binding binding;
    };
    std::size_t packets_per_chunk_;
    std::size_t payload_size_;
    slot_extras extras_;
    staging_plan staging_;
    std::size_t chunk_bytes_ = 0;
    std::vector<part> parts_;
    std::vector<chunk> chunks_;
};

// Chunks between the engine and the consumer (a lock per chunk, never per packet).
using chunk_queue = ptr_queue<chunk>;

}  // namespace casper400g_rx
