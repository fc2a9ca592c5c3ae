// The engine's free chunks, kept apart by the part of the pool they belong to (staging.h):
// a chunk number takes a chunk of its own part, so a chunk's memory is on the node of
// the GPU the number routes to. One part (one device, or host chunks): one queue, as
// before the split. A lock per chunk, never per packet.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "casper400g_rx/chunk.h"

namespace casper400g_rx {

class free_chunks {
public:
    using status = chunk_queue::status;

    // Every chunk of `pool` free.
    explicit free_chunks(chunk_pool &pool) : pool_(pool) {
        for (std::size_t p = 0; p < pool.parts(); p++)
            parts_.push_back(std::make_unique<chunk_queue>(pool.part_size(p)));
        for (std::size_t i = 0; i < pool.size(); i++) push(pool.get(i));
    }

    // Back to its own part.
    void push(chunk *c) { parts_[pool_.part_of(c->index)]->push(c); }
    // A free chunk for chunk number `id` (of its part), or null.
    chunk *try_pop(std::uint64_t id) { return parts_[pool_.part_of(id)]->try_pop(); }
    chunk *pop_for(std::uint64_t id, std::chrono::nanoseconds timeout, status &why) {
        return parts_[pool_.part_of(id)]->pop_for(timeout, why);
    }
    void interrupt() {
        for (auto &q : parts_) q->interrupt();
    }
    std::size_t size() const {
        std::size_t n = 0;
        for (const auto &q : parts_) n += q->size();
        return n;
    }
    std::size_t size(std::size_t part) const { return parts_[part]->size(); }

private:
    chunk_pool &pool_;
    std::vector<std::unique_ptr<chunk_queue>> parts_;
};

}  // namespace casper400g_rx
