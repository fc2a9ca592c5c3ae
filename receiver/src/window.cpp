#include "casper400g_rx/window.h"

#include <algorithm>
#include <thread>

#include "casper400g_rx/engine.h"

namespace casper400g_rx {

window_policy::window_policy(const engine_config &cfg)
    : w_(cfg.max_chunks),
      max_jump_(cfg.max_jump),
      resync_after_(cfg.resync_after),
      stall_ns_(std::int64_t{cfg.stall_timeout_ms} * 1000000),
      skip_lagging_(cfg.skip_lagging) {}

void window_policy::set_queues(std::size_t n, std::int64_t now) {
    records_.assign(n, record{});
    acts_.reset(new activity[n]);
    for (std::size_t q = 0; q < n; q++) acts_[q].active_ns.store(now, std::memory_order_relaxed);
}

bool window_policy::note_out_of_window(run &r, std::uint64_t seq, std::uint64_t ppc,
                                       std::uint64_t own, std::int64_t now) const noexcept {
    const std::uint64_t id = seq / ppc;
    // A queue that has placed into the new window has caught up with it: what it sees
    // now is the stream, wherever it goes.
    if (own == none && now < r.stale_until && id >= r.stale_lo && id < r.stale_hi)
        return false;
    // A stream moves on: each packet later than the last, by less than a window.
    const bool follows = r.n > 0 && seq > r.seq && (seq - r.seq) / ppc < w_;
    if (!follows) {
        r.n = 0;
        r.low = seq / ppc;
    }
    r.n++;
    r.seq = seq;
    return r.n >= resync_after_;
}

void window_policy::begin_resync(std::uint64_t to) noexcept {
    // The old window's chunks, widened by how far a packet may stray from a queue's
    // window: from its first chunk to its furthest, and after a jump forward the chunks
    // jumped over (where a queue that lagged took its packets before the jump).
    const std::uint64_t reach = max_jump_ + w_;
    old_lo_ = first_ - std::min(first_, reach);
    old_hi_ = std::max(passed_ + std::min(reach, UINT64_MAX - passed_), to);
}

void window_policy::after_resync(run &r, std::uint64_t own, std::int64_t now) const noexcept {
    std::uint64_t lo = old_lo_, hi = old_hi_;
    if (own == none && r.stale_lo < r.stale_hi && now < r.stale_until) {
        lo = std::min(lo, r.stale_lo);
        hi = std::max(hi, r.stale_hi);
    }
    r = run{};
    r.stale_lo = lo;
    r.stale_hi = hi;
    r.stale_until = now + stall_ns_;
}

std::uint64_t window_policy::resync_head(const run &r, std::uint64_t ppc) const noexcept {
    // From the run's first chunk, unless that leaves its latest packet beyond the window.
    const std::uint64_t last = r.seq / ppc;
    return std::max(r.low, last - std::min<std::uint64_t>(last, w_ - 1));
}

void window_policy::start(std::uint64_t head) noexcept {
    passed_ = head;
    first_ = head;
    blocked_since_ = 0;
    for (auto &r : records_) {
        r.head = head;
        r.skip_to = 0;
    }
}

bool window_policy::move(std::size_t q, std::uint64_t new_head) noexcept {
    record &r = records_[q];
    if (new_head <= r.head) return false;
    r.head = new_head;
    passed_ = std::max(passed_, new_head);
    return true;
}

std::uint64_t window_policy::limit() const noexcept {
    std::uint64_t m = UINT64_MAX;
    for (const auto &r : records_)
        if (r.attached) m = std::min(m, r.head);
    return std::min(m, passed_);
}

void window_policy::attach(std::size_t q, std::uint64_t window_head) noexcept {
    record &r = records_[q];
    if (r.attached) return;
    r.attached = true;
    r.done = false;
    r.head = std::max(r.head, window_head);
}

bool window_policy::apply_skip(std::size_t q, counters &c) noexcept {
    record &r = records_[q];
    if (!r.attached || r.skip_to <= r.head) return false;
    // The others waited too long for this queue: its window jumps forward (between its
    // calls, so no chunk it is writing can leave meanwhile).
    c.queue_skips++;
    move(q, r.skip_to);
    return true;
}

bool window_policy::blocked_too_long(std::uint64_t window_head, std::int64_t now) noexcept {
    if (passed_ <= window_head) {
        blocked_since_ = 0;
        return false;
    }
    if (blocked_since_ == 0) {
        blocked_since_ = now;
        return false;
    }
    return now - blocked_since_ >= stall_ns_;
}

bool window_policy::pass_stalled(std::uint64_t window_head, std::int64_t now,
                                 counters &c) noexcept {
    // Only queues that hold the head back while another queue has moved past it.
    if (passed_ <= window_head) return false;
    bool any = false;
    for (std::size_t q = 0; q < records_.size(); q++) {
        record &r = records_[q];
        if (!r.attached || r.head > window_head) continue;
        activity &a = acts_[q];
        // Waiting for a chunk (as every queue does when the consumer is slow), or active
        // lately: not stalled.
        if (a.waiting.load(std::memory_order_relaxed) ||
            now - a.active_ns.load(std::memory_order_relaxed) < stall_ns_)
            continue;
        a.gen.fetch_add(1, std::memory_order_seq_cst);
        if (a.busy.load(std::memory_order_seq_cst)) continue;  // placing now: not stalled
        r.attached = false;
        c.queue_stalls++;
        any = true;
    }
    blocked_since_ = 0;
    return any;
}

void window_policy::skip_lagging(std::uint64_t target, std::int64_t now) noexcept {
    if (!skip_lagging_) return;
    // Only queues that are placing (active within a fifth of the stall timeout): one that
    // is not is waited for, and passed over as stalled after the timeout.
    const std::int64_t recent = now - stall_ns_ / 5;
    for (std::size_t q = 0; q < records_.size(); q++) {
        record &r = records_[q];
        if (!r.attached || r.head >= target || r.skip_to >= target) continue;
        if (acts_[q].active_ns.load(std::memory_order_relaxed) < recent) continue;
        r.skip_to = target;
        acts_[q].gen.fetch_add(1, std::memory_order_seq_cst);
    }
}

bool window_policy::try_hold_others(std::size_t except) noexcept {
    for (std::size_t q = 0; q < records_.size(); q++)
        if (q != except) acts_[q].gen.fetch_add(1, std::memory_order_seq_cst);
    for (std::size_t q = 0; q < records_.size(); q++) {
        if (q == except) continue;
        const activity &a = acts_[q];
        if (a.busy.load(std::memory_order_seq_cst) && !a.parked.load(std::memory_order_seq_cst))
            return false;
    }
    return true;
}

void window_policy::hold_others(std::size_t except) noexcept {
    for (std::size_t q = 0; q < records_.size(); q++)
        if (q != except) acts_[q].gen.fetch_add(1, std::memory_order_seq_cst);
    for (std::size_t q = 0; q < records_.size(); q++) {
        if (q == except) continue;
        const activity &a = acts_[q];
        // A queue placing finishes its batch, or parks at its next slow path: soon.
        while (a.busy.load(std::memory_order_seq_cst) && !a.parked.load(std::memory_order_seq_cst))
            std::this_thread::yield();
    }
}

}  // namespace casper400g_rx
