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
// queue has moved past it. How far a packet may move a window, and what happens to a
// queue that stalls or lags, is the window policy (window.h) that the header-split
// engine (hds.h) follows too.
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
#include "casper400g_rx/divider.h"
#include "casper400g_rx/format.h"
#include "casper400g_rx/free_chunks.h"
#include "casper400g_rx/spead.h"
#include "casper400g_rx/window.h"

namespace casper400g_rx {

enum class slow_consumer_policy { block, drop_oldest };

// Header-data split pools: chunks beyond the engine's own for chunks on their way to a
// GPU, or in the hands of a consumer that pauses (a Python consumer's pauses of a few ms
// emptied the pool at 250 Gb/s into host chunks): a live lane without a free chunk gives
// chunks up whole.
inline constexpr std::size_t split_delivery_chunks = 8;

struct engine_config {
    std::size_t packets_per_chunk = 1024;
    std::size_t max_chunks = 4;  // open chunks per queue (the reorder window)
    std::size_t n_chunks = 0;    // chunks in the pool; 0: sized() for the queues
    slow_consumer_policy policy = slow_consumer_policy::block;
    std::optional<std::uint64_t> first_chunk;  // default: the first packet's chunk
    // How long chunks wait for a queue that has stopped placing packets (several queues).
    std::uint32_t stall_timeout_ms = 50;
    // Move a queue that keeps placing but lags forward (its older packets late) rather
    // than wait for it: for live sources, whose other queues drop while they wait; a
    // replay (pcap, mem generator) waits, losing nothing.
    bool skip_lagging = true;
    // How far (chunks) one packet may move a queue's window past its end, and how far
    // behind its head a packet still counts late: beyond, it is out of window (window.h).
    // 0: four windows (4 * max_chunks).
    std::size_t max_jump = 0;
    // Consecutive out-of-window packets of a queue, each within a window of the one
    // before, that move the window to them.
    std::size_t resync_after = 16;
    // The pool split per device of a delivery into several (staging.h); sized() makes
    // n_chunks a multiple of its period.
    staging_plan staging;

    void validate() const;
    // The pool and window a capture needs (one rule for every path, Python asks for it):
    // n_chunks when not given, for `queues` receive queues -- the window, 4 chunks in the
    // consumer's hands or on their way, and 2 of skew per queue beyond the first --
    // or, for the header-data split (`depth` receives posted per queue), twice the split
    // window plus 4, and with `delivery` split_delivery_chunks more; max_jump resolved.
    // Throws naming a bad value.
    engine_config sized(std::size_t queues, std::size_t depth = 0, bool delivery = false) const;
    // The header-data split's window: max_chunks plus the chunks that `depth` receives
    // posted on each of `queues` reach ahead of it.
    std::size_t split_window(std::size_t queues, std::size_t depth) const;
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
    std::uint64_t out_of_window = 0;    // too far ahead of or behind the window (window.h)
    std::uint64_t window_resyncs = 0;   // times a run of those moved the window to them
    // Live header-split lanes: packets of chunks given up because no chunk was free (the
    // consumer held them all), and those chunks.
    std::uint64_t no_free_chunk = 0;
    std::uint64_t chunks_given_up = 0;
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
    virtual void set_queues(std::size_t n);
    std::size_t queues() const noexcept { return window_.queues(); }
    // Places a batch that queue `q` received. Thread-safe; one thread per queue.
    void add_batch(std::size_t q, const packet_ref *pkts, std::size_t n);
    void add_batch(const packet_ref *pkts, std::size_t n) { add_batch(0, pkts, n); }
    // Queue `q` will deliver nothing more: chunks no longer wait for it.
    virtual void queue_done(std::size_t q);
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
    // For chunk number `id`: blocking, with mutex_ held (header-split engine).
    chunk *acquire(std::uint64_t id);
    // A free chunk for chunk number `id` (of the pool's part it routes to), or under
    // drop_oldest the oldest ready one of that part (counted); null when neither. With
    // mutex_ held.
    chunk *try_take_locked(std::uint64_t id);
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
    free_chunks free_;
    chunk_queue ready_;
    std::mutex mutex_;
    bool started_ = false;
    bool finished_ = false;
    std::uint64_t head_ = 0;  // oldest chunk id not handed on
    std::uint64_t top_ = 0;   // newest chunk id opened
    counters c_;              // window counters (under mutex_)
    published pub_{};
    window_policy window_;    // the queues' records and the shared policy (under mutex_)

private:
    struct cached {
        std::uint64_t id = UINT64_MAX;
        chunk *c = nullptr;
    };
    // What a queue thread owns: its per-packet counters and its view of its window (its
    // activity flags are the window policy's).
    struct alignas(64) queue_state {
        std::uint64_t seen_gen = 0;
        bool synced = false;     // `head` is valid (copied from the window's record)
        bool discarding = false; // the engine finished during this batch
        std::uint64_t head = 0;  // oldest chunk id this queue may still place into
        std::uint64_t own = window_policy::none;  // newest chunk id it placed into
        std::uint64_t epoch = 0;  // window resyncs it has seen
        window_policy::run run;  // its out-of-window packets in a row
        spead_run heap_run;      // SPEAD, one queue: its heap's packets in order (spead.h)
        std::vector<cached> cache;  // by chunk id % max_chunks
        counters c;
        published pub{};
    };
    enum class outcome { retry, counted, stopping };

    bool enter(queue_state &s, std::size_t q);  // false: the engine has finished
    // Takes the mutex for queue q's thread, parked meanwhile (window.h).
    void lock_parked(std::size_t q, std::unique_lock<std::mutex> &lock);
    // The open chunk for packet `seq` (its chunk: seq / packets_per_chunk) for queue `q`,
    // or nullptr once the packet was counted (`late`, `out_of_window`, or `discarded`
    // while finishing).
    chunk *window_chunk(queue_state &s, std::size_t q, std::uint64_t seq);
    void place_spead(queue_state &s, std::size_t q, const packet_ref &pkt);  // engine_spead.cpp
    void end_heap_run(queue_state &s) noexcept;                               // engine_spead.cpp
    bool sync_locked(queue_state &s, std::size_t q);
    void start_locked(std::uint64_t id);
    void place(queue_state &s, std::size_t q, const packet_ref &pkt);
    outcome slow_path(queue_state &s, std::size_t q, std::uint64_t seq);
    // An out-of-window packet: counted, or (a long enough run) the window moves to it.
    outcome out_of_window_locked(queue_state &s, std::size_t q, std::uint64_t seq);
    void move_head_locked(std::size_t q, std::uint64_t new_head);
    void close_ready_locked();
    void close_chunk_locked(std::uint64_t id);
    bool pass_stalled_locked();

    // Packets whose first line is fetched ahead of the one being placed.
    static constexpr std::size_t prefetch_distance = 8;
    // A packet of up to this many lines is fetched whole, a longer one its first only.
    static constexpr std::size_t prefetch_lines = 8;

    // Packets per chunk and max_chunks, per packet without a division where they are
    // powers of two (the defaults).
    divider per_chunk_{1};
    divider by_window_{1};
    std::vector<std::unique_ptr<queue_state>> queues_;
    // Several queues may place the same packet (set_queues): slot flags then change by
    // atomic exchange; one queue writes them plainly.
    bool shared_slots_ = false;
    std::vector<chunk *> open_;  // by chunk id % open_.size(): ids head_ .. head_ + size - 1
    std::size_t n_open_ = 0;
    std::int64_t resync_ns_ = 0;  // when the window last resynced
};

// Per packet, on both placement paths (engine.cpp, engine_spead.cpp): inline.
inline chunk *engine::window_chunk(queue_state &s, std::size_t q, std::uint64_t seq) {
    const std::size_t w = cfg_.max_chunks;
    const std::uint64_t id = per_chunk_.quot(seq);
    for (;;) {
        if (s.discarding) {
            s.c.discarded++;
            s.c.received++;
            return nullptr;
        }
        if (s.synced) {
            if (id < s.head) {
                const std::uint64_t ref = s.own < s.head ? s.own : s.head;
                if (id >= ref || ref - id <= cfg_.max_jump) {
                    s.run.n = 0;
                    s.c.late++;
                    s.c.received++;
                    return nullptr;
                }
            } else if (id - s.head < w) {
                const cached &e = s.cache[by_window_.rem(id)];
                if (e.c != nullptr && e.id == id) {
                    s.run.n = 0;
                    return e.c;
                }
            }
        }
        const outcome o = slow_path(s, q, seq);
        if (o == outcome::counted) return nullptr;
        if (o == outcome::stopping) s.discarding = true;
    }
}

}  // namespace casper400g_rx
