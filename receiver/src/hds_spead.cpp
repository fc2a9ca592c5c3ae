// The header-data split for SPEAD formats (hds.h): a slot is one packet of a heap, its
// sequence number heap index * parts + packet, so that the split engine's predictions,
// fix-ups and window work on packets as for fixed-size formats; what differs is where a
// slot lies in its chunk, how a completed receive is read, and that the chunk leaves
// with per-heap bytes, presence and items as the copying engine's SPEAD chunks do.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "casper400g_rx/hds.h"

namespace casper400g_rx {

namespace {

std::uint16_t be16(const std::uint8_t *p) noexcept {
    return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

std::size_t round64(std::size_t n) noexcept { return (n + 63) / 64 * 64; }

}  // namespace

split_layout split_layout::for_spead(const format &fmt) {
    const spead_format &s = *fmt.spead;
    bool index_named = s.index_item == spead_heap_cnt_id;
    for (std::size_t k = 0; k < s.n_items; k++) index_named = index_named || s.items[k] == s.index_item;
    // The four per-packet items, the named ones, the index when it is another, and the
    // pointer of the heap's data item.
    const std::size_t first_items = 4 + s.n_items + (index_named ? 0 : 1) + 1;
    // Later packets: the four alone, unless every packet must carry the index item.
    const std::size_t later_items = s.index_item == spead_heap_cnt_id ? 4 : first_items;
    split_layout l;
    l.spead = true;
    l.heap = fmt.payload_size;
    l.first_header = 8 + 8 * first_items;
    l.later_header = 8 + 8 * later_items;
    l.prefix = std::max(l.first_header, l.later_header);
    if (s.max_packet <= l.prefix)
        throw std::invalid_argument(
            "SPEAD max_packet " + std::to_string(s.max_packet) +
            " leaves no heap bytes after the " + std::to_string(l.prefix) +
            "-byte SPEAD header the header-data split predicts for this format");
    l.first_part = std::min(l.heap, s.max_packet - l.first_header);
    l.later_part = s.max_packet - l.later_header;
    const std::size_t rest = l.heap - l.first_part;
    l.parts = 1 + (rest + l.later_part - 1) / l.later_part;
    l.payload = std::max(l.first_part, std::min(rest, l.later_part));
    l.tail_at = round64(headers + l.prefix);
    l.tail = s.max_packet;
    l.entry = round64(l.tail_at + l.tail);
    return l;
}

std::size_t split_layout::part_of(std::uint64_t offset, std::uint64_t length) const noexcept {
    std::size_t k = 0;
    if (offset != 0) {
        if (offset < first_part || (offset - first_part) % later_part != 0) return parts;
        const std::uint64_t after = (offset - first_part) / later_part;
        if (after >= parts - 1) return parts;
        k = static_cast<std::size_t>(after) + 1;
    }
    return length == part_len(k) ? k : parts;
}

std::int64_t check_spead_split_headers(const std::uint8_t *hdr, std::size_t frame_len,
                                       const format &fmt) noexcept {
    constexpr std::size_t h = split_layout::headers;
    if (frame_len < h + 8 || frame_len - h > fmt.spead->max_packet) return -1;
    const std::size_t n = frame_len - h;
    if (be16(hdr + 12) != 0x0800) return -1;
    const std::uint8_t *ip = hdr + 14;
    if (ip[0] != 0x45) return -1;
    if (be16(ip + 2) != 20 + 8 + n) return -1;
    if ((be16(ip + 6) & 0x3fff) != 0) return -1;
    if (ip[9] != 17) return -1;
    const std::uint8_t *udp = ip + 20;
    if (be16(udp + 4) != 8 + n) return -1;
    if (fmt.udp_port != 0 && be16(udp + 2) != fmt.udp_port) return -1;
    return static_cast<std::int64_t>(n);
}

std::size_t hds_engine::part_posted(const desc &d) const noexcept {
    if (d.c != nullptr) return d.slot % layout_.parts;
    if (d.predicted) return static_cast<std::size_t>(d.seq % layout_.parts);
    return layout_.parts > 1 ? 1 : 0;  // a scratch receive for an extra packet
}

void hds_engine::spead_target(recv_target &t, const lane_state &l, std::size_t ring_k,
                              std::size_t part) const noexcept {
    t.header_len = static_cast<std::uint32_t>(split_layout::headers + layout_.part_header(part));
    t.payload_len = static_cast<std::uint32_t>(layout_.part_len(part));
    t.tail = l.headers.get() + ring_k * layout_.entry + layout_.tail_at;
    t.tail_len = static_cast<std::uint32_t>(layout_.tail);
}

spead_reject hds_engine::read_spead(lane_state &l, const desc &d, const std::uint8_t *hdr,
                                    std::uint32_t byte_len, bool ok, spead_packet &out,
                                    std::uint64_t &seq, bool &whole) noexcept {
    whole = false;
    if (!ok) return spead_reject::frame;
    const std::int64_t got = check_spead_split_headers(hdr, byte_len, fmt());
    if (got < 0) return spead_reject::frame;
    const auto n = static_cast<std::size_t>(got);
    const spead_format &f = *fmt().spead;
    const std::size_t part = part_posted(d);
    const std::size_t in_ring = layout_.part_header(part);  // SPEAD bytes scattered with the headers
    const std::size_t room = layout_.part_len(part);        // ... then into the slot
    const std::uint8_t *udp = hdr + split_layout::headers;
    const std::uint8_t *landed = landing(l, d);
    const std::size_t header = n >= 8 ? 8 + 8 * std::size_t{be16(udp + 6)} : 0;
    spead_reject why;
    if (header == in_ring && n - in_ring <= room) {
        // As predicted: the SPEAD header in the ring (parse_spead reads no further), the
        // heap bytes where the receive put them.
        why = parse_spead(udp, n, f, layout_.heap, out);
        out.payload = landed;
    } else {
        // The header length differed, or the packet was longer than its slot: its
        // pieces (ring, slot, tail) put together in the lane's staging buffer.
        std::uint8_t *st = l.stage.get();
        const std::size_t a = std::min(n, in_ring);
        const std::size_t b = std::min(n - a, room);
        std::memcpy(st, udp, a);
        if (b != 0) std::memcpy(st + a, landed, b);
        if (n > a + b) std::memcpy(st + a + b, hdr + layout_.tail_at, n - a - b);
        why = parse_spead(st, n, f, layout_.heap, out);
        whole = true;
    }
    if (why != spead_reject::none) return why;
    const std::size_t k = layout_.part_of(out.offset, out.length);
    if (k == layout_.parts) return spead_reject::grid;
    if (out.index > (UINT64_MAX - k) / layout_.parts) return spead_reject::index;
    seq = out.index * layout_.parts + k;
    return spead_reject::none;
}

void hds_engine::count_spead_reject(lane_state &l, spead_reject why) noexcept {
    l.c.rejected_by[static_cast<unsigned>(why) - 1]++;
    l.c.rejected++;
    l.c.received++;
}

void hds_engine::put_items(chunk *c, std::size_t slot, const std::uint64_t *items) noexcept {
    const std::size_t heaps = cfg_.packets_per_chunk;
    const std::size_t h = slot / layout_.parts;
    for (std::size_t k = 0; k < fmt().spead->n_items; k++)
        if (items[k] != spead_item_absent)
            __atomic_store_n(&c->items[k * heaps + h], items[k], __ATOMIC_RELAXED);
}

std::size_t hds_engine::close_spead_chunk(chunk *c) noexcept {
    const std::uint8_t *placed = present_of(c);
    std::size_t partial = 0;
    for (std::size_t h = 0; h < cfg_.packets_per_chunk; h++) {
        std::uint64_t bytes = 0;
        for (std::size_t k = 0; k < layout_.parts; k++)
            if (placed[h * layout_.parts + k] != 0) bytes += layout_.part_len(k);
        c->heap_bytes[h] = bytes;
        c->present[h] = bytes == layout_.heap ? 1 : 0;
        partial += bytes != 0 && bytes != layout_.heap ? 1 : 0;
    }
    return partial;
}

void hds_engine::complete_spead(lane_state &l, const desc &d, const std::uint8_t *hdr,
                                const recv_completion &rc, std::unique_lock<std::mutex> &lock) {
    spead_packet pk;
    std::uint64_t seq = 0;
    bool whole = false;
    const spead_reject why = read_spead(l, d, hdr, rc.byte_len, rc.ok, pk, seq, whole);
    if (why != spead_reject::none) {
        // Counted by reason; it moves no prediction (it may not be of this stream).
        count_spead_reject(l, why);
        retire_desc(l, d, lock);
        return;
    }
    // The common cases without the mutex, as complete() takes them.
    if (!whole && (d.c != nullptr || d.predicted) && !d.orphan && attached(l) &&
        wstarted_.load(std::memory_order_acquire) && !wdone_.load(std::memory_order_relaxed)) {
        const std::uint64_t h = head_of(l);
        const std::uint64_t id = seq / ppc_;
        const std::size_t slot = seq % ppc_;
        if (d.c != nullptr && id >= h && id - h < cfg_.max_chunks && d.c->chunk_id == id &&
            d.slot == slot && retired_flag_[d.c->index].load(std::memory_order_relaxed) == 0) {
            l.run.n = 0;
            if (l.own == window_policy::none || id > l.own) l.own = id;
            resync(l, d, seq);
            put_items(d.c, slot, pk.items.data());
            __atomic_store_n(&present_of(d.c)[slot], std::uint8_t{1}, __ATOMIC_RELEASE);
            l.s.in_place++;
            placed(l, id, pk.length);
            l.c.received++;
            retire_desc(l, d, lock);
            return;
        }
        if (id < h && window_.classify(h, own_of(l), id) == window_policy::place::late) {
            l.run.n = 0;
            resync(l, d, seq);
            count_behind(l, id);
            retire_desc(l, d, lock);
            return;
        }
        if (l.completed <= l.gap_posted) {
            resync(l, d, seq);
            l.c.discarded++;
            l.c.received++;
            retire_desc(l, d, lock);
            return;
        }
    }
    if (!lock.owns_lock()) lock_parked(l, lock);
    slow_packet sp;
    if (wdone_.load(std::memory_order_relaxed)) {
        l.c.received++;
        l.c.discarded++;
    } else {
        if ((d.c != nullptr || d.predicted) && !d.orphan) resync(l, d, seq);
        sp.landed = pk.payload;
        sp.len = pk.length;
        sp.items = pk.items.data();
        place_locked(l, seq, d, sp, lock);
    }
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

}  // namespace casper400g_rx
