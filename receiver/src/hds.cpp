#include "casper400g_rx/hds.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace casper400g_rx {

namespace {

static_assert(sizeof(split_counters) % sizeof(std::uint64_t) == 0,
              "split_counters must hold only uint64 fields");

std::uint8_t *alloc_aligned(std::size_t bytes) {
    void *p = nullptr;
    if (posix_memalign(&p, 4096, std::max<std::size_t>(bytes, 1)) != 0) throw std::bad_alloc();
    return static_cast<std::uint8_t *>(p);
}

std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) noexcept {
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Presence flags are written by several lanes (the slot's own receive, a fix-up copy by
// another lane): the exchange decides which copy of a packet is placed.
bool take_present(std::uint8_t *present, std::size_t slot) noexcept {
    return __atomic_exchange_n(&present[slot], std::uint8_t{1}, __ATOMIC_ACQ_REL) == 0;
}

}  // namespace

void hds_engine::aligned_free::operator()(std::uint8_t *p) const noexcept { std::free(p); }

split_layout split_layout::for_format(const format &fmt) {
    fmt.validate();
    if (fmt.spead) return for_spead(fmt);
    split_layout l;
    std::size_t prefix = 0;
    if (fmt.source == seq_source::payload) prefix = fmt.seq.offset + fmt.seq.width;
    if (fmt.stream_id) prefix = std::max(prefix, fmt.stream_id->offset + fmt.stream_id->width);
    l.prefix = prefix;
    l.payload = fmt.payload_size;
    l.entry = (l.header_len() + 63) / 64 * 64;
    return l;
}

split_header_check::split_header_check(const format &fmt) noexcept
    : frame_len_(split_layout::headers + fmt.payload_size) {
    // Expected bytes and masks of the frame's first 42 bytes, then cut into the words.
    std::uint8_t want[split_layout::headers] = {}, mask[split_layout::headers] = {};
    auto expect = [&](std::size_t at, std::uint8_t value, std::uint8_t bits = 0xff) {
        want[at] = value;
        mask[at] = bits;
    };
    auto expect16 = [&](std::size_t at, std::size_t value) {
        expect(at, static_cast<std::uint8_t>(value >> 8));
        expect(at + 1, static_cast<std::uint8_t>(value));
    };
    const std::size_t payload = fmt.payload_size;
    expect16(12, 0x0800);  // VLAN tags and non-IPv4 shift the split point
    expect(14, 0x45);      // IPv4 without options
    expect16(14 + 2, 20 + 8 + payload);
    expect(14 + 6, 0, 0x3f);  // a fragment: more-fragments or an offset
    expect(14 + 7, 0);
    expect(14 + 9, 17);
    expect16(34 + 4, 8 + payload);
    if (fmt.udp_port != 0) expect16(34 + 2, fmt.udp_port);
    for (std::size_t i = 0; i < n_words; i++) {
        std::memcpy(&want_[i], want + at[i], 8);
        std::memcpy(&mask_[i], mask + at[i], 8);
    }
}

std::int32_t check_split_headers(const std::uint8_t *hdr, std::size_t frame_len,
                                 const format &fmt) noexcept {
    return split_header_check(fmt)(hdr, frame_len);
}

hds_engine::hds_engine(const format &fmt, const engine_config &cfg, std::size_t lanes,
                       std::size_t depth)
    : engine(fmt, cfg.sized(lanes, depth)),
      layout_(split_layout::for_format(fmt)),
      header_check_(fmt),
      ppc_(cfg_.packets_per_chunk * layout_.parts),
      depth_(depth),
      wsize_(cfg.split_window(lanes, depth)),
      span_(cfg.skip_lagging ? wsize_ : pool_.size()),
      lanes_(lanes),
      win_(pool_.size(), nullptr),
      state_stride_((ppc_ + lanes - 1) / lanes),
      slot_state_(new std::atomic<std::uint8_t>[pool_.size() * state_stride_ * lanes]),
      retired_flag_(new std::atomic<std::uint8_t>[pool_.size()]),
      pending_(pool_.size() * ppc_, -1),
      chunk_pending_(pool_.size(), 0),
      chunk_discard_(pool_.size(), 0),
      chunk_before_resync_(pool_.size(), 0),
      retired_(pool_.size(), nullptr) {
    given_up_.reset(new std::atomic<std::uint64_t>[n_given_up]);
    for (std::size_t i = 0; i < n_given_up; i++) given_up_[i].store(UINT64_MAX);
    const std::size_t ppc = ppc_;
    if (layout_.spead) {
        part_present_.reset(alloc_aligned(pool_.size() * ppc_));
        std::memset(part_present_.get(), 0, pool_.size() * ppc_);
    }
    for (std::size_t i = 0; i < pool_.size() * state_stride_ * lanes; i++)
        slot_state_[i].store(0);
    for (std::size_t i = 0; i < pool_.size(); i++) retired_flag_[i].store(0);
    head_ = cfg_.first_chunk.value_or(0);
    top_ = head_;
    window_.set_queues(lanes, now_ns());
    window_.start(head_);
    whead_.store(head_);
    for (std::size_t q = 0; q < lanes; q++) {
        lane_state &l = lanes_[q];
        l.q = q;
        l.ring.resize(depth);
        l.headers.reset(alloc_aligned(depth * layout_.entry));
        std::memset(l.headers.get(), 0, depth * layout_.entry);
        l.scratch.reset(alloc_aligned(scratch_bytes()));
        std::memset(l.scratch.get(), 0, scratch_bytes());
        l.park.reset(alloc_aligned(layout_.payload));
        if (layout_.spead) l.stage.reset(alloc_aligned(fmt.spead->max_packet));
        l.res_store.reset(alloc_aligned(pool_.size() * sizeof(std::atomic<std::uint32_t>)));
        l.res = reinterpret_cast<std::atomic<std::uint32_t> *>(l.res_store.get());
        for (std::size_t i = 0; i < pool_.size(); i++) new (&l.res[i]) std::atomic<std::uint32_t>(0);
        l.post_base = head_;
        const std::uint64_t base = head_ * ppc;
        l.next = base + (q + lanes - base % lanes) % lanes;
        l.pub.store(l.c);
    }
    // One bounce buffer per receive that can be posted: a waiting packet always sits
    // on a distinct posted slot, so the pool never runs dry. Left untouched until used.
    const std::size_t n_bounce = lanes * depth;
    bounce_.reset(alloc_aligned(n_bounce * layout_.payload));
    if (layout_.spead) bounce_items_.assign(n_bounce * fmt.spead->n_items, spead_item_absent);
    bounce_free_.reserve(n_bounce);
    for (std::size_t i = n_bounce; i-- > 0;) bounce_free_.push_back(static_cast<std::int32_t>(i));
}

hds_engine::~hds_engine() = default;

chunk *hds_engine::window_chunk(std::uint64_t id) const noexcept {
    if (id - head_ >= win_.size()) return nullptr;
    return win_[id % win_.size()];  // the ring holds ids head_ .. head_ + size - 1
}

chunk *hds_engine::open_chunk(std::uint64_t id) {
    if (id - head_ >= win_.size()) return nullptr;  // the slowest lane holds the window back
    chunk *&w = win_[id % win_.size()];
    if (w != nullptr) return w;
    if (id < no_open_below_) return nullptr;  // given up (live sources, no free chunk)
    chunk *c = try_take_locked(id);
    if (c == nullptr) return nullptr;
    c->chunk_id = id;
    c->n_present = 0;
    std::memset(c->present, 0, cfg_.packets_per_chunk);
    if (layout_.spead) {
        std::memset(present_of(c), 0, ppc_);
        pool_.reset_extras(*c);
    }
    w = c;
    return c;
}

void hds_engine::set_queues(std::size_t) {}

void hds_engine::queue_done(std::size_t) {}

void hds_engine::lock_parked(lane_state &l, std::unique_lock<std::mutex> &lock) {
    window_policy::activity &a = window_.act(l.q);
    a.parked.store(true, std::memory_order_seq_cst);
    lock.lock();
    a.parked.store(false, std::memory_order_relaxed);
}

void hds_engine::enter(lane_state &l) {
    window_policy::activity &a = window_.act(l.q);
    // Pairs with the window policy's edits: they bump `gen` and then read `busy`.
    a.busy.store(true, std::memory_order_seq_cst);
    if (a.gen.load(std::memory_order_seq_cst) != l.seen_gen) {
        // The window edited this lane's receives while it was idle: the mutex makes
        // those edits visible here.
        std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
        lock_parked(l, lock);
        l.seen_gen = a.gen.load(std::memory_order_relaxed);
        apply_skip_locked(l);
    }
}

void hds_engine::leave(lane_state &l, bool publish_counters) noexcept {
    window_policy::activity &a = window_.act(l.q);
    if (!publish_counters) {
        a.busy.store(false, std::memory_order_release);
        return;
    }
    l.pub.store(l.c);
    std::uint64_t raw[n_split];
    std::memcpy(raw, &l.s, sizeof(raw));
    for (std::size_t i = 0; i < n_split; i++) l.pub_split[i].store(raw[i], std::memory_order_relaxed);
    a.busy.store(false, std::memory_order_release);
}

// Needs no mutex from the lane's own thread (the count is atomic, the drain follows
// under the mutex); others call it for an idle lane, under the mutex.
void hds_engine::release_hold_locked(lane_state &l) {
    if (l.hold == nullptr) return;
    l.res[l.hold->index].fetch_sub(1, std::memory_order_seq_cst);
    l.hold = nullptr;
    l.drain_due = true;
}

std::size_t hds_engine::post(std::size_t lane, recv_target *out, std::size_t max) {
    if (lane >= lanes_.size()) throw std::out_of_range("lane " + std::to_string(lane));
    lane_state &l = lanes_[lane];
    enter(l);
    const std::size_t ppc = ppc_;
    const std::size_t size = layout_.payload;
    const std::uint64_t n_lanes = lanes_.size();
    const divider per_chunk(ppc), ring_index(depth_), by_lane(n_lanes);
    const bool live = cfg_.skip_lagging;
    if (live && l.posted == l.completed && l.completed > 0 &&
        wstarted_.load(std::memory_order_acquire)) {
        // Every receive completed before this call: the NIC may have dropped what arrived
        // since, and predictions made now would all be off by that gap. Only a few are
        // posted until the stream shows where it is (see complete() and resync()).
        if (!l.probing) {
            l.probing = true;
            l.probe = probe_batch;
            l.s.ran_dry++;
        } else if (l.completed != l.probe_seen) {
            // The NIC took the whole probe again: the lane is still behind the stream.
            l.probe = std::min(depth_, 2 * l.probe);
        }
        l.probe_seen = l.completed;
    } else if (l.probing && l.posted != l.completed && l.completed != l.probe_seen) {
        // The NIC has taken some of the probe's receives, not all: it dropped nothing
        // since, so predictions hold (a gap was corrected by the first packet after it):
        // the whole queue is posted again.
        l.probing = false;
    }
    std::size_t n = 0;
    std::size_t skips = 0;
    // Receives posted into the held chunk are counted in `res` once per call, not per
    // receive (a locked instruction each): the hold keeps the count above zero meanwhile.
    chunk *counted = nullptr;
    std::uint32_t uncounted = 0;
    auto count_posted = [&] {
        if (uncounted != 0) l.res[counted->index].fetch_add(uncounted, std::memory_order_relaxed);
        uncounted = 0;
    };
    auto post_scratch = [&](std::uint64_t seq, bool predicted, bool no_chunk) {
        const std::size_t idx = l.scratch_posted % scratch_slots();
        const std::size_t k = ring_index.rem(l.posted);
        l.ring[k] = desc{seq, nullptr, idx, l.shift, false, predicted, no_chunk};
        recv_target &t = out[n++];
        t.wr_id = l.posted;
        t.header = l.headers.get() + k * layout_.entry;
        t.header_len = static_cast<std::uint32_t>(layout_.header_len());
        t.payload = l.scratch.get() + idx * size + pre();
        t.payload_len = static_cast<std::uint32_t>(size - pre());
        t.scratch = true;
        if (layout_.spead) spead_target(t, l, k, part_posted(l.ring[k]));
        l.scratch_posted++;
        l.posted++;
        l.s.posted++;
    };
    while (n < max && l.posted - l.completed < depth_ &&
           !wdone_.load(std::memory_order_relaxed)) {
        if (l.probing && l.posted - l.completed >= l.probe) break;
        const bool scratch_room = l.scratch_posted - l.scratch_done < scratch_slots();
        if (l.scratch_due > 0 && scratch_room) {
            // The stream runs behind the receives already posted: this receive takes
            // the extra packet, so that the next ones land where they are predicted.
            post_scratch(UINT64_MAX, false, false);
            l.scratch_due--;
            continue;
        }
        const std::uint64_t p = l.next;
        const std::uint64_t pid = per_chunk.quot(p);
        if (live && pid < l.scratch_below) {
            // No chunk for this prediction, or the lane gave its share of the chunk up:
            // the packet is received all the same, into the scratch ring, and counted
            // late, or placed by copy where its chunk is open after all.
            if (!scratch_room) break;
            // The chunk it held is not posted into any more: it must not pin it.
            if (l.hold != nullptr && pid != l.hold_id) {
                count_posted();
                release_hold_locked(l);
            }
            post_scratch(p, true, l.scratch_no_chunk);
            l.next = add_sat(p, n_lanes);
            continue;
        }
        if (l.hold == nullptr || pid != l.hold_id || p < l.post_base * ppc ||
            pid >= l.post_base + wsize_) {
            // A new chunk (once per chunk and lane), or the window moved: under the mutex.
            count_posted();
            if (!post_slow(l, lane)) break;
            continue;
        }
        chunk *c = l.hold;
        const std::size_t slot = p - pid * ppc;
        if (!layout_.spead && l.scratch_due == 0 && pid * ppc <= UINT64_MAX - (ppc - 1)) {
            // The rest of this lane's slots in the held chunk, as one run: the checks
            // above hold for all of them, and their slot state, flag, data and ring
            // entry each move by a fixed step.
            std::size_t m = std::min<std::size_t>(max - n, depth_ - (l.posted - l.completed));
            m = std::min<std::size_t>(m, (ppc - 1 - slot) / n_lanes + 1);
            if (l.probing) m = std::min<std::size_t>(m, l.probe - (l.posted - l.completed));
            if (c != counted) {
                count_posted();
                counted = c;
            }
            std::atomic<std::uint8_t> *st = &state(c, slot, by_lane);
            const std::uint8_t *present = c->present + slot;
            std::uint8_t *payload = c->data + slot * size + pre();
            const std::size_t step = n_lanes * size;
            const auto header_len = static_cast<std::uint32_t>(layout_.header_len());
            const auto payload_len = static_cast<std::uint32_t>(size - pre());
            std::size_t k = ring_index.rem(l.posted);
            std::size_t sl = slot;
            const std::uint64_t posted_before = l.posted;
            bool too_many_skips = false;
            std::size_t j = 0;
            for (; j < m; j++, sl += n_lanes, st++, present += n_lanes, payload += step) {
                std::uint8_t expect = 0;
                bool taken;
                if (n_lanes == 1) {
                    expect = st->load(std::memory_order_relaxed);
                    taken = expect == 0;
                    if (taken) st->store(slot_posted, std::memory_order_relaxed);
                } else {
                    taken = st->compare_exchange_strong(expect, slot_posted,
                                                        std::memory_order_acq_rel);
                }
                if (!taken || __atomic_load_n(present, __ATOMIC_ACQUIRE) != 0) {
                    if (expect == 0) st->store(0, std::memory_order_release);
                    if (++skips > wsize_ * ppc) {
                        too_many_skips = true;
                        j++;
                        break;
                    }
                    continue;
                }
                uncounted++;
                l.ring[k] = desc{p + j * n_lanes, c, sl, l.shift, false, false, false};
                recv_target &t = out[n++];
                t.wr_id = l.posted;
                t.header = l.headers.get() + k * layout_.entry;
                t.header_len = header_len;
                t.payload = payload;
                t.payload_len = payload_len;
                t.scratch = false;
                l.posted++;
                k = k + 1 == depth_ ? 0 : k + 1;
            }
            l.s.posted += l.posted - posted_before;
            l.next = add_sat(p + (j - 1) * n_lanes, n_lanes);
            if (too_many_skips) break;
            continue;
        }
        l.next = add_sat(p, n_lanes);
        std::atomic<std::uint8_t> &st = state(c, slot, by_lane);
        std::uint8_t expect = 0;
        bool taken;
        if (n_lanes == 1) {
            // No other lane writes this lane's slot states, and the window edits them
            // only while the lane is outside its calls: a plain load and store, not a
            // locked instruction per packet.
            expect = st.load(std::memory_order_relaxed);
            taken = expect == 0;
            if (taken) st.store(slot_posted, std::memory_order_relaxed);
        } else {
            taken = st.compare_exchange_strong(expect, slot_posted, std::memory_order_acq_rel);
        }
        // Never post over placed data (the NIC would overwrite it), nor over a slot
        // another lane is filling by copy or whose old receive is still posted.
        if (!taken || __atomic_load_n(&present_of(c)[slot], __ATOMIC_ACQUIRE) != 0) {
            if (expect == 0) st.store(0, std::memory_order_release);
            if (++skips > wsize_ * ppc) break;
            continue;
        }
        if (c != counted) {
            count_posted();
            counted = c;
        }
        uncounted++;
        const std::size_t k = ring_index.rem(l.posted);
        l.ring[k] = desc{p, c, slot, l.shift, false, false, false};
        recv_target &t = out[n++];
        t.wr_id = l.posted;
        t.header = l.headers.get() + k * layout_.entry;
        t.header_len = static_cast<std::uint32_t>(layout_.header_len());
        t.payload = c->data + slot_offset(slot) + pre();
        t.payload_len = static_cast<std::uint32_t>(slot_len(slot) - pre());
        t.scratch = false;
        if (layout_.spead) spead_target(t, l, k, slot % layout_.parts);
        l.posted++;
        l.s.posted++;
    }
    count_posted();
    if (l.drain_due) {
        std::lock_guard<std::mutex> lock(mutex_);
        l.drain_due = false;
        drain_retired();
        publish();
    }
    // A busy-polling queue with nothing to post has no counters to publish.
    leave(l, n > 0);
    return n;
}

bool hds_engine::post_slow(lane_state &l, std::size_t lane) {
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    lock_parked(l, lock);
    const std::size_t ppc = ppc_;
    const std::uint64_t n_lanes = lanes_.size();
    const bool live = cfg_.skip_lagging;
    check_lagging_locked();
    std::uint64_t p = l.next;
    // A lane passed over posts from the window's head; it rejoins with its next packet.
    const std::uint64_t base = attached(l) ? head_of(l) : std::max(head_of(l), head_);
    l.post_base = base;
    const std::uint64_t floor = base * ppc;
    if (live && p < floor && floor - p <= wsize_ * ppc) {
        // Behind the lane's window (it was moved forward): those packets will come and
        // count late; scratch receives take them so that the next chunk starts in step.
        l.scratch_below = std::max(l.scratch_below, base);
        l.scratch_no_chunk = false;
        return true;
    }
    if (p < floor || p / ppc >= base + wsize_) {
        if (p >= floor && l.posted != l.completed) return false;  // wait for the window to move
        // Predictions behind the window, or far ahead with nothing posted: start
        // again at the window's head (the lane's next slot of its own residue).
        p = floor + (lane + n_lanes - floor % n_lanes) % n_lanes;
        l.next = p;
        if (p / ppc >= base + wsize_) return false;
    }
    const std::uint64_t id = p / ppc;
    if (l.hold != nullptr && l.hold_id == id && l.hold->chunk_id == id) return true;
    release_hold_locked(l);
    chunk *c = open_chunk(id);
    if (c == nullptr) {
        drain_retired();  // chunks held back by stalled lanes may be passed on now
        c = open_chunk(id);
    }
    const bool span = c == nullptr && id - head_ >= span_;
    if (span) {
        // The slowest lane holds the window back: this lane cannot post, and its queue
        // runs dry (a NIC drops what then arrives). A lane that lags while it keeps
        // completing is moved forward after a fifth of the stall timeout.
        const std::int64_t now = now_ns();
        if (!l.stalled || l.span_wait_ns == 0) l.span_wait_ns = now;
        if (now - l.span_wait_ns >= window_.stall_ns() / 5)
            window_.skip_lagging(id - span_ + 1, now);
    } else {
        l.span_wait_ns = 0;
    }
    if (c == nullptr) {
        if (!l.stalled) c_.waits++;
        l.stalled = true;
        l.drain_due = false;
        publish();
        if (live && !span) {
            // No free chunk (the consumer holds them): this chunk's share of the stream
            // goes to scratch receives, and the lane tries again at the next chunk. The
            // chunk is given up for every lane now: opened later by another lane, it
            // would take this lane's packets by fix-up copies (8 KiB each, longer than a
            // packet's arrival interval at line rate), and a lane making them falls
            // behind its queue, whose drops then land in every chunk -- under an
            // overload that the GPU copy limits, chunks half empty, the copy's bandwidth
            // spent on holes.
            l.scratch_below = std::max(l.scratch_below, id + 1);
            l.scratch_no_chunk = true;
            note_given_up(id);
            no_open_below_ = std::max(no_open_below_, id + 1);
            return true;
        }
        return false;
    }
    l.stalled = false;
    l.hold = c;
    l.hold_id = id;
    l.res[c->index].fetch_add(1, std::memory_order_seq_cst);
    if (l.drain_due) {
        l.drain_due = false;
        drain_retired();
    }
    publish();
    return true;
}

void hds_engine::complete(std::size_t lane, const recv_completion *comps, std::size_t n) {
    if (lane >= lanes_.size()) throw std::out_of_range("lane " + std::to_string(lane));
    lane_state &l = lanes_[lane];
    enter(l);
    if (n > 0) window_.act(l.q).active_ns.store(now_ns(), std::memory_order_relaxed);
    const std::size_t ppc = ppc_;
    const std::size_t pre = layout_.prefix;
    const divider per_chunk(ppc), ring_index(depth_), by_lane(lanes_.size());
    const bool one_lane = lanes_.size() == 1;
    constexpr std::size_t prefix_ahead = 8;  // completions whose slot line is fetched early
    // Taken for a packet that needs it and released before the next one: fix-up copies
    // are made outside it, so that one lane's mispredicted packets never hold the others.
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    // Receives of in-order packets leave `res` once per run of one chunk, not each with
    // a locked instruction; before anything that takes the mutex, and at the end.
    chunk *counted = nullptr;
    std::uint32_t uncounted = 0;
    auto release_counted = [&] {
        if (uncounted == 0) return;
        if (l.res[counted->index].fetch_sub(uncounted, std::memory_order_seq_cst) == uncounted &&
            retired_flag_[counted->index].load(std::memory_order_seq_cst) != 0)
            l.drain_due = true;
        uncounted = 0;
    };
    // retire_desc(l, d, lock, &uncounted) inline (per packet).
    auto retire_fast = [&](const desc &d) {
        if (d.c == nullptr) {
            l.scratch_done++;
            return;
        }
        if (d.c != counted) {
            release_counted();
            counted = d.c;
        }
        std::atomic<std::uint8_t> &st = state(d.c, d.slot, by_lane);
        std::uint8_t old;
        if (one_lane) {
            old = st.load(std::memory_order_relaxed);
            st.store(0, std::memory_order_relaxed);
        } else {
            old = st.exchange(0, std::memory_order_acq_rel);
        }
        if (old & slot_pending) {
            if (!lock.owns_lock()) lock_parked(l, lock);
            fill_pending_locked(l, d.c, d.slot);
        }
        if (!d.orphan) uncounted++;
    };
    for (std::size_t i = 0; i < n; i++) {
        if (!layout_.spead && attached(l) && wstarted_.load(std::memory_order_acquire)) {
            // A run of packets each in its predicted slot inside the window, in line with
            // its prediction (the usual case): what the in-place case below does, with
            // the lane's counters kept in registers (a store into a chunk may alias
            // them) and the window's head read once. The first packet that is not goes
            // the general way below.
            const std::uint64_t h = head_of(l);
            const std::size_t payload = layout_.payload;
            std::uint64_t completed = l.completed, top = l.top, own = l.own;
            const std::uint64_t posted = l.posted;
            const std::size_t i0 = i;
            for (; i < n && !wdone_.load(std::memory_order_relaxed); i++) {
                const recv_completion &rc = comps[i];
                if (rc.wr_id != completed || completed == posted || !rc.ok) break;
                const std::size_t k = ring_index.rem(completed);
                const desc &d = l.ring[k];
                if (d.c == nullptr || d.orphan) break;
                const std::uint8_t *hdr = l.headers.get() + k * layout_.entry;
                const std::int32_t ip_id = header_check_(hdr, rc.byte_len);
                if (ip_id < 0) break;
                std::uint64_t seq;
                if (!decoder_.decode(packet_ref{hdr + split_layout::headers, payload, ip_id}, seq))
                    break;
                const std::uint64_t id = per_chunk.quot(seq);
                const std::size_t slot = seq - id * ppc;
                if (id < h || id - h >= cfg_.max_chunks || d.c->chunk_id != id ||
                    d.slot != slot || seq - d.seq != l.shift - d.shift ||
                    retired_flag_[d.c->index].load(std::memory_order_relaxed) != 0)
                    break;
                completed++;
                // One lane makes no locked instruction here, and the store buffer takes
                // the prefix's miss (the fetch ahead cost more than it saved); several
                // lanes' exchange of the slot state waits for it to drain.
                if (!one_lane && completed + prefix_ahead <= posted) {
                    const std::size_t ka = k + prefix_ahead;
                    const desc &a = l.ring[ka >= depth_ ? ka - depth_ : ka];
                    if (a.c != nullptr) __builtin_prefetch(a.c->data + a.slot * payload, 1);
                }
                if (own == window_policy::none || id > own) own = id;
                if (i == i0 || id > top) top = id;
                std::uint8_t *dst = d.c->data + slot * payload;
                const std::uint8_t *src = hdr + split_layout::headers;
                if (pre == 8) {
                    std::uint64_t w;
                    std::memcpy(&w, src, 8);
                    std::memcpy(dst, &w, 8);
                } else {
                    std::memcpy(dst, src, pre);
                }
                __atomic_store_n(&d.c->present[slot], std::uint8_t{1}, __ATOMIC_RELEASE);
                if (d.c != counted) {
                    release_counted();
                    counted = d.c;
                }
                std::atomic<std::uint8_t> &st = state(d.c, d.slot, by_lane);
                std::uint8_t old;
                if (one_lane) {
                    old = st.load(std::memory_order_relaxed);
                    st.store(0, std::memory_order_relaxed);
                } else {
                    old = st.exchange(0, std::memory_order_acq_rel);
                }
                uncounted++;
                if (old & slot_pending) {
                    // A copy of a packet waits for this slot (rare): the lane's state
                    // brought up to date first, as the general way has it.
                    const std::uint64_t done = completed - l.completed;
                    l.completed = completed;
                    l.own = own;
                    if (!l.placed_any || top > l.top) l.top = top;
                    l.placed_any = true;
                    l.run.n = 0;
                    l.candidate = 0;
                    l.s.in_place += done;
                    l.c.packets += done;
                    l.c.bytes += done * payload;
                    l.c.received += done;
                    if (!lock.owns_lock()) lock_parked(l, lock);
                    fill_pending_locked(l, d.c, d.slot);
                    i++;
                    break;
                }
            }
            if (const std::uint64_t done = completed - l.completed; done != 0) {
                l.completed = completed;
                l.own = own;
                if (!l.placed_any || top > l.top) l.top = top;
                l.placed_any = true;
                l.run.n = 0;
                l.candidate = 0;
                l.s.in_place += done;
                l.c.packets += done;
                l.c.bytes += done * payload;
                l.c.received += done;
            }
            if (i == n) break;
        }
        const recv_completion &rc = comps[i];
        if (rc.wr_id != l.completed || l.completed == l.posted) {
            release_counted();
            if (lock.owns_lock()) lock.unlock();
            leave(l);
            throw std::logic_error("receive completion " + std::to_string(rc.wr_id) +
                                   " out of order on queue " + std::to_string(lane) +
                                   " (expected " + std::to_string(l.completed) + ")");
        }
        const std::size_t k = ring_index.rem(l.completed);
        const desc d = l.ring[k];
        const std::uint8_t *hdr = l.headers.get() + k * layout_.entry;
        l.completed++;
        if (layout_.spead) {
            // Its fix-ups may wait for a chunk: no receive of this lane left counted.
            release_counted();
            complete_spead(l, d, hdr, rc, lock);
            continue;
        }
        // The prefix goes into the first line of a slot that the CPU has not touched
        // since the chunk was handed out: that line is asked for a few packets ahead, so
        // that the misses overlap instead of holding up each packet's stores in turn.
        // (Past the end of this batch too: the next batch's first packets are then
        // fetched as early as the others.)
        if (l.completed + prefix_ahead <= l.posted) {
            const std::size_t ka = k + prefix_ahead;
            const desc &a = l.ring[ka >= depth_ ? ka - depth_ : ka];
            if (a.c != nullptr) __builtin_prefetch(a.c->data + a.slot * layout_.payload, 1);
        }
        // The common cases without the mutex: a packet in its predicted slot inside the
        // window, or one older than the window (also from a scratch receive).
        if (rc.ok && (d.c != nullptr || d.predicted) && !d.orphan && attached(l) &&
            wstarted_.load(std::memory_order_acquire) && !wdone_.load(std::memory_order_relaxed)) {
            const std::int32_t ip_id = header_check_(hdr, rc.byte_len);
            std::uint64_t seq = 0;
            if (ip_id >= 0 &&
                decoder_.decode(packet_ref{hdr + split_layout::headers, layout_.payload, ip_id},
                                seq)) {
                const std::uint64_t h = head_of(l);
                const std::uint64_t id = per_chunk.quot(seq);
                const std::size_t slot = seq - id * ppc;
                // (A chunk a window resync retired may carry the id again: not in place.)
                if (d.c != nullptr && id >= h && id - h < cfg_.max_chunks &&
                    d.c->chunk_id == id && d.slot == slot &&
                    retired_flag_[d.c->index].load(std::memory_order_relaxed) == 0) {
                    l.run.n = 0;
                    if (l.own == window_policy::none || id > l.own) l.own = id;
                    // In line with its prediction (the usual case) resync() moves nothing.
                    if (seq - d.seq == l.shift - d.shift)
                        l.candidate = 0;
                    else
                        resync(l, d, seq);
                    std::uint8_t *dst = d.c->data + slot * layout_.payload;
                    const std::uint8_t *src = hdr + split_layout::headers;
                    if (pre == 8) {
                        // The usual prefix, the sequence word: one load and store, not
                        // a call of memcpy.
                        std::uint64_t w;
                        std::memcpy(&w, src, 8);
                        std::memcpy(dst, &w, 8);
                    } else {
                        std::memcpy(dst, src, pre);
                    }
                    // The slot is posted (ours): no other copy of this packet can have
                    // gone in (it would wait in a bounce buffer), so a plain store.
                    __atomic_store_n(&d.c->present[slot], std::uint8_t{1}, __ATOMIC_RELEASE);
                    l.s.in_place++;
                    placed(l, id, layout_.payload);
                    l.c.received++;
                    retire_fast(d);
                    continue;
                }
                if (id < h && window_.classify(h, own_of(l), id) == window_policy::place::late) {
                    l.run.n = 0;
                    resync(l, d, seq);
                    count_behind(l, id);
                    retire_fast(d);
                    continue;
                }
                if (l.completed <= l.gap_posted) {
                    // Posted before the lane saw its queue had run dry (live sources):
                    // off by the gap, so its packet would take a fix-up copy while the
                    // lane catches up -- which at line rate makes it fall further behind.
                    // Not placed, counted.
                    resync(l, d, seq);
                    l.c.discarded++;
                    l.c.received++;
                    retire_fast(d);
                    continue;
                }
            }
        }
        release_counted();
        if (!lock.owns_lock()) lock_parked(l, lock);
        slow_packet sp;
        complete_locked(l, d, hdr, rc.byte_len, rc.ok, sp, lock);
        if (l.drain_due) {
            l.drain_due = false;
            drain_retired();
            publish();
        }
        lock.unlock();
        if (sp.dst != nullptr) finish_copy(l, sp);
        if (!sp.retired) retire_desc(l, d, lock);
        if (lock.owns_lock()) lock.unlock();
    }
    release_counted();
    if (l.drain_due) {
        if (!lock.owns_lock()) lock_parked(l, lock);
        l.drain_due = false;
        drain_retired();
        publish();
    }
    if (lock.owns_lock()) lock.unlock();
    leave(l);
}

void hds_engine::finish_copy(lane_state &l, const slow_packet &sp) noexcept {
    // The slot is claimed (no receive can be posted there, no other copy goes in) and
    // its presence taken; the chunk cannot leave while this lane, attached and inside
    // its call, has it in its window.
    const std::size_t pre = this->pre();
    const std::size_t len = slot_len(sp.g % ppc_);
    if (pre != 0) std::memcpy(sp.dst, sp.prefix, pre);
    std::memcpy(sp.dst + pre, sp.landed + pre, len - pre);
    if (sp.items != nullptr) put_items(pool_.get(sp.g / ppc_), sp.g % ppc_, sp.items);
    l.s.fixup++;
    placed(l, sp.id, len);
    l.c.received++;
    state(sp.g).store(0, std::memory_order_release);
}

void hds_engine::complete_locked(lane_state &l, const desc &d, const std::uint8_t *hdr,
                                 std::uint32_t byte_len, bool ok, slow_packet &sp,
                                 std::unique_lock<std::mutex> &lock) {
    if (wdone_.load(std::memory_order_relaxed)) {
        l.c.received++;
        l.c.discarded++;
        return;
    }
    const std::int32_t ip_id = ok ? header_check_(hdr, byte_len) : -1;
    std::optional<std::uint64_t> seq;
    if (ip_id >= 0)
        seq = decoder_.decode(packet_ref{hdr + split_layout::headers, layout_.payload, ip_id});
    if (!seq) {
        l.c.rejected++;
        l.c.received++;
        return;
    }
    if ((d.c != nullptr || d.predicted) && !d.orphan) resync(l, d, *seq);
    sp.prefix = hdr + split_layout::headers;
    sp.landed = landing(l, d);
    place_locked(l, *seq, d, sp, lock);
}

void hds_engine::resync(lane_state &l, const desc &d, std::uint64_t seq) {
    // A packet later than its prediction means either that packets before it were lost
    // (the lane's later receives will carry later packets too) or that it overtook one
    // (the next packet is the one it overtook); earlier than predicted, either a
    // straggler or a packet delayed into the stream, which puts everything after it one
    // place behind. Predictions move only when two packets in a row show the same
    // offset, so a swapped pair or one straggler costs a copy or two, not a shifted
    // stream. Offsets are relative to the correction already applied since `d` was posted.
    const auto seen = static_cast<std::int64_t>(seq - d.seq);
    const auto done = static_cast<std::int64_t>(l.shift - d.shift);
    const std::int64_t off = seen - done;
    const auto n_lanes = static_cast<std::int64_t>(lanes_.size());
    if (l.probing && off > 0 && off % n_lanes == 0) {
        // The queue ran dry and the NIC dropped packets: whatever came after the gap is
        // the stream now, so one packet moves the predictions at once; the packets that
        // land in the (few) receives posted before are not copied (complete()).
        l.candidate = 0;
        l.next = add_sat(l.next, static_cast<std::uint64_t>(off));
        l.shift += static_cast<std::uint64_t>(off);
        l.s.resyncs++;
        l.gap_posted = l.posted;
        return;
    }
    if (off == 0 || off % n_lanes != 0) {
        l.candidate = 0;  // in line, or not a packet of this lane's share of the stream
        return;
    }
    if (off != l.candidate) {
        l.candidate = off;
        return;
    }
    l.candidate = 0;
    if (off > 0) {
        l.next = add_sat(l.next, static_cast<std::uint64_t>(off));
    } else {
        // Behind: receives cannot be posted twice to a slot, so scratch receives take
        // the extra packets (placed from there by copy). A larger step back is a
        // restarted sender, not a delay, and is left alone.
        const auto back = static_cast<std::uint64_t>(-off / n_lanes);
        if (back > max_absorb) return;
        l.scratch_due += back;
    }
    l.shift += static_cast<std::uint64_t>(off);
    l.s.resyncs++;
}

void hds_engine::start(std::uint64_t seq) {
    const std::uint64_t new_head =
        cfg_.first_chunk ? *cfg_.first_chunk : seq / ppc_;
    // Chunks opened by posts before the stream's position was known hold no packets:
    // those outside the real window are dropped without counting anything.
    for (auto &w : win_) {
        if (w != nullptr && (w->chunk_id < new_head || w->chunk_id - new_head >= win_.size())) {
            retire(w, true);
            w = nullptr;
        }
    }
    // Re-index the rest by their ids relative to the new head.
    std::vector<chunk *> open;
    for (auto &w : win_)
        if (w != nullptr) open.push_back(std::exchange(w, nullptr));
    for (chunk *c : open) win_[c->chunk_id % win_.size()] = c;
    head_ = new_head;
    top_ = head_;
    // Lanes' post_base is theirs (read without the mutex): each sets it again at its next
    // chunk; until then it may post into chunks this start retired (placed by copy).
    window_.start(head_);
    whead_.store(head_, std::memory_order_release);
    started_ = true;
    wstarted_.store(true, std::memory_order_release);
}

const std::uint8_t *hds_engine::landing(const lane_state &l, const desc &d) const noexcept {
    return d.c != nullptr ? d.c->data + slot_offset(d.slot)
                          : l.scratch.get() + d.slot * layout_.payload;
}

void hds_engine::retire_desc(lane_state &l, const desc &d, std::unique_lock<std::mutex> &lock,
                             std::uint32_t *uncounted) {
    if (d.c == nullptr) {
        l.scratch_done++;
        return;
    }
    std::atomic<std::uint8_t> &st = state(d.c, d.slot, divider(lanes_.size()));
    std::uint8_t old;
    if (lanes_.size() == 1) {
        // One lane: no other thread writes the state meanwhile (as in post()).
        old = st.load(std::memory_order_relaxed);
        st.store(0, std::memory_order_relaxed);
    } else {
        old = st.exchange(0, std::memory_order_acq_rel);
    }
    if (old & slot_pending) {
        // A copy of a packet waits for this slot: it goes in now (the chunk is still
        // held back by this receive's count below).
        if (!lock.owns_lock()) lock_parked(l, lock);
        fill_pending_locked(l, d.c, d.slot);
    }
    if (d.orphan) return;  // no longer counted in `res`
    if (uncounted != nullptr) {
        ++*uncounted;  // the caller releases it from `res` with others of its chunk
        return;
    }
    if (l.res[d.c->index].fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        retired_flag_[d.c->index].load(std::memory_order_seq_cst) != 0)
        l.drain_due = true;
}

void hds_engine::placed(lane_state &l, std::uint64_t id, std::size_t bytes) noexcept {
    l.c.packets++;
    l.c.bytes += bytes;
    if (!l.placed_any || id > l.top) l.top = id;
    l.placed_any = true;
}

void hds_engine::park(lane_state &l, const desc &d, slow_packet &sp,
                      std::unique_lock<std::mutex> &lock) {
    if (sp.retired) return;
    // Before the lane waits, its receive lets go of its slot and chunk: a lane waiting
    // with a receive counted would pin that chunk (and every newer one) meanwhile.
    const std::size_t pre = this->pre();
    std::uint8_t *buf = l.park.get();
    if (pre != 0) std::memcpy(buf, sp.prefix, pre);
    std::memcpy(buf + pre, sp.landed + pre, (layout_.spead ? sp.len : layout_.payload) - pre);
    sp.prefix = buf;
    sp.landed = buf;
    retire_desc(l, d, lock);
    sp.retired = true;
}

void hds_engine::give_up_chunk(lane_state &l, std::uint64_t id) {
    // Live sources: no free chunk when the chunk's packets arrive. Waiting would only
    // move the loss to the NIC and leave every queue's predictions behind the stream;
    // the chunk is given up whole instead (its slots count lost, its packets
    // no_free_chunk) and no lane opens it any more.
    note_given_up(id);
    no_open_below_ = std::max(no_open_below_, id + 1);
    move_lane_head(l, id + 1);
    l.c.no_free_chunk++;
    l.c.received++;
}

void hds_engine::note_given_up(std::uint64_t id) {
    std::atomic<std::uint64_t> &e = given_up_[id % n_given_up];
    if (e.load(std::memory_order_relaxed) == id) return;
    e.store(id, std::memory_order_relaxed);
    c_.chunks_given_up++;
}

void hds_engine::count_behind(lane_state &l, std::uint64_t id) noexcept {
    // After its chunk left: a chunk given up for want of a free one (the consumer is too
    // slow), or one handed on (the network reordered, or the lane lagged).
    if (given_up_[id % n_given_up].load(std::memory_order_relaxed) == id)
        l.c.no_free_chunk++;
    else
        l.c.late++;
    l.c.received++;
}

std::size_t hds_engine::held_of_part(std::size_t part) const noexcept {
    // Split per device (staging.h), only a chunk of the part a number routes to serves it.
    std::size_t held = 0;
    for (std::size_t i = 0; i < retired_count_; i++)
        held += pool_.part_of(retired_[(retired_head_ + i) % retired_.size()]->index) == part;
    for (const chunk *w : win_) held += w != nullptr && pool_.part_of(w->index) == part;
    return held;
}

chunk *hds_engine::wait_for_chunk(lane_state &l, std::uint64_t id,
                                  std::unique_lock<std::mutex> &lock) {
    // A replay waits for the consumer to give a chunk back, without the mutex, so the
    // other lanes go on (and may open this chunk meanwhile).
    if (!l.stalled) {
        c_.waits++;
        publish();
    }
    for (;;) {
        if (wdone_.load(std::memory_order_relaxed)) return nullptr;
        if (chunk *w = window_chunk(id)) return w;
        if (id - head_ >= win_.size() || id < head_of(l)) return nullptr;
        if (chunk *c = open_chunk(id)) return c;
        // Waiting helps only if the consumer holds chunks it will release. When the
        // engine itself holds them all (open, or pinned by receives posted on old
        // predictions), the receives that would free them come after this packet.
        if (held_of_part(pool_.part_of(id)) >= pool_.part_size(pool_.part_of(id))) return nullptr;
        drain_retired();
        window_policy::activity &a = window_.act(l.q);
        a.busy.store(false, std::memory_order_seq_cst);
        lock.unlock();
        chunk_queue::status why = chunk_queue::status::ok;
        chunk *got = free_.pop_for(id, std::chrono::milliseconds(5), why);
        a.busy.store(true, std::memory_order_seq_cst);
        lock_parked(l, lock);
        rejoin_locked(l);
        if (got != nullptr) free_.push(got);  // taken again by open_chunk, in order
        if (why == chunk_queue::status::interrupted) return nullptr;
    }
}

void hds_engine::place_locked(lane_state &l, std::uint64_t seq, const desc &d, slow_packet &sp,
                              std::unique_lock<std::mutex> &lock) {
    const std::size_t ppc = ppc_;
    const std::size_t pre = this->pre();
    if (!started_) start(seq);
    // Passed over as stalled, or cancelled: it rejoins at the window's head.
    window_.attach(l.q, head_);
    const std::uint64_t id = seq / ppc;
    const std::size_t slot = seq % ppc;
    switch (window_.classify(head_of(l), own_of(l), id)) {
        case window_policy::place::late:
            l.run.n = 0;
            count_behind(l, id);
            return;
        case window_policy::place::out_of_window:
            if (!out_of_window_locked(l, seq)) return;
            break;  // the window moved to it
        case window_policy::place::ahead:
            move_lane_head(l, id - cfg_.max_chunks + 1);
            break;
        case window_policy::place::in_window:
            break;
    }
    l.run.n = 0;
    if (l.own == window_policy::none || id > l.own) l.own = id;
    check_lagging_locked();
    // Far ahead of the slowest lane: wait for it (or for it to be passed over, or moved
    // forward when it keeps placing but lags).
    const std::int64_t wait_start = now_ns();
    while (id - head_ >= win_.size() && id >= head_of(l)) {
        park(l, d, sp, lock);
        if (now_ns() - wait_start >= window_.stall_ns() / 5)
            window_.skip_lagging(id - win_.size() + 1, now_ns());
        if (!wait_for_window(l, lock)) {
            l.c.discarded++;
            l.c.received++;
            return;
        }
    }
    if (id < head_of(l)) {  // passed over while waiting, and the window moved on
        count_behind(l, id);
        return;
    }
    const bool live = cfg_.skip_lagging;
    chunk *c = window_chunk(id);
    if (c == nullptr && !(live && d.no_chunk)) {
        c = open_chunk(id);
        if (c == nullptr) {
            drain_retired();
            c = open_chunk(id);
        }
    }
    if (c == nullptr && live && !d.no_chunk && id - head_ >= span_) {
        // More than a window ahead of the slowest lane, and out of chunks: that lane
        // holds them. Wait for it (it is moved forward after a fifth of the stall
        // timeout if it keeps completing, passed over if it stalled).
        const std::int64_t t0 = now_ns();
        park(l, d, sp, lock);
        while (c == nullptr && id >= head_of(l) && id - head_ >= span_) {
            if (now_ns() - t0 >= window_.stall_ns() / 5)
                window_.skip_lagging(id - span_ + 1, now_ns());
            if (!wait_for_window(l, lock)) {
                l.c.discarded++;
                l.c.received++;
                return;
            }
            if (id < head_of(l)) break;
            c = window_chunk(id);
            if (c == nullptr) {
                drain_retired();
                c = open_chunk(id);
            }
        }
        if (id < head_of(l)) {
            count_behind(l, id);
            return;
        }
    }
    if (c == nullptr && live) {
        // No chunk could be had for it when it was posted (it came into a scratch
        // receive), or none is free now.
        give_up_chunk(l, id);
        return;
    }
    if (c == nullptr) {
        park(l, d, sp, lock);
        c = wait_for_chunk(l, id, lock);
        if (c == nullptr && id < head_of(l)) {  // passed over while waiting
            count_behind(l, id);
            return;
        }
    }
    if (c == nullptr) {  // stopping, or no chunk to be had: counted, not placed
        l.c.discarded++;
        l.c.received++;
        return;
    }
    if (id > top_) top_ = id;
    const std::size_t g = gslot(c, slot);
    const std::size_t size = slot_len(slot);
    std::uint8_t *dst = c->data + slot_offset(slot);
    for (;;) {
        std::uint8_t st = state(g).load(std::memory_order_acquire);
        if (st == 0) {
            // Nobody's receive points here: copy it in (after the mutex), holding the
            // slot against a post.
            if (!state(g).compare_exchange_strong(st, slot_claimed,
                                                        std::memory_order_acq_rel))
                continue;
            if (take_present(present_of(c), slot)) {
                sp.dst = dst;
                sp.g = g;
                sp.id = id;
                return;
            }
            l.c.duplicate++;
            l.c.received++;
            state(g).store(0, std::memory_order_release);
            return;
        }
        if (st & slot_pending) {  // the same packet already waits for this slot
            l.c.duplicate++;
            l.c.received++;
            return;
        }
        // A receive is posted here.
        if (!sp.retired && c == d.c && slot == d.slot && !d.orphan) {  // this one: in place
            // (A SPEAD packet whose header length differed was put together elsewhere.)
            const bool moved = sp.landed != dst;
            if (pre != 0) std::memcpy(dst, sp.prefix, pre);
            if (moved) std::memcpy(dst + pre, sp.landed + pre, size - pre);
            if (take_present(present_of(c), slot)) {
                if (moved)
                    l.s.fixup++;
                else
                    l.s.in_place++;
                if (sp.items != nullptr) put_items(c, slot, sp.items);
                placed(l, id, size);
            } else {
                l.c.duplicate++;
            }
            l.c.received++;
            return;
        }
        if (__atomic_load_n(&present_of(c)[slot], __ATOMIC_ACQUIRE) != 0) {
            l.c.duplicate++;
            l.c.received++;
            return;
        }
        // Another receive still points at the slot (it may be writing there now): the
        // packet waits in a bounce buffer until that receive completes.
        if (bounce_free_.empty()) throw std::logic_error("header-split bounce pool exhausted");
        const std::int32_t b = bounce_free_.back();
        std::uint8_t *buf = bounce_.get() + static_cast<std::size_t>(b) * layout_.payload;
        if (pre != 0) std::memcpy(buf, sp.prefix, pre);
        std::memcpy(buf + pre, sp.landed + pre, size - pre);
        if (sp.items != nullptr)
            std::copy(sp.items, sp.items + fmt().spead->n_items,
                      bounce_items_.begin() + static_cast<std::ptrdiff_t>(b * fmt().spead->n_items));
        pending_[g] = b;
        if (!state(g).compare_exchange_strong(st, st | slot_pending,
                                                    std::memory_order_acq_rel)) {
            pending_[g] = -1;
            continue;  // the receive completed meanwhile
        }
        bounce_free_.pop_back();
        chunk_pending_[c->index]++;
        l.s.bounced++;  // `received` is counted once its fate is known
        return;
    }
}

void hds_engine::fill_pending_locked(lane_state &l, chunk *c, std::size_t slot) {
    const std::size_t g = gslot(c, slot);
    const std::int32_t b = pending_[g];
    if (b < 0) return;
    // The chunk may have left the window since the packet arrived; it is still held
    // back from the consumer (its count of waiting packets), so the packet goes in as
    // it would have on arrival.
    const std::size_t size = slot_len(slot);
    pending_[g] = -1;
    chunk_pending_[c->index]--;
    if (take_present(present_of(c), slot)) {
        std::memcpy(c->data + slot_offset(slot),
                    bounce_.get() + static_cast<std::size_t>(b) * layout_.payload, size);
        if (layout_.spead && fmt().spead->n_items != 0)
            put_items(c, slot, bounce_items_.data() + static_cast<std::size_t>(b) * fmt().spead->n_items);
        l.s.fixup++;
        if (chunk_before_resync_[c->index] == 0) {
            placed(l, c->chunk_id, size);
        } else {
            // Into a chunk of the stream before a resync: never the lane's newest (the
            // window may have moved back to lower ids).
            l.c.packets++;
            l.c.bytes += size;
        }
    } else {
        l.c.duplicate++;
    }
    l.c.received++;
    bounce_free_.push_back(b);
}

void hds_engine::move_lane_head(lane_state &l, std::uint64_t new_head) {
    if (window_.move(l.q, new_head)) follow_window();
}

void hds_engine::follow_window() {
    const std::uint64_t m = window_.limit();
    if (m > head_) advance(m);
}

void hds_engine::advance(std::uint64_t new_head) {
    // Every lane has moved past these chunks: they leave the window (and go to the
    // consumer once no posted receive points into them).
    const std::uint64_t end = std::min<std::uint64_t>(new_head, head_ + win_.size());
    for (std::uint64_t id = head_; id < end; id++) flush(id);
    if (new_head > end) {
        const std::uint64_t chunks = new_head - end;
        const std::uint64_t ppc = cfg_.packets_per_chunk;
        const std::uint64_t missing = chunks > UINT64_MAX / ppc ? UINT64_MAX : chunks * ppc;
        c_.lost = add_sat(c_.lost, missing);
    }
    head_ = new_head;
    window_.unblocked();
    whead_.store(head_, std::memory_order_release);
}

void hds_engine::check_lagging_locked() {
    // Lanes have moved past the window's head and another has not: past the stall
    // timeout, lanes that completed nothing in that time are passed over.
    if (!window_.blocked_too_long(head_, now_ns())) return;
    if (window_.pass_stalled(head_, now_ns(), c_)) {
        follow_window();
        publish();
    }
}

void hds_engine::apply_skip_locked(lane_state &l) {
    // Between the lane's calls: nothing it places in is in flight. Its receives into
    // the chunks it skips complete as late packets.
    if (!window_.apply_skip(l.q, c_)) return;
    follow_window();
    publish();
}

bool hds_engine::wait_for_window(lane_state &l, std::unique_lock<std::mutex> &lock) {
    if (wdone_.load(std::memory_order_relaxed)) return false;
    check_lagging_locked();
    if (window_.blocked() && !l.stalled) {
        c_.waits++;
        publish();
    }
    // Not placing while it waits: the others may pass it over, or edit its receives.
    window_policy::activity &a = window_.act(l.q);
    a.busy.store(false, std::memory_order_seq_cst);
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    a.busy.store(true, std::memory_order_seq_cst);
    lock_parked(l, lock);
    rejoin_locked(l);
    return !wdone_.load(std::memory_order_relaxed);
}

void hds_engine::rejoin_locked(lane_state &l) {
    // Back from a wait (not placing meanwhile): it may have been passed over, or asked
    // to move forward. Nothing of it is in flight, so both apply now.
    l.seen_gen = window_.act(l.q).gen.load(std::memory_order_relaxed);
    window_.attach(l.q, head_);
    apply_skip_locked(l);
}

bool hds_engine::out_of_window_locked(lane_state &l, std::uint64_t seq) {
    // Only when no other lane is inside a call (their completions may be placing into
    // the window's chunks); otherwise the run's next packet tries again.
    if (!window_.note_out_of_window(l.run, seq, ppc_, l.own, now_ns()) ||
        !window_.try_hold_others(l.q)) {
        l.c.out_of_window++;
        l.c.received++;
        return false;
    }
    // The stream is there now. The window's chunks go on as at the end of a stream (the
    // slots up to the newest placed count lost), each once the receives into it have
    // completed; chunks opened ahead by posts go back. The lanes let go of the chunks
    // they post into and start again from the new window; the chunks between are not
    // counted: they were never the stream.
    const std::uint64_t to = window_.resync_head(l.run, ppc_);
    const std::int64_t now = now_ns();
    window_.begin_resync(to);
    for (auto &o : lanes_) {
        if (o.placed_any && o.top > top_) top_ = o.top;
        window_.after_resync(o.run, o.own, now);
        o.own = window_policy::none;
        o.placed_any = false;
        o.top = 0;
        release_hold_locked(o);
        o.scratch_below = std::min(o.scratch_below, to);
    }
    if (head_ <= top_ && top_ - head_ >= win_.size()) advance(top_ - win_.size() + 1);
    if (head_ <= top_) {
        for (std::uint64_t k = head_;; k++) {
            flush(k);
            if (k == top_) break;
        }
    }
    for (auto &w : win_) {
        if (w != nullptr) {
            retire(w, true);
            w = nullptr;
        }
    }
    for (std::size_t i = 0; i < retired_count_; i++)
        chunk_before_resync_[retired_[(retired_head_ + i) % retired_.size()]->index] = 1;
    drain_retired();
    for (std::size_t i = 0; i < n_given_up; i++) given_up_[i].store(UINT64_MAX);
    head_ = to;
    top_ = to;
    no_open_below_ = to;
    window_.start(to);
    whead_.store(head_, std::memory_order_release);
    c_.window_resyncs++;
    publish();
    return true;
}

void hds_engine::flush(std::uint64_t id) {
    chunk *&w = win_[id % win_.size()];
    if (w == nullptr || w->chunk_id != id) {
        c_.lost += cfg_.packets_per_chunk;
        return;
    }
    chunk *c = w;
    w = nullptr;
    // Its count of lost packets is taken when it is released: until its last posted
    // receive completes, packets waiting in bounce buffers for its slots still go in.
    retire(c, false);
}

void hds_engine::retire(chunk *c, bool discard) {
    chunk_discard_[c->index] = discard ? 1 : 0;
    // Pairs with retire_desc(): a lane that drops the last count after this store
    // sees it and drains; one that dropped it before is seen by drain_retired().
    retired_flag_[c->index].store(1, std::memory_order_seq_cst);
    retired_[(retired_head_ + retired_count_) % retired_.size()] = c;
    retired_count_++;
}

std::uint32_t hds_engine::reservations(const chunk *c) const noexcept {
    std::uint32_t total = 0;
    for (const auto &l : lanes_) total += l.res[c->index].load(std::memory_order_seq_cst);
    return total;
}

bool hds_engine::pass_stalled_locked(chunk *c) {
    // Receives that point into a chunk can only be taken back by completing them. A
    // lane that has completed nothing for stall_timeout_ms (no traffic on its queue)
    // would hold the stream back for good: the chunk goes on past it.
    const std::int64_t now = now_ns();
    const std::int64_t timeout = std::int64_t{cfg_.stall_timeout_ms} * 1000000;
    if (blocked_ != c || blocked_id_ != c->chunk_id || blocked_since_ns_ == 0) {
        blocked_ = c;
        blocked_id_ = c->chunk_id;
        blocked_since_ns_ = now;
        return false;
    }
    if (now - blocked_since_ns_ < timeout) return false;
    const std::size_t idx = c->index;
    bool any = false;
    for (auto &l : lanes_) {
        if (l.res[idx].load(std::memory_order_seq_cst) == 0) continue;
        window_policy::activity &a = window_.act(l.q);
        if (now - a.active_ns.load(std::memory_order_relaxed) < timeout) continue;
        a.gen.fetch_add(1, std::memory_order_seq_cst);
        if (a.busy.load(std::memory_order_seq_cst)) continue;  // inside a call: not stalled
        // The lane is idle and will take the mutex before its next call: its receives
        // into this chunk no longer hold it (their slots stay posted until they
        // complete; what lands there then is placed by copy, or counted late).
        bool released = false;
        for (std::uint64_t j = l.completed; j != l.posted; j++) {
            desc &d = l.ring[j % depth_];
            if (d.c == c && !d.orphan) {
                d.orphan = true;
                l.res[idx].fetch_sub(1, std::memory_order_seq_cst);
                released = true;
            }
        }
        if (l.hold == c) {
            release_hold_locked(l);
            released = true;
        }
        if (!released) continue;
        c_.queue_stalls++;
        any = true;
    }
    return any;
}

void hds_engine::drop_orphan_pending_locked(chunk *c) {
    // Packets waiting in bounce buffers for receives no lane counts any more (orphaned:
    // their lane was passed over) would hold the chunk for as long as that lane stays
    // idle: their chunk leaves before they can go in, and they count late.
    const std::size_t idx = c->index;
    const std::size_t ppc = ppc_;
    for (std::size_t slot = 0; chunk_pending_[idx] != 0 && slot < ppc; slot++) {
        const std::size_t g = gslot(c, slot);
        const std::int32_t b = pending_[g];
        if (b < 0) continue;
        std::uint8_t st = state(g).load(std::memory_order_acquire);
        while (!state(g).compare_exchange_weak(
            st, static_cast<std::uint8_t>(st & ~slot_pending), std::memory_order_acq_rel)) {
        }
        pending_[g] = -1;
        chunk_pending_[idx]--;
        bounce_free_.push_back(b);
        c_.received++;
        c_.late++;
    }
}

void hds_engine::drain_retired() {
    // In window order: a chunk still pointed at by a posted receive holds back the
    // newer ones, so the consumer sees chunk ids in the order the window released them.
    while (retired_count_ > 0) {
        chunk *c = retired_[retired_head_];
        const std::size_t idx = c->index;
        if (reservations(c) != 0) {
            if (!pass_stalled_locked(c)) break;
            continue;
        }
        // Every receive into it has completed (waiting packets went in then), or was
        // orphaned: what still waits waits for an orphan.
        if (chunk_pending_[idx] != 0) drop_orphan_pending_locked(c);
        blocked_since_ns_ = 0;
        retired_head_ = (retired_head_ + 1) % retired_.size();
        retired_count_--;
        retired_flag_[idx].store(0, std::memory_order_relaxed);
        chunk_before_resync_[idx] = 0;
        if (chunk_discard_[idx]) {
            free_.push(c);  // opened by posts only: never part of the stream's window
            continue;
        }
        const std::size_t ppc = cfg_.packets_per_chunk;
        const std::size_t partial = layout_.spead ? close_spead_chunk(c) : 0;
        c_.heaps_partial += partial;
        c->n_present = count_present(c->present, ppc);
        c_.lost += ppc - c->n_present;
        if (c->n_present == 0 && partial == 0) {
            free_.push(c);
        } else {
            c_.chunks++;
            ready_.push(c);
        }
    }
}

void hds_engine::cancel_locked(lane_state &l, std::unique_lock<std::mutex> &lock) {
    for (; l.completed != l.posted; l.completed++) {
        const desc &d = l.ring[l.completed % depth_];
        if (!wdone_.load(std::memory_order_relaxed) || d.c == nullptr) {
            retire_desc(l, d, lock);
            continue;
        }
        // Finishing: waiting packets are not placed any more.
        state(gslot(d.c, d.slot)).store(0, std::memory_order_relaxed);
        if (!d.orphan) l.res[d.c->index].fetch_sub(1, std::memory_order_seq_cst);
    }
    l.scratch_due = 0;
    release_hold_locked(l);
    // Its queue is gone: the window no longer waits for it.
    if (window_.rec(l.q).attached) {
        window_.rec(l.q).attached = false;
        if (started_) follow_window();
    }
}

void hds_engine::cancel(std::size_t lane) {
    if (lane >= lanes_.size()) throw std::out_of_range("lane " + std::to_string(lane));
    lane_state &l = lanes_[lane];
    enter(l);
    {
        std::unique_lock<std::mutex> lock(mutex_);
        cancel_locked(l, lock);
        l.drain_due = false;
        drain_retired();
        publish();
    }
    leave(l);
}

std::size_t hds_engine::outstanding(std::size_t lane) const {
    std::lock_guard<std::mutex> lock(const_cast<std::mutex &>(mutex_));
    const lane_state &l = lanes_.at(lane);
    return static_cast<std::size_t>(l.posted - l.completed);
}

void hds_engine::finish() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (finished_) return;
    // The sources have stopped their queues before the capture finishes the engine,
    // so no posted receive can still be written and no lane is inside a call.
    for (auto &l : lanes_) cancel_locked(l, lock);
    finished_ = true;
    wdone_.store(true, std::memory_order_relaxed);
    // Waiting packets whose receives were cancelled: not placed, counted discarded.
    for (std::size_t g = 0; g < pending_.size(); g++) {
        if (pending_[g] < 0) continue;
        bounce_free_.push_back(pending_[g]);
        pending_[g] = -1;
        chunk_pending_[g / ppc_]--;
        c_.received++;
        c_.discarded++;
    }
    for (const auto &l : lanes_)
        if (l.placed_any && l.top > top_) top_ = l.top;
    if (started_ && head_ <= top_ && top_ - head_ >= win_.size()) {
        // Chunks beyond the ring were never opened: they count lost in advance().
        advance(top_ - win_.size() + 1);
    }
    if (started_ && head_ <= top_) {
        for (std::uint64_t id = head_;; id++) {
            flush(id);
            if (id == top_) break;
        }
    }
    for (auto &w : win_) {
        if (w != nullptr) {
            retire(w, true);
            w = nullptr;
        }
    }
    drain_retired();
    for (auto &l : lanes_) leave(l);
    publish();
    ready_.finish();
}

counters hds_engine::stats() const noexcept {
    counters out = pub_.load();
    auto *o = reinterpret_cast<std::uint64_t *>(&out);
    constexpr std::size_t n = sizeof(counters) / sizeof(std::uint64_t);
    for (const auto &l : lanes_) {
        const counters lc = l.pub.load();
        const auto *v = reinterpret_cast<const std::uint64_t *>(&lc);
        for (std::size_t i = 0; i < n; i++) o[i] = add_sat(o[i], v[i]);
    }
    return out;
}

std::vector<std::uint64_t> hds_engine::queue_received() const {
    std::vector<std::uint64_t> out;
    for (const auto &l : lanes_) out.push_back(l.pub.load().received);
    return out;
}

split_counters hds_engine::split_stats() const noexcept {
    std::uint64_t total[n_split] = {};
    for (const auto &l : lanes_)
        for (std::size_t i = 0; i < n_split; i++)
            total[i] += l.pub_split[i].load(std::memory_order_relaxed);
    split_counters out;
    std::memcpy(&out, total, sizeof(total));
    return out;
}

}  // namespace casper400g_rx
