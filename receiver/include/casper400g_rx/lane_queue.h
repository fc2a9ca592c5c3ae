// The ready device chunks of every lane of a capture in the order they were filled: one
// queue for the consumer, whichever device a chunk is on. A lane short of free chunks
// under drop_oldest takes back its own oldest ready chunk, wherever it stands. A lock per
// chunk, never per packet; the capacity is every lane's ring, so push never waits.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

#include "casper400g_rx/cuda_chunks.h"

namespace casper400g_rx {

class lane_ready_queue {
public:
    using status = gpu_chunk_queue::status;

    explicit lane_ready_queue(std::size_t capacity);

    void push(gpu_chunk *c);
    // Waits up to `timeout` for the oldest chunk of any lane; nullptr with the reason.
    gpu_chunk *pop_for(std::chrono::nanoseconds timeout, status &why);
    // The oldest ready chunk of `lane`, or nullptr; never waits.
    gpu_chunk *take_oldest(std::size_t lane);
    // No more chunks will be pushed: waiters get `finished` once the queue is empty.
    void finish();
    bool drained() const;
    std::size_t size() const;

private:
    gpu_chunk *&at(std::size_t i) { return ring_[(head_ + i) % ring_.size()]; }

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<gpu_chunk *> ring_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    bool finished_ = false;
};

}  // namespace casper400g_rx
