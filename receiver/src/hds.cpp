#include "casper400g_rx/hds.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace casper400g_rx {

namespace {

constexpr std::size_t n_split = sizeof(split_counters) / sizeof(std::uint64_t);
static_assert(sizeof(split_counters) == n_split * sizeof(std::uint64_t),
              "split_counters must hold only uint64 fields");

std::uint16_t be16(const std::uint8_t *p) noexcept {
    return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

std::uint8_t *alloc_aligned(std::size_t bytes) {
    void *p = nullptr;
    if (posix_memalign(&p, 4096, std::max<std::size_t>(bytes, 1)) != 0) throw std::bad_alloc();
    return static_cast<std::uint8_t *>(p);
}

std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) noexcept {
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

}  // namespace

void hds_engine::aligned_free::operator()(std::uint8_t *p) const noexcept { std::free(p); }

split_layout split_layout::for_format(const format &fmt) {
    fmt.validate();
    if (fmt.spead)
        throw std::invalid_argument(
            "the header-data split places fixed-size payloads at a fixed offset; SPEAD heaps "
            "(Format.spead) need the copying path: rq='striding' on the ibv backend");
    split_layout l;
    std::size_t prefix = 0;
    if (fmt.source == seq_source::payload) prefix = fmt.seq.offset + fmt.seq.width;
    if (fmt.stream_id) prefix = std::max(prefix, fmt.stream_id->offset + fmt.stream_id->width);
    l.prefix = prefix;
    l.payload = fmt.payload_size;
    l.entry = (l.header_len() + 63) / 64 * 64;
    return l;
}

std::int32_t check_split_headers(const std::uint8_t *hdr, std::size_t frame_len,
                                 const format &fmt) noexcept {
    const std::size_t payload = fmt.payload_size;
    if (frame_len != split_layout::headers + payload) return -1;
    if (be16(hdr + 12) != 0x0800) return -1;  // VLAN tags and non-IPv4 shift the split point
    const std::uint8_t *ip = hdr + 14;
    if (ip[0] != 0x45) return -1;  // IPv4 without options
    if (be16(ip + 2) != 20 + 8 + payload) return -1;
    if ((be16(ip + 6) & 0x3fff) != 0) return -1;  // a fragment
    if (ip[9] != 17) return -1;
    const std::uint8_t *udp = ip + 20;
    if (be16(udp + 4) != 8 + payload) return -1;
    if (fmt.udp_port != 0 && be16(udp + 2) != fmt.udp_port) return -1;
    return be16(ip + 4);
}

std::size_t hds_engine::window_size(const engine_config &cfg, std::size_t lanes,
                                    std::size_t depth) {
    cfg.validate();
    if (lanes == 0 || lanes > 64)
        throw std::invalid_argument("queues must be 1..64, got " + std::to_string(lanes));
    if (depth == 0 || depth > (1u << 16))
        throw std::invalid_argument("receive queue depth must be 1..65536, got " +
                                    std::to_string(depth));
    // Posted receives reach up to depth * lanes sequence numbers past the newest
    // packet; the chunks they point into are opened ahead of the window.
    const std::size_t ppc = cfg.packets_per_chunk;
    return cfg.max_chunks + (depth * lanes + ppc - 1) / ppc + 1;
}

engine_config hds_engine::sized(const engine_config &cfg, std::size_t lanes, std::size_t depth) {
    const std::size_t wsize = window_size(cfg, lanes, depth);
    engine_config out = cfg;
    if (out.n_chunks == 0) {
        // Twice the window: after a jump in the stream, the chunks the old predictions
        // point into stay pinned until those receives complete.
        out.n_chunks = 2 * wsize + 4;
    } else if (out.n_chunks < wsize + 1) {
        throw std::invalid_argument(
            "n_chunks " + std::to_string(out.n_chunks) + " is too small for header-data split: " +
            std::to_string(depth) + " posted receives per queue reach " +
            std::to_string(wsize - cfg.max_chunks) + " chunks ahead of the " +
            std::to_string(cfg.max_chunks) + "-chunk window, so at least " +
            std::to_string(wsize + 1) + " chunks are needed");
    }
    return out;
}

hds_engine::hds_engine(const format &fmt, const engine_config &cfg, std::size_t lanes,
                       std::size_t depth)
    : engine(fmt, sized(cfg, lanes, depth)),
      layout_(split_layout::for_format(fmt)),
      depth_(depth),
      wsize_(window_size(cfg, lanes, depth)),
      lanes_(lanes),
      win_(wsize_, nullptr),
      reserved_(pool_.size() * cfg_.packets_per_chunk, 0),
      pending_(pool_.size() * cfg_.packets_per_chunk, -1),
      chunk_reserved_(pool_.size(), 0),
      chunk_pending_(pool_.size(), 0),
      chunk_discard_(pool_.size(), 0),
      retired_(pool_.size(), nullptr) {
    const std::size_t ppc = cfg_.packets_per_chunk;
    head_ = cfg_.first_chunk.value_or(0);
    top_ = head_;
    for (std::size_t q = 0; q < lanes; q++) {
        lane_state &l = lanes_[q];
        l.ring.resize(depth);
        l.headers.reset(alloc_aligned(depth * layout_.entry));
        std::memset(l.headers.get(), 0, depth * layout_.entry);
        l.scratch.reset(alloc_aligned(scratch_bytes()));
        std::memset(l.scratch.get(), 0, scratch_bytes());
        const std::uint64_t base = head_ * ppc;
        l.next = base + (q + lanes - base % lanes) % lanes;
    }
    // One bounce buffer per receive that can be posted: a waiting packet always sits
    // on a distinct posted slot, so the pool never runs dry. Left untouched until used.
    const std::size_t n_bounce = lanes * depth;
    bounce_.reset(alloc_aligned(n_bounce * layout_.payload));
    bounce_free_.reserve(n_bounce);
    for (std::size_t i = n_bounce; i-- > 0;) bounce_free_.push_back(static_cast<std::int32_t>(i));
    publish_split();
}

chunk *hds_engine::try_acquire() {
    if (chunk *c = free_.try_pop()) return c;
    if (cfg_.policy == slow_consumer_policy::drop_oldest) {
        if (chunk *c = ready_.try_pop()) {
            c_.chunks_dropped++;
            c_.packets_dropped += c->n_present;
            return c;
        }
    }
    return nullptr;
}

chunk *hds_engine::open_chunk(std::uint64_t id, bool may_wait) {
    chunk *&w = win_[id % wsize_];
    if (w != nullptr) return w;
    chunk *c = may_wait ? acquire() : try_acquire();
    if (c == nullptr) return nullptr;
    c->chunk_id = id;
    c->n_present = 0;
    std::memset(c->present, 0, cfg_.packets_per_chunk);
    chunk_discard_[c->index] = 0;
    w = c;
    return c;
}

std::size_t hds_engine::post(std::size_t lane, recv_target *out, std::size_t max) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lane >= lanes_.size()) throw std::out_of_range("lane " + std::to_string(lane));
    lane_state &l = lanes_[lane];
    const std::size_t ppc = cfg_.packets_per_chunk;
    const std::size_t size = layout_.payload;
    const std::uint64_t n_lanes = lanes_.size();
    std::size_t n = 0;
    std::size_t skips = 0;
    while (n < max && !finished_ && l.posted - l.completed < depth_) {
        if (l.scratch_due > 0 && l.scratch_posted - l.scratch_done < scratch_slots) {
            // The stream runs behind the receives already posted: this receive takes
            // the extra packet, so that the next ones land where they are predicted.
            const std::size_t idx = l.scratch_posted % scratch_slots;
            const std::size_t k = l.posted % depth_;
            l.ring[k] = desc{UINT64_MAX, nullptr, idx, l.shift};
            recv_target &t = out[n++];
            t.wr_id = l.posted;
            t.header = l.headers.get() + k * layout_.entry;
            t.header_len = static_cast<std::uint32_t>(layout_.header_len());
            t.payload = l.scratch.get() + idx * size + layout_.prefix;
            t.payload_len = static_cast<std::uint32_t>(size - layout_.prefix);
            t.scratch = true;
            l.scratch_due--;
            l.scratch_posted++;
            l.posted++;
            s_.posted++;
            continue;
        }
        std::uint64_t p = l.next;
        const std::uint64_t floor = head_ * ppc;
        if (p < floor || p / ppc >= head_ + wsize_) {
            if (p >= floor && l.posted != l.completed) break;  // wait for the window to move
            // Predictions behind the window, or far ahead with nothing posted: start
            // again at the window's head (the lane's next slot of its own residue).
            p = floor + (lane + n_lanes - floor % n_lanes) % n_lanes;
            l.next = p;
            if (p / ppc >= head_ + wsize_) break;
        }
        chunk *c = open_chunk(p / ppc, false);
        if (c == nullptr) {
            if (!l.stalled) c_.waits++;
            l.stalled = true;
            break;
        }
        l.stalled = false;
        l.next = add_sat(p, n_lanes);
        const std::size_t slot = p % ppc;
        const std::size_t g = gslot(c, slot);
        if (c->present[slot] || reserved_[g] || pending_[g] >= 0) {
            // Never post over placed data: the NIC would overwrite it.
            if (++skips > wsize_ * ppc) break;
            continue;
        }
        reserved_[g] = 1;
        chunk_reserved_[c->index]++;
        const std::size_t k = l.posted % depth_;
        l.ring[k] = desc{p, c, slot, l.shift};
        recv_target &t = out[n++];
        t.wr_id = l.posted;
        t.header = l.headers.get() + k * layout_.entry;
        t.header_len = static_cast<std::uint32_t>(layout_.header_len());
        t.payload = c->data + slot * size + layout_.prefix;
        t.payload_len = static_cast<std::uint32_t>(size - layout_.prefix);
        t.scratch = false;
        l.posted++;
        s_.posted++;
    }
    publish();
    publish_split();
    return n;
}

void hds_engine::complete(std::size_t lane, const recv_completion *comps, std::size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lane >= lanes_.size()) throw std::out_of_range("lane " + std::to_string(lane));
    lane_state &l = lanes_[lane];
    for (std::size_t i = 0; i < n; i++) {
        const recv_completion &rc = comps[i];
        if (rc.wr_id != l.completed || l.completed == l.posted)
            throw std::logic_error("receive completion " + std::to_string(rc.wr_id) +
                                   " out of order on queue " + std::to_string(lane) +
                                   " (expected " + std::to_string(l.completed) + ")");
        const std::size_t k = l.completed % depth_;
        const desc d = l.ring[k];
        const std::uint8_t *hdr = l.headers.get() + k * layout_.entry;
        l.completed++;
        retire_desc(l, d);
        if (finished_) {
            c_.received++;
            c_.discarded++;
        } else {
            const std::int32_t ip_id = rc.ok ? check_split_headers(hdr, rc.byte_len, fmt()) : -1;
            std::optional<std::uint64_t> seq;
            if (ip_id >= 0)
                seq = decoder_.decode(
                    packet_ref{hdr + split_layout::headers, layout_.payload, ip_id});
            if (!seq) {
                c_.rejected++;
                c_.received++;
            } else {
                if (d.c != nullptr) resync(l, d, *seq);
                place(*seq, hdr + split_layout::headers, d, landing(l, d));
            }
            if (d.c != nullptr) fill_pending(d);
        }
    }
    drain_retired();
    publish();
    publish_split();
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
        if (back > scratch_slots) return;
        l.scratch_due += back;
    }
    l.shift += static_cast<std::uint64_t>(off);
    s_.resyncs++;
}

void hds_engine::start(std::uint64_t seq) {
    started_ = true;
    const std::uint64_t new_head = cfg_.first_chunk ? *cfg_.first_chunk : seq / cfg_.packets_per_chunk;
    // Chunks opened by posts before the stream's position was known hold no packets:
    // those outside the real window are dropped without counting anything.
    for (auto &w : win_) {
        if (w != nullptr && (w->chunk_id < new_head || w->chunk_id >= new_head + wsize_)) {
            retire(w, true);
            w = nullptr;
        }
    }
    head_ = new_head;
    top_ = head_;
}

const std::uint8_t *hds_engine::landing(const lane_state &l, const desc &d) const noexcept {
    const std::size_t size = layout_.payload;
    return d.c != nullptr ? d.c->data + d.slot * size : l.scratch.get() + d.slot * size;
}

void hds_engine::retire_desc(lane_state &l, const desc &d) {
    if (d.c == nullptr) {
        l.scratch_done++;
        return;
    }
    reserved_[gslot(d.c, d.slot)] = 0;
    chunk_reserved_[d.c->index]--;
}

void hds_engine::place(std::uint64_t seq, const std::uint8_t *prefix, const desc &d,
                       const std::uint8_t *landed) {
    const std::size_t ppc = cfg_.packets_per_chunk;
    const std::size_t size = layout_.payload;
    const std::size_t pre = layout_.prefix;
    if (!started_) start(seq);
    const std::uint64_t id = seq / ppc;
    const std::size_t slot = seq % ppc;
    if (id < head_) {
        c_.late++;
        c_.received++;
        return;
    }
    if (id - head_ >= cfg_.max_chunks) advance(id - cfg_.max_chunks + 1);
    chunk *c = open_chunk(id, false);
    if (c == nullptr) {
        // Waiting helps only if the consumer holds chunks it will release. When the
        // engine itself holds them all (open, or pinned by receives posted on old
        // predictions), the receives that would free them come after this packet.
        std::size_t held = retired_count_;
        for (const chunk *w : win_) held += w != nullptr;
        if (held < pool_.size()) c = open_chunk(id, true);
    }
    if (c == nullptr) {  // stopping, or no chunk to be had: counted, not placed
        c_.discarded++;
        c_.received++;
        return;
    }
    if (id > top_) top_ = id;
    const std::size_t g = gslot(c, slot);
    if (c->present[slot] || pending_[g] >= 0) {
        c_.duplicate++;
        c_.received++;
        return;
    }
    std::uint8_t *dst = c->data + slot * size;
    if (c == d.c && slot == d.slot) {
        std::memcpy(dst, prefix, pre);
        s_.in_place++;
        mark_present(c, slot);
    } else if (reserved_[g]) {
        if (bounce_free_.empty()) throw std::logic_error("header-split bounce pool exhausted");
        const std::int32_t b = bounce_free_.back();
        bounce_free_.pop_back();
        std::uint8_t *buf = bounce_.get() + static_cast<std::size_t>(b) * size;
        std::memcpy(buf, prefix, pre);
        std::memcpy(buf + pre, landed + pre, size - pre);
        pending_[g] = b;
        chunk_pending_[c->index]++;
        s_.bounced++;  // `received` is counted once its fate is known
    } else {
        std::memcpy(dst, prefix, pre);
        std::memcpy(dst + pre, landed + pre, size - pre);
        s_.fixup++;
        mark_present(c, slot);
    }
}

void hds_engine::mark_present(chunk *c, std::size_t slot) {
    c->present[slot] = 1;
    c->n_present++;
    c_.packets++;
    c_.bytes += layout_.payload;
    c_.received++;
}

void hds_engine::fill_pending(const desc &d) {
    const std::size_t g = gslot(d.c, d.slot);
    const std::int32_t b = pending_[g];
    if (b < 0) return;
    // The chunk may have left the window since the packet arrived; it is still held
    // back from the consumer by this very receive, so the packet goes in as it would
    // have on arrival.
    const std::size_t size = layout_.payload;
    std::memcpy(d.c->data + d.slot * size, bounce_.get() + static_cast<std::size_t>(b) * size,
                size);
    pending_[g] = -1;
    chunk_pending_[d.c->index]--;
    bounce_free_.push_back(b);
    s_.fixup++;
    mark_present(d.c, d.slot);
}

void hds_engine::advance(std::uint64_t new_head) {
    const std::uint64_t end = std::min<std::uint64_t>(new_head, head_ + cfg_.max_chunks);
    for (std::uint64_t id = head_; id < end; id++) flush(id);
    // Chunks opened ahead of the window by posts hold no packets yet.
    const std::uint64_t ahead = std::min<std::uint64_t>(new_head, head_ + wsize_);
    for (std::uint64_t id = end; id < ahead; id++) {
        chunk *&w = win_[id % wsize_];
        if (w != nullptr) {
            retire(w, true);
            w = nullptr;
        }
    }
    if (new_head > end) {
        const std::uint64_t chunks = new_head - end;
        const std::uint64_t ppc = cfg_.packets_per_chunk;
        const std::uint64_t missing = chunks > UINT64_MAX / ppc ? UINT64_MAX : chunks * ppc;
        c_.lost = add_sat(c_.lost, missing);
    }
    head_ = new_head;
}

void hds_engine::flush(std::uint64_t id) {
    chunk *&w = win_[id % wsize_];
    if (w == nullptr) {
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
    retired_[(retired_head_ + retired_count_) % retired_.size()] = c;
    retired_count_++;
}

void hds_engine::drain_retired() {
    // In window order: a chunk still pointed at by a posted receive holds back the
    // newer ones, so the consumer sees chunk ids in the order the window released them.
    while (retired_count_ > 0) {
        chunk *c = retired_[retired_head_];
        if (chunk_reserved_[c->index] != 0) break;
        retired_head_ = (retired_head_ + 1) % retired_.size();
        retired_count_--;
        if (chunk_pending_[c->index] != 0)
            throw std::logic_error("header-split chunk released with packets still waiting");
        if (chunk_discard_[c->index]) {
            free_.push(c);  // opened by posts only: never part of the stream's window
            continue;
        }
        c_.lost += cfg_.packets_per_chunk - c->n_present;
        if (c->n_present == 0) {
            free_.push(c);
        } else {
            c_.chunks++;
            ready_.push(c);
        }
    }
}

void hds_engine::cancel_locked(std::size_t lane) {
    lane_state &l = lanes_[lane];
    for (; l.completed != l.posted; l.completed++) {
        const desc &d = l.ring[l.completed % depth_];
        retire_desc(l, d);
        if (!finished_ && d.c != nullptr) fill_pending(d);
    }
    l.scratch_due = 0;
}

void hds_engine::cancel(std::size_t lane) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lane >= lanes_.size()) throw std::out_of_range("lane " + std::to_string(lane));
    cancel_locked(lane);
    drain_retired();
    publish();
    publish_split();
}

std::size_t hds_engine::outstanding(std::size_t lane) const {
    std::lock_guard<std::mutex> lock(const_cast<std::mutex &>(mutex_));
    const lane_state &l = lanes_.at(lane);
    return static_cast<std::size_t>(l.posted - l.completed);
}

void hds_engine::finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    // The sources have stopped their queues before the capture finishes the engine,
    // so no posted receive can still be written.
    for (std::size_t q = 0; q < lanes_.size(); q++) cancel_locked(q);
    finished_ = true;
    if (started_) {
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
    publish();
    publish_split();
    ready_.finish();
}

void hds_engine::publish_split() noexcept {
    std::uint64_t raw[n_split];
    std::memcpy(raw, &s_, sizeof(raw));
    for (std::size_t i = 0; i < n_split; i++) pub_split_[i].store(raw[i], std::memory_order_relaxed);
}

split_counters hds_engine::split_stats() const noexcept {
    std::uint64_t raw[n_split];
    for (std::size_t i = 0; i < n_split; i++) raw[i] = pub_split_[i].load(std::memory_order_relaxed);
    split_counters out;
    std::memcpy(&out, raw, sizeof(raw));
    return out;
}

}  // namespace casper400g_rx
