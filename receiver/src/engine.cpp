#include "casper400g_rx/engine.h"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

namespace casper400g_rx {

namespace {

constexpr std::size_t n_counters = sizeof(counters) / sizeof(std::uint64_t);
static_assert(sizeof(counters) == n_counters * sizeof(std::uint64_t),
              "counters must hold only uint64 fields");

}  // namespace

void engine_config::validate() const {
    if (packets_per_chunk == 0) throw std::invalid_argument("packets_per_chunk must be > 0, got 0");
    if (max_chunks == 0) throw std::invalid_argument("max_chunks must be > 0, got 0");
    if (n_chunks != 0 && n_chunks < max_chunks + 1)
        throw std::invalid_argument("n_chunks " + std::to_string(n_chunks) +
                                    " must be at least max_chunks + 1 = " +
                                    std::to_string(max_chunks + 1));
}

static std::size_t pool_size(const engine_config &cfg) {
    cfg.validate();
    return cfg.n_chunks ? cfg.n_chunks : cfg.max_chunks + 4;
}

engine::engine(const format &fmt, const engine_config &cfg)
    : cfg_(cfg),
      decoder_(fmt),
      pool_(pool_size(cfg), cfg.packets_per_chunk, fmt.payload_size),
      free_(pool_.size()),
      ready_(pool_.size()),
      window_(cfg.max_chunks, nullptr) {
    cfg_.n_chunks = pool_.size();
    for (std::size_t i = 0; i < pool_.size(); i++) free_.push(pool_.get(i));
    publish();
}

void engine::add_batch(const packet_ref *pkts, std::size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) {
        c_.received += n;
        c_.discarded += n;
    } else {
        for (std::size_t i = 0; i < n; i++) place(pkts[i]);
    }
    publish();
}

void engine::place(const packet_ref &pkt) {
    // `received` goes up together with the packet's outcome, never before it: acquire()
    // may publish the counters mid-batch, and a snapshot must always add up.
    const auto seq = decoder_.decode(pkt);
    if (!seq) {
        c_.rejected++;
        c_.received++;
        return;
    }
    const std::size_t ppc = cfg_.packets_per_chunk;
    const std::uint64_t id = *seq / ppc;
    const std::size_t slot = *seq % ppc;
    if (!started_) {
        started_ = true;
        head_ = cfg_.first_chunk ? *cfg_.first_chunk : id;
        top_ = head_;
    }
    if (id < head_) {
        c_.late++;
        c_.received++;
        return;
    }
    if (id - head_ >= cfg_.max_chunks) advance_to(id - cfg_.max_chunks + 1);
    chunk *&c = window_[id % cfg_.max_chunks];
    if (c == nullptr) {
        c = acquire();
        if (c == nullptr) {  // interrupted while waiting: the capture is stopping
            c_.discarded++;
            c_.received++;
            return;
        }
        c->chunk_id = id;
        c->n_present = 0;
        std::memset(c->present, 0, ppc);
    }
    if (id > top_) top_ = id;
    if (c->present[slot]) {
        c_.duplicate++;
        c_.received++;
        return;
    }
    const std::size_t size = decoder_.fmt().payload_size;
    std::memcpy(c->data + slot * size, pkt.payload, size);
    c->present[slot] = 1;
    c->n_present++;
    c_.packets++;
    c_.bytes += size;
    c_.received++;
}

void engine::flush_slot(std::uint64_t chunk_id) {
    chunk *&c = window_[chunk_id % cfg_.max_chunks];
    if (c == nullptr) {
        c_.lost += cfg_.packets_per_chunk;  // not a single packet of this chunk arrived
        return;
    }
    c_.lost += cfg_.packets_per_chunk - c->n_present;
    c_.chunks++;
    ready_.push(c);
    c = nullptr;
}

void engine::advance_to(std::uint64_t new_head) {
    const std::uint64_t end = std::min<std::uint64_t>(new_head, head_ + cfg_.max_chunks);
    for (std::uint64_t id = head_; id < end; id++) flush_slot(id);
    if (new_head > end) {
        // Saturates: a jump across most of the 64-bit sequence space is not a count.
        const std::uint64_t chunks = new_head - end;
        const std::uint64_t ppc = cfg_.packets_per_chunk;
        const std::uint64_t missing = chunks > UINT64_MAX / ppc ? UINT64_MAX : chunks * ppc;
        c_.lost = missing > UINT64_MAX - c_.lost ? UINT64_MAX : c_.lost + missing;
    }
    head_ = new_head;
}

chunk *engine::acquire() {
    if (chunk *c = free_.try_pop()) return c;
    if (cfg_.policy == slow_consumer_policy::drop_oldest) {
        if (chunk *c = ready_.try_pop()) {
            c_.chunks_dropped++;
            c_.packets_dropped += c->n_present;
            return c;
        }
    }
    // block policy, or drop_oldest with every chunk in the consumer's hands.
    c_.waits++;
    publish();
    for (;;) {
        chunk_queue::status why;
        if (chunk *c = free_.pop_for(std::chrono::milliseconds(100), why)) return c;
        if (why != chunk_queue::status::timeout) return nullptr;
    }
}

void engine::finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
    // head_ passes top_ when the window advanced for a packet that was then discarded
    // (stopping while waiting for a free chunk): nothing is left open then.
    if (started_ && head_ <= top_) {
        // Flushes head_ .. top_ one by one: top_ + 1 overflows when the stream reached
        // the largest sequence numbers, and the window never holds more than max_chunks.
        for (std::uint64_t id = head_;; id++) {
            flush_slot(id);
            if (id == top_) break;
        }
    }
    publish();
    ready_.finish();
}

void engine::interrupt() { free_.interrupt(); }

void engine::release(chunk *c) { free_.push(c); }

std::size_t engine::chunks_in_use() const { return pool_.size() - free_.size(); }

void engine::publish() noexcept {
    std::uint64_t raw[n_counters];
    std::memcpy(raw, &c_, sizeof(raw));
    const std::uint64_t v = pub_.version.load(std::memory_order_relaxed);
    pub_.version.store(v + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (std::size_t i = 0; i < n_counters; i++)
        pub_.v[i].store(raw[i], std::memory_order_relaxed);
    pub_.version.store(v + 2, std::memory_order_release);
}

counters engine::stats() const noexcept {
    std::uint64_t raw[n_counters];
    for (;;) {
        const std::uint64_t before = pub_.version.load(std::memory_order_acquire);
        for (std::size_t i = 0; i < n_counters; i++)
            raw[i] = pub_.v[i].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if ((before & 1) == 0 && pub_.version.load(std::memory_order_relaxed) == before) break;
    }
    counters out;
    std::memcpy(&out, raw, sizeof(raw));
    return out;
}

}  // namespace casper400g_rx
