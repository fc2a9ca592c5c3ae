#include "casper400g_rx/engine.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "casper400g_rx/copy.h"
#include "casper400g_rx/slot_state.h"
#include "casper400g_rx/spead.h"

namespace casper400g_rx {

namespace {

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

constexpr std::size_t n_counters = sizeof(counters) / sizeof(std::uint64_t);
static_assert(sizeof(counters) == n_counters * sizeof(std::uint64_t),
              "counters must hold only uint64 fields");

std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) noexcept {
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

// Saturates: a jump across most of the 64-bit sequence space is not a count.
std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b) noexcept {
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

}  // namespace

void engine_config::validate() const {
    if (packets_per_chunk == 0) throw std::invalid_argument("packets_per_chunk must be > 0, got 0");
    if (max_chunks == 0) throw std::invalid_argument("max_chunks must be > 0, got 0");
    if (n_chunks != 0 && n_chunks < max_chunks + 1)
        throw std::invalid_argument("n_chunks " + std::to_string(n_chunks) +
                                    " must be at least max_chunks + 1 = " +
                                    std::to_string(max_chunks + 1));
    if (stall_timeout_ms == 0)
        throw std::invalid_argument("stall_timeout_ms must be > 0, got 0");
    if (resync_after == 0) throw std::invalid_argument("resync_after must be > 0, got 0");
    staging.validate();
}

std::size_t engine_config::split_window(std::size_t queues, std::size_t depth) const {
    validate();
    if (queues == 0 || queues > 64)
        throw std::invalid_argument("queues must be 1..64, got " + std::to_string(queues));
    if (depth == 0 || depth > (1u << 16))
        throw std::invalid_argument("receive queue depth must be 1..65536, got " +
                                    std::to_string(depth));
    // Posted receives reach up to depth * queues sequence numbers past the newest
    // packet; the chunks they point into are opened ahead of the window.
    return max_chunks + (depth * queues + packets_per_chunk - 1) / packets_per_chunk + 1;
}

engine_config engine_config::sized(std::size_t queues, std::size_t depth, bool delivery) const {
    validate();
    if (queues == 0 || queues > 1024)
        throw std::invalid_argument("queues must be 1..1024, got " + std::to_string(queues));
    engine_config out = *this;
    if (out.max_jump == 0) out.max_jump = 4 * max_chunks;
    if (depth == 0) {
        // The window, 4 chunks in the consumer's hands or on their way to it, and with
        // several queues 2 of skew per queue.
        if (out.n_chunks == 0) out.n_chunks = max_chunks + 4 + (queues > 1 ? 2 * queues : 0);
        out.n_chunks = staging.round_pool(out.n_chunks);  // any window finds its part's chunks
        return out;
    }
    const std::size_t wsize = split_window(queues, depth);
    if (out.n_chunks == 0) {
        // Twice the window: after a jump in the stream, the chunks the old predictions
        // point into stay pinned until those receives complete.
        out.n_chunks = 2 * wsize + 4 + (delivery ? split_delivery_chunks : 0);
    }
    out.n_chunks = staging.round_pool(out.n_chunks);  // any window finds its part's chunks
    if (out.n_chunks < wsize + 1) {
        throw std::invalid_argument(
            "n_chunks " + std::to_string(out.n_chunks) + " is too small for header-data split: " +
            std::to_string(depth) + " posted receives per queue reach " +
            std::to_string(wsize - max_chunks) + " chunks ahead of the " +
            std::to_string(max_chunks) + "-chunk window, so at least " +
            std::to_string(wsize + 1) + " chunks are needed");
    }
    return out;
}

// SPEAD formats give each slot its byte count, named items and cell bitmap.
static slot_extras extras_of(const format &fmt) {
    slot_extras x;
    if (fmt.spead) {
        fmt.validate();
        x.heap_bytes = true;
        x.items = fmt.spead->n_items;
        x.cell_words = spead_format::cell_words(fmt.payload_size);
        x.edge_bytes = spead_format::edge_bytes(fmt.payload_size);
    }
    return x;
}

void engine::published::store(const counters &c) noexcept {
    std::uint64_t raw[n_counters];
    std::memcpy(raw, &c, sizeof(raw));
    const std::uint64_t ver = version.load(std::memory_order_relaxed);
    version.store(ver + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (std::size_t i = 0; i < n_counters; i++) v[i].store(raw[i], std::memory_order_relaxed);
    version.store(ver + 2, std::memory_order_release);
}

counters engine::published::load() const noexcept {
    std::uint64_t raw[n_counters];
    for (;;) {
        const std::uint64_t before = version.load(std::memory_order_acquire);
        for (std::size_t i = 0; i < n_counters; i++) raw[i] = v[i].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if ((before & 1) == 0 && version.load(std::memory_order_relaxed) == before) break;
    }
    counters out;
    std::memcpy(&out, raw, sizeof(raw));
    return out;
}

engine::engine(const format &fmt, const engine_config &cfg)
    : cfg_(cfg.sized(1)),
      decoder_(fmt),
      pool_(cfg_.n_chunks, cfg.packets_per_chunk, fmt.payload_size, extras_of(fmt), cfg_.staging),
      free_(pool_),
      ready_(pool_.size()),
      window_(cfg_),
      // Open chunks lie in head_ .. head_ + pool size - 1. No further: the slowest
      // queue's window must always find a chunk once the consumer gives chunks back, so
      // faster queues wait rather than take every chunk ahead of it.
      open_(pool_.size(), nullptr) {
    per_chunk_ = divider(cfg_.packets_per_chunk);
    by_window_ = divider(cfg_.max_chunks);
    set_queues(1);
    publish();
}

engine::~engine() = default;

void engine::set_queues(std::size_t n) {
    if (n == 0 || n > 1024)
        throw std::invalid_argument("queues must be 1..1024, got " + std::to_string(n));
    std::lock_guard<std::mutex> lock(mutex_);
    if (started_) throw std::logic_error("set_queues after the first packet");
    queues_.clear();
    shared_slots_ = n > 1;
    for (std::size_t q = 0; q < n; q++) {
        queues_.push_back(std::make_unique<queue_state>());
        queues_.back()->cache.assign(cfg_.max_chunks, cached{});
    }
    window_.set_queues(n, now_ns());
}

void engine::add_batch(std::size_t q, const packet_ref *pkts, std::size_t n) {
    if (q >= queues_.size())
        throw std::out_of_range("queue " + std::to_string(q) + " of an engine with " +
                                std::to_string(queues_.size()) + " queues");
    queue_state &s = *queues_[q];
    window_policy::activity &a = window_.act(q);
    a.active_ns.store(now_ns(), std::memory_order_relaxed);
    s.discarding = !enter(s, q);
    // The packets were just written by another core (the NIC's DMA, the kernel): their
    // first lines are asked for a few packets ahead, so that the misses overlap instead
    // of stalling each packet in turn.
    // A small packet's every line (its first only, the hardware's prefetcher follows a
    // longer one): at 256 B the copy waited on the three lines after the first.
    auto fetch = [](const packet_ref &p) {
        const std::size_t all = (p.size + 63) / 64;
        const std::size_t lines = all <= prefetch_lines ? all : 1;
        for (std::size_t k = 0; k < lines; k++) __builtin_prefetch(p.payload + 64 * k);
    };
    const std::size_t ahead = std::min(n, prefetch_distance);
    for (std::size_t i = 0; i < ahead; i++) fetch(pkts[i]);
    if (decoder_.fmt().spead) {
        for (std::size_t i = 0; i < n; i++) {
            if (i + ahead < n) fetch(pkts[i + ahead]);
            place_spead(s, q, pkts[i]);
        }
        end_heap_run(s);
    } else {
        for (std::size_t i = 0; i < n; i++) {
            if (i + ahead < n) fetch(pkts[i + ahead]);
            place(s, q, pkts[i]);
        }
    }
    order_payload_stores();
    // Active until now (a batch may have waited long for a chunk): not stalled.
    a.active_ns.store(now_ns(), std::memory_order_relaxed);
    a.busy.store(false, std::memory_order_release);
    s.pub.store(s.c);
}

void engine::lock_parked(std::size_t q, std::unique_lock<std::mutex> &lock) {
    window_policy::activity &a = window_.act(q);
    a.parked.store(true, std::memory_order_seq_cst);
    lock.lock();
    a.parked.store(false, std::memory_order_relaxed);
}

bool engine::enter(queue_state &s, std::size_t q) {
    window_policy::activity &a = window_.act(q);
    // Pairs with the window policy's edits: they bump `gen`, then read `busy`.
    a.busy.store(true, std::memory_order_seq_cst);
    if (s.synced && a.gen.load(std::memory_order_seq_cst) == s.seen_gen) return true;
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    lock_parked(q, lock);
    return sync_locked(s, q);
}

bool engine::sync_locked(queue_state &s, std::size_t q) {
    const std::uint64_t gen = window_.act(q).gen.load(std::memory_order_seq_cst);
    if (finished_) return false;
    if (gen == s.seen_gen && s.synced) return true;
    s.seen_gen = gen;
    if (s.epoch != c_.window_resyncs) {
        // The window moved to a resynced stream: what this queue placed is its backlog.
        s.epoch = c_.window_resyncs;
        window_.after_resync(s.run, s.own, resync_ns_);
        s.own = window_policy::none;
    }
    // A queue that was passed over (or said it was done) rejoins at the window's head.
    window_.attach(q, head_);
    if (started_ && window_.apply_skip(q, c_)) {
        close_ready_locked();
        publish();
    }
    std::fill(s.cache.begin(), s.cache.end(), cached{});
    s.synced = started_;
    s.head = window_.rec(q).head;
    return true;
}

void engine::start_locked(std::uint64_t id) {
    started_ = true;
    head_ = cfg_.first_chunk ? *cfg_.first_chunk : id;
    top_ = head_;
    window_.start(head_);
}

void engine::place(queue_state &s, std::size_t q, const packet_ref &pkt) {
    // `received` goes up together with the packet's outcome, never before it: a
    // snapshot must always add up.
    std::uint64_t seq;
    if (!decoder_.decode(pkt, seq)) {
        s.c.rejected++;
        s.c.received++;
        return;
    }
    const std::size_t slot = seq - per_chunk_.quot(seq) * cfg_.packets_per_chunk;
    chunk *c = window_chunk(s, q, seq);
    if (c == nullptr) return;
    if (!take_slot(c->present[slot], shared_slots_)) {
        s.c.duplicate++;
        s.c.received++;
        return;
    }
    const std::size_t size = decoder_.fmt().payload_size;
    copy_payload(c->data + slot * size, pkt.payload, size);
    s.c.packets++;
    s.c.bytes += size;
    s.c.received++;
}

chunk *engine::try_take_locked(std::uint64_t id) {
    if (chunk *c = free_.try_pop(id)) return c;
    if (cfg_.policy == slow_consumer_policy::drop_oldest) {
        chunk *c = pool_.parts() == 1 ? ready_.try_pop()
                                      : ready_.try_pop_first([this, part = pool_.part_of(id)](
                                                                 const chunk *r) {
                                            return pool_.part_of(r->index) == part;
                                        });
        if (c != nullptr) {
            c_.chunks_dropped++;
            c_.packets_dropped += c->n_present;
            return c;
        }
    }
    return nullptr;
}

engine::outcome engine::slow_path(queue_state &s, std::size_t q, std::uint64_t seq) {
    using clock = std::chrono::steady_clock;
    const std::size_t w = cfg_.max_chunks;
    const std::uint64_t id = seq / cfg_.packets_per_chunk;
    const auto stall = std::chrono::milliseconds(cfg_.stall_timeout_ms);
    window_policy::activity &a = window_.act(q);
    order_payload_stores();
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    lock_parked(q, lock);
    chunk *spare = nullptr;  // a free chunk taken while waiting
    bool waited = false;
    clock::time_point wait_start{};
    struct give_back {
        engine &e;
        chunk *&c;
        ~give_back() {
            if (c != nullptr) e.free_.push(c);
        }
    } guard{*this, spare};
    for (;;) {
        if (!sync_locked(s, q)) return outcome::stopping;
        if (!started_) {
            start_locked(id);
            s.head = head_;
            s.synced = true;
        }
        switch (window_.classify(s.head, s.own, id)) {
            case window_policy::place::late:
                return outcome::retry;  // counted by window_chunk
            case window_policy::place::out_of_window: {
                const outcome o = out_of_window_locked(s, q, seq);
                if (o != outcome::retry) return o;
                continue;  // the window moved to it
            }
            case window_policy::place::ahead:
                move_head_locked(q, id - w + 1);
                s.head = window_.rec(q).head;
                break;
            case window_policy::place::in_window:
                break;
        }
        s.run.n = 0;
        if (s.own == window_policy::none || id > s.own) s.own = id;
        cached &e = s.cache[id % w];
        if (e.c != nullptr && e.id == id) return outcome::retry;
        if (id - head_ < open_.size()) {
            chunk *&o = open_[id % open_.size()];
            if (o == nullptr) {
                chunk *c = spare != nullptr ? std::exchange(spare, nullptr) : try_take_locked(id);
                if (c != nullptr) {
                    c->chunk_id = id;
                    c->n_present = 0;
                    std::memset(c->present, 0, cfg_.packets_per_chunk);
                    pool_.reset_extras(*c);
                    o = c;
                    n_open_++;
                    top_ = std::max(top_, id);
                }
            }
            if (o != nullptr) {
                e = cached{id, o};
                publish();
                return outcome::retry;
            }
        }
        // No chunk: the consumer holds them (block policy), or slower queues hold the
        // window's head back. Those idle for the stall timeout are passed over at once
        // (not a stall timeout after this queue began to wait: a socket that never got
        // a flow would otherwise cost each queue that much of its buffer).
        if (!waited) {
            waited = true;
            wait_start = clock::now();
            c_.waits++;
            publish();
        }
        if (pass_stalled_locked()) {
            publish();
            continue;
        }
        if (id - head_ >= open_.size() && clock::now() - wait_start >= stall / 5) {
            // Too far ahead of a queue that keeps placing (so is not stalled) but lags:
            // move it forward rather than run at its pace (live sources).
            window_.skip_lagging(id - open_.size() + 1, now_ns());
        }
        // Take a free chunk only when this queue may open one: one that is too far ahead
        // of the slowest queue waits without holding a chunk the slowest queue needs.
        const bool may_open = id - head_ < open_.size();
        a.waiting.store(true, std::memory_order_relaxed);
        a.busy.store(false, std::memory_order_seq_cst);  // not placing while it waits
        lock.unlock();
        chunk_queue::status why = chunk_queue::status::ok;
        chunk *got = nullptr;
        if (may_open && spare == nullptr)
            got = free_.pop_for(id, std::chrono::milliseconds(5), why);
        else
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        a.busy.store(true, std::memory_order_seq_cst);
        a.waiting.store(false, std::memory_order_relaxed);
        lock_parked(q, lock);
        if (got != nullptr) spare = got;
        if (why == chunk_queue::status::interrupted) return outcome::stopping;
    }
}

engine::outcome engine::out_of_window_locked(queue_state &s, std::size_t q, std::uint64_t seq) {
    if (!window_.note_out_of_window(s.run, seq, cfg_.packets_per_chunk, s.own, now_ns())) {
        s.c.out_of_window++;
        s.c.received++;
        return outcome::counted;
    }
    // The stream is there now: every open chunk goes on (their empty slots lost, as at the
    // end of a stream) once no other queue is placing into them, and the window starts
    // again at the run. The chunks between are not counted: they were never the stream.
    const std::uint64_t to = window_.resync_head(s.run, cfg_.packets_per_chunk);
    window_.hold_others(q);
    if (top_ >= head_) {
        const std::uint64_t last = std::min<std::uint64_t>(top_, head_ + open_.size() - 1);
        for (std::uint64_t k = head_;; k++) {
            close_chunk_locked(k);
            if (k == last) break;
        }
    }
    head_ = to;
    top_ = to;
    window_.begin_resync(to);
    window_.start(to);
    c_.window_resyncs++;
    resync_ns_ = now_ns();
    s.epoch = c_.window_resyncs;
    window_.after_resync(s.run, s.own, resync_ns_);
    s.own = window_policy::none;
    std::fill(s.cache.begin(), s.cache.end(), cached{});
    s.head = to;
    publish();
    return outcome::retry;
}

void engine::move_head_locked(std::size_t q, std::uint64_t new_head) {
    if (window_.move(q, new_head)) close_ready_locked();
}

void engine::close_ready_locked() {
    for (;;) {
        const std::uint64_t limit = window_.limit();
        if (head_ < limit) window_.unblocked();
        while (head_ < limit) {
            if (n_open_ == 0) {
                // Bounded: a window moves at most max_jump chunks past its end at once.
                c_.lost = add_sat(c_.lost, mul_sat(limit - head_, cfg_.packets_per_chunk));
                head_ = limit;
                break;
            }
            close_chunk_locked(head_);
            head_++;
        }
        // A queue has moved past head_ and another has not: how long has it waited?
        if (!window_.blocked_too_long(head_, now_ns())) return;
        if (!pass_stalled_locked()) return;
    }
}

void engine::close_chunk_locked(std::uint64_t id) {
    chunk *&o = open_[id % open_.size()];
    const std::uint64_t ppc = cfg_.packets_per_chunk;
    if (o == nullptr) {
        c_.lost = add_sat(c_.lost, ppc);  // not a single packet of this chunk arrived
        return;
    }
    chunk *c = std::exchange(o, nullptr);
    n_open_--;
    c->n_present = count_present(c->present, ppc);
    c_.lost = add_sat(c_.lost, ppc - c->n_present);
    // SPEAD: a chunk of incomplete heaps still holds their bytes, and goes out.
    const std::size_t partial = c->heap_bytes != nullptr ? count_partial_heaps(*c, ppc) : 0;
    c_.heaps_partial += partial;
    if (c->n_present == 0 && partial == 0) {
        free_.push(c);
        return;
    }
    c_.chunks++;
    ready_.push(c);
}

bool engine::pass_stalled_locked() {
    const bool any = window_.pass_stalled(head_, now_ns(), c_);
    if (any) close_ready_locked();
    return any;
}

void engine::queue_done(std::size_t q) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (q >= window_.queues() || finished_) return;
    window_policy::record &r = window_.rec(q);
    r.attached = false;
    r.done = true;
    if (started_) close_ready_locked();
    publish();
}

chunk *engine::acquire(std::uint64_t id) {
    if (chunk *c = try_take_locked(id)) return c;
    // block policy, or drop_oldest with every chunk in the consumer's hands.
    c_.waits++;
    publish();
    for (;;) {
        chunk_queue::status why;
        if (chunk *c = free_.pop_for(id, std::chrono::milliseconds(100), why)) return c;
        if (why != chunk_queue::status::timeout) return nullptr;
    }
}

void engine::finish() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (finished_) return;
        finished_ = true;
        for (std::size_t q = 0; q < window_.queues(); q++)
            window_.act(q).gen.fetch_add(1, std::memory_order_seq_cst);
    }
    // A queue still placing a batch finishes it first (the rest of it is discarded once
    // it sees `finished_`); chunks must not reach the consumer while being written.
    for (std::size_t q = 0; q < window_.queues(); q++)
        while (window_.act(q).busy.load(std::memory_order_seq_cst)) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mutex_);
    // head_ passes top_ when the window moved for a packet that was then discarded
    // (stopping while waiting for a free chunk): nothing is left open then.
    if (started_ && head_ <= top_) {
        // One by one up to top_: top_ + 1 overflows when the stream reached the largest
        // sequence numbers.
        for (std::uint64_t id = head_;; id++) {
            close_chunk_locked(id);
            if (id == top_) break;
        }
        head_ = top_;
    }
    publish();
    ready_.finish();
}

void engine::interrupt() { free_.interrupt(); }

void engine::release(chunk *c) { free_.push(c); }

std::size_t engine::chunks_in_use() const { return pool_.size() - free_.size(); }

void engine::publish() noexcept { pub_.store(c_); }

std::vector<std::uint64_t> engine::queue_received() const {
    std::vector<std::uint64_t> out;
    for (const auto &s : queues_) out.push_back(s->pub.load().received);
    return out;
}

counters engine::stats() const noexcept {
    counters out = pub_.load();
    std::uint64_t *o = reinterpret_cast<std::uint64_t *>(&out);
    for (const auto &s : queues_) {
        const counters qc = s->pub.load();
        const std::uint64_t *v = reinterpret_cast<const std::uint64_t *>(&qc);
        for (std::size_t i = 0; i < n_counters; i++) o[i] = add_sat(o[i], v[i]);
    }
    return out;
}

}  // namespace casper400g_rx
