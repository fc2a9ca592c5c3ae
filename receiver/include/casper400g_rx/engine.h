// The placement engine: puts each packet's payload into the slot its sequence
// number selects, keeps a window of open chunks and counts every packet.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "casper400g_rx/chunk.h"
#include "casper400g_rx/format.h"

namespace casper400g_rx {

enum class slow_consumer_policy { block, drop_oldest };

struct engine_config {
    std::size_t packets_per_chunk = 1024;
    std::size_t max_chunks = 4;  // open chunks (the reorder window)
    std::size_t n_chunks = 0;    // chunks in the pool; 0 = max_chunks + 4
    slow_consumer_policy policy = slow_consumer_policy::block;
    std::optional<std::uint64_t> first_chunk;  // default: the first packet's chunk

    void validate() const;
};

struct counters {
    std::uint64_t received = 0;         // every packet offered to the engine
    std::uint64_t packets = 0;          // placed into a chunk
    std::uint64_t bytes = 0;            // payload bytes placed
    std::uint64_t lost = 0;             // slots empty when their chunk left the window
    std::uint64_t late = 0;             // older than the window
    std::uint64_t duplicate = 0;        // slot already filled
    std::uint64_t rejected = 0;         // failed the format's checks
    std::uint64_t chunks = 0;           // chunks that left the window with data
    std::uint64_t chunks_dropped = 0;   // ready chunks recycled unconsumed (drop_oldest)
    std::uint64_t packets_dropped = 0;  // packets inside those chunks
    std::uint64_t discarded = 0;        // packets arriving while stopping (no chunk available)
    std::uint64_t waits = 0;            // times the engine waited for a free chunk
};

class engine {
public:
    engine(const format &fmt, const engine_config &cfg);
    engine(const engine &) = delete;
    engine &operator=(const engine &) = delete;
    virtual ~engine() = default;

    // Places a batch. Thread-safe: one lock per batch, none per packet.
    void add_batch(const packet_ref *pkts, std::size_t n);
    // Flushes every open chunk to the ready queue and ends the stream.
    virtual void finish();
    // Makes a blocked add_batch give up waiting for a free chunk.
    void interrupt();

    // Consistent lock-free snapshot, refreshed after every batch and before any wait.
    counters stats() const noexcept;

    chunk_queue &ready() noexcept { return ready_; }
    void release(chunk *c);  // consumer hands a chunk back
    chunk_pool &pool() noexcept { return pool_; }
    const format &fmt() const noexcept { return decoder_.fmt(); }
    const engine_config &config() const noexcept { return cfg_; }
    std::size_t chunks_in_use() const;  // open, ready or held by the consumer

protected:  // the header-split engine (hds.h) keeps its own window over the same pieces
    void place(const packet_ref &pkt);
    void advance_to(std::uint64_t new_head);
    void flush_slot(std::uint64_t chunk_id);
    chunk *acquire();
    void publish() noexcept;

    engine_config cfg_;
    decoder decoder_;
    chunk_pool pool_;
    chunk_queue free_;
    chunk_queue ready_;
    std::mutex mutex_;
    std::vector<chunk *> window_;  // indexed by chunk_id % max_chunks
    bool started_ = false;
    bool finished_ = false;
    std::uint64_t head_ = 0;  // oldest chunk id in the window
    std::uint64_t top_ = 0;   // newest chunk id seen
    counters c_;

    // A seqlock: the writer (under mutex_) makes `version` odd while it copies, so a
    // reader retries instead of mixing counters from two batches.
    struct published {
        std::atomic<std::uint64_t> version{0};
        std::atomic<std::uint64_t> v[sizeof(counters) / sizeof(std::uint64_t)];
    };
    published pub_{};
};

}  // namespace casper400g_rx
