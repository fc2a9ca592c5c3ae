// The placement engine: puts each packet's payload into the slot its sequence
// number selects, keeps a window of open chunks and counts every packet.
//
// Several receive queues (threads) feed one engine and share its chunks. Each queue
// has its own window of `max_chunks` chunks and places packets straight into the
// shared chunks without a lock: slots are disjoint by sequence number, the presence
// flag of a slot is taken with an atomic exchange (two queues delivering the same
// packet count one duplicate), and the per-packet counters belong to the queue. Only
// window movement synchronises, under one mutex, once per chunk and queue: opening a
// chunk, and a queue moving its window past chunks. A chunk is handed on once every
// queue has moved past it. A queue that holds chunks back without placing packets (a
// stalled queue) is passed over after `stall_timeout_ms` or when the others run out
// of chunks; that is counted (`queue_stalls`), its later packets for chunks already
// handed on count `late`, and it rejoins the window at its next packet. With
// `skip_lagging` (live sources), a queue that keeps placing but lags so far behind (a slower core, an overloaded NIC ring full of
// old packets) that the others wait for it longer than a fifth of the stall timeout is
// moved forward at its next batch: its older packets count `late` (skipped at no copy
// cost), counted `queue_skips`, so that under overload the capture runs at the sum of
// its queues' rates rather than K times the slowest one's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "casper400g_rx/chunk.h"
#include "casper400g_rx/format.h"
#include "casper400g_rx/spead.h"

namespace casper400g_rx {

enum class slow_consumer_policy { block, drop_oldest };

struct engine_config {
    std::size_t packets_per_chunk = 1024;
    std::size_t max_chunks = 4;  // open chunks per queue (the reorder window)
    std::size_t n_chunks = 0;    // chunks in the pool; 0 = max_chunks + 4
    slow_consumer_policy policy = slow_consumer_policy::block;
    std::optional<std::uint64_t> first_chunk;  // default: the first packet's chunk
    // How long chunks wait for a queue that has stopped placing packets (several queues).
    std::uint32_t stall_timeout_ms = 50;
    // Move a queue that keeps placing but lags forward (its older packets late) rather
    // than wait for it: for live sources, whose other queues drop while they wait; a
    // replay (pcap, mem generator) waits, losing nothing.
    bool skip_lagging = true;

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
    std::uint64_t queue_stalls = 0;     // times chunks were handed on past a stalled queue
    std::uint64_t queue_skips = 0;      // times a lagging queue's window was moved forward
    // SPEAD formats (spead.h): heaps with some bytes but not all when their chunk left,
    // and `rejected` by reason (spead_reject - 1).
    std::uint64_t heaps_partial = 0;
    std::uint64_t rejected_by[n_spead_rejects] = {};
};

class engine {
public:
    engine(const format &fmt, const engine_config &cfg);
    engine(const engine &) = delete;
    engine &operator=(const engine &) = delete;
    virtual ~engine();

    // The number of queues that will call add_batch (0 .. n-1); before the first batch.
    void set_queues(std::size_t n);
    std::size_t queues() const noexcept { return queues_.size(); }
    // Places a batch that queue `q` received. Thread-safe; one thread per queue.
    void add_batch(std::size_t q, const packet_ref *pkts, std::size_t n);
    void add_batch(const packet_ref *pkts, std::size_t n) { add_batch(0, pkts, n); }
    // Queue `q` will deliver nothing more: chunks no longer wait for it.
    void queue_done(std::size_t q);
    // Flushes every open chunk to the ready queue and ends the stream.
    virtual void finish();
    // Makes a blocked add_batch give up waiting for a free chunk.
    void interrupt();

    // Consistent lock-free snapshot of each queue's and the window's counters,
    // refreshed after every batch and before any wait.
    virtual counters stats() const noexcept;
    // Packets each queue offered to the engine so far (its `received`).
    virtual std::vector<std::uint64_t> queue_received() const;

    chunk_queue &ready() noexcept { return ready_; }
    void release(chunk *c);  // consumer hands a chunk back
    chunk_pool &pool() noexcept { return pool_; }
    const format &fmt() const noexcept { return decoder_.fmt(); }
    const engine_config &config() const noexcept { return cfg_; }
    std::size_t chunks_in_use() const;  // open, ready or held by the consumer

protected:  // the header-split engine (hds.h) keeps its own window over the same pieces
    chunk *acquire();  // blocking, with mutex_ held (header-split engine)
    // A free chunk, or under drop_oldest the oldest ready one (counted); null when
    // neither. With mutex_ held.
    chunk *try_take_locked();
    void publish() noexcept;

    // A seqlock: the writer makes `version` odd while it copies, so a reader retries
    // instead of mixing counters from two batches.
    struct published {
        std::atomic<std::uint64_t> version{0};
        std::atomic<std::uint64_t> v[sizeof(counters) / sizeof(std::uint64_t)];
        void store(const counters &c) noexcept;
        counters load() const noexcept;
    };

    engine_config cfg_;
    decoder decoder_;
    chunk_pool pool_;
    chunk_queue free_;
    chunk_queue ready_;
    std::mutex mutex_;
    bool started_ = false;
    bool finished_ = false;
    std::uint64_t head_ = 0;  // oldest chunk id not handed on
    std::uint64_t top_ = 0;   // newest chunk id opened
    counters c_;              // window counters (under mutex_)
    published pub_{};

private:
    struct cached {
        std::uint64_t id = UINT64_MAX;
        chunk *c = nullptr;
    };
    // What a queue thread owns: its per-packet counters and its view of its window.
    // `busy` and `gen` make the lock-free placement safe against being passed over:
    // a queue sets `busy` before placing and then checks `gen`; the window bumps `gen`
    // and then checks `busy`, and passes over only a queue that is not placing.
    // A queue is stalled when it is neither placing nor waiting for a chunk and has
    // been in no batch for stall_timeout_ms; a queue that waits for chunks (the consumer
    // is slow) is never passed over.
    struct alignas(64) queue_state {
        std::atomic<bool> busy{false};
        std::atomic<bool> waiting{false};
        std::atomic<std::int64_t> last_batch_ns{0};  // steady_clock, at each batch's start and end
        std::atomic<std::uint64_t> gen{0};
        std::uint64_t seen_gen = 0;
        bool synced = false;     // `head` is valid (copied from the window's record)
        bool discarding = false; // the engine finished during this batch
        std::uint64_t head = 0;  // oldest chunk id this queue may still place into
        std::vector<cached> cache;  // by chunk id % max_chunks
        counters c;
        published pub{};
    };
    // The window's record of each queue (under mutex_).
    struct queue_record {
        std::uint64_t head = 0;
        std::uint64_t skip_to = 0;  // the others waited too long for it: move to here
        bool attached = true;  // chunks wait for this queue
        bool done = false;
    };

    bool enter(queue_state &s, std::size_t q);  // false: the engine has finished
    // The open chunk of id `id` for queue `q`, or nullptr once the packet was counted
    // (`late`, or `discarded` while finishing).
    chunk *window_chunk(queue_state &s, std::size_t q, std::uint64_t id);
    void place_spead(queue_state &s, std::size_t q, const packet_ref &pkt);  // engine_spead.cpp
    bool sync_locked(queue_state &s, std::size_t q);
    void start_locked(std::uint64_t id);
    void place(queue_state &s, std::size_t q, const packet_ref &pkt);
    bool slow_path(queue_state &s, std::size_t q, std::uint64_t id);
    void move_head_locked(std::size_t q, std::uint64_t new_head);
    void close_ready_locked();
    void close_chunk_locked(std::uint64_t id);
    bool pass_stalled_locked();
    void skip_lagging_locked(std::uint64_t target);
    std::uint64_t min_attached_head() const noexcept;

    std::vector<std::unique_ptr<queue_state>> queues_;
    std::vector<queue_record> records_;
    std::vector<chunk *> open_;  // by chunk id % open_.size(): ids head_ .. head_ + size - 1
    std::size_t n_open_ = 0;
    std::uint64_t passed_ = 0;   // the furthest head of any queue
    bool blocked_ = false;       // head_ waits for a queue another queue has passed
    std::chrono::steady_clock::time_point blocked_since_{};
};

// Per packet, on both placement paths (engine.cpp, engine_spead.cpp): inline.
inline chunk *engine::window_chunk(queue_state &s, std::size_t q, std::uint64_t id) {
    const std::size_t w = cfg_.max_chunks;
    for (;;) {
        if (s.discarding) {
            s.c.discarded++;
            s.c.received++;
            return nullptr;
        }
        if (s.synced) {
            if (id < s.head) {
                s.c.late++;
                s.c.received++;
                return nullptr;
            }
            if (id - s.head < w) {
                const cached &e = s.cache[id % w];
                if (e.c != nullptr && e.id == id) return e.c;
            }
        }
        if (!slow_path(s, q, id)) s.discarding = true;
    }
}

}  // namespace casper400g_rx
