#include "casper400g_rx/rdma_ring.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace casper400g_rx {

void rdma_geometry::validate() const {
    if (slot_size <= rdma_slot_header)
        throw std::invalid_argument("slot_size must be > 8 (the slot header), got " +
                                    std::to_string(slot_size));
    if (slots == 0 || chunks == 0)
        throw std::invalid_argument("slots and chunks must be >= 1, got " + std::to_string(slots) +
                                    " and " + std::to_string(chunks));
    if (payload_size == 0 || payload_size > slot_size - rdma_slot_header)
        throw std::invalid_argument("payload_size must be 1.." +
                                    std::to_string(slot_size - rdma_slot_header) +
                                    " (slot_size - 8), got " + std::to_string(payload_size));
    if (slot_size > (1u << 24) || slots > (1u << 24) || chunks > (1u << 24))
        throw std::invalid_argument("slot_size, slots and chunks must fit the core's 24-bit "
                                    "registers");
}

std::size_t rdma_present_host(const std::uint8_t *chunk_base, const rdma_geometry &g,
                              std::uint64_t first_seq, std::uint8_t *present) {
    std::size_t n = 0;
    for (std::size_t s = 0; s < g.slots; s++) {
        std::uint64_t be;
        std::memcpy(&be, chunk_base + s * g.slot_size, sizeof(be));
        const bool ok = __builtin_bswap64(be) == first_seq + s;
        present[s] = ok;
        n += ok;
    }
    return n;
}

rdma_ring::rdma_ring(const rdma_geometry &g, rdma_present_fn present, rdma_credit_fn credit)
    : g_(g), present_fn_(std::move(present)), credit_fn_(std::move(credit)),
      places_(g.chunks), present_(g.chunks * g.slots, 0) {
    g_.validate();
    for (std::size_t i = 0; i < places_.size(); i++) places_[i].place = i;
}

void rdma_ring::on_error() {
    std::lock_guard<std::mutex> lk(mutex_);
    c_.errors++;
}

bool rdma_ring::consider_locked(std::uint64_t id, bool own_immediate) {
    slot_chunk &p = places_[id % g_.chunks];
    if (p.held) {
        c_.overruns++;
        c_.lost += g_.slots;
        return true;  // not an empty chunk: its data went over the consumer's
    }
    const std::size_t n = present_fn_(p.place, id * g_.slots, present(p.place));
    if (n == 0 && !own_immediate) return false;
    p.chunk_id = id;
    p.n_present = n;
    p.held = true;
    ready_.push_back(&p);
    c_.chunks++;
    c_.packets += n;
    c_.bytes += n * g_.payload_size;
    c_.lost += g_.slots - n;
    if (!own_immediate) c_.missing_immediates++;
    cv_.notify_all();
    return true;
}

void rdma_ring::on_immediate(std::uint32_t imm) {
    std::lock_guard<std::mutex> lk(mutex_);
    c_.immediates++;
    const std::uint32_t chunk24 = imm & 0xFF'FFFF;
    const std::uint32_t drop8 = imm >> 24;
    const std::uint64_t diff = (chunk24 - static_cast<std::uint32_t>(expected_)) & 0xFF'FFFF;
    if (diff >= (1u << 23)) {
        c_.late_immediates++;
        return;
    }
    std::uint64_t c = expected_ + diff;
    if (diff >= g_.chunks) {
        // Beyond any place the core may write: a wild immediate must not pass the chunks
        // before it, nor become a credit. A run of them that follow each other is the
        // stream itself (see the header).
        run_ = run_ > 0 && c > run_last_ && c - run_last_ <= g_.chunks ? run_ + 1 : 1;
        run_last_ = c;
        if (run_ < rdma_resync_after) {
            c_.out_of_window_immediates++;
            return;
        }
        c_.resyncs++;
        expected_ = c - (g_.chunks - 1);
    }
    run_ = 0;
    std::uint64_t empty = 0;
    for (std::uint64_t k = expected_; k < c; k++) {
        // A chunk more than a ring behind cannot have kept its data.
        if (k + g_.chunks <= c || !consider_locked(k, false)) {
            empty++;
            c_.lost += g_.slots;
        }
    }
    consider_locked(c, true);
    // The empty chunks are the ones the core dropped (its count, mod 256, says how many)
    // plus the ones whose every packet was lost.
    std::uint64_t core = (drop8 - drop_count_) & 0xFF;
    while (core + 256 <= empty) core += 256;
    core = std::min(core, empty);
    c_.core_dropped_chunks += core;
    c_.lost_chunks += empty - core;
    drop_count_ += static_cast<std::uint32_t>(core);
    expected_ = c + 1;
    credit_locked();
}

void rdma_ring::credit_locked() {
    std::uint64_t lowest = expected_;
    for (const slot_chunk &p : places_)
        if (p.held) lowest = std::min(lowest, p.chunk_id);
    // Chunk numbers start at 0: "none released" is -1, the core's reset value.
    const auto credit = static_cast<std::uint32_t>(lowest - 1);
    if (credit == static_cast<std::uint32_t>(c_.credit)) return;
    c_.credit = credit;
    c_.credits_sent++;
    if (credit_fn_) credit_fn_(credit);
}

rdma_ring::slot_chunk *rdma_ring::pop_for(std::chrono::nanoseconds timeout, bool &finished) {
    std::unique_lock<std::mutex> lk(mutex_);
    cv_.wait_for(lk, timeout, [this] { return !ready_.empty() || finished_; });
    finished = false;
    if (ready_.empty()) {
        finished = finished_;
        return nullptr;
    }
    slot_chunk *p = ready_.front();
    ready_.pop_front();
    return p;
}

void rdma_ring::release(slot_chunk *c) {
    std::lock_guard<std::mutex> lk(mutex_);
    c->held = false;
    credit_locked();
}

void rdma_ring::finish() {
    std::lock_guard<std::mutex> lk(mutex_);
    finished_ = true;
    cv_.notify_all();
}

rdma_counters rdma_ring::stats() const {
    std::lock_guard<std::mutex> lk(mutex_);
    return c_;
}

std::size_t rdma_ring::ready_count() const {
    std::lock_guard<std::mutex> lk(mutex_);
    return ready_.size();
}

}  // namespace casper400g_rx
