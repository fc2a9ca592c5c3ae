#include "casper400g_rx/spead.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "casper400g_rx/chunk.h"
#include "casper400g_rx/copy.h"
#include "casper400g_rx/slot_state.h"

namespace casper400g_rx {

namespace {

std::uint64_t load_be64(const std::uint8_t *p) noexcept {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// The cells whose first byte lies in [offset, offset + length): distinct packets of a
// heap never share one. The packet that ends the heap also takes the extra cell past the
// heap's last, so that a final packet too short to start a cell has one, and a repeat
// of it is seen.
struct cell_range {
    std::size_t first, end;
};

cell_range cells_of(std::uint64_t offset, std::uint64_t length, std::size_t heap_size) noexcept {
    const std::uint64_t stop = offset + length;
    return {static_cast<std::size_t>((offset + spead_cell - 1) / spead_cell),
            static_cast<std::size_t>((stop + spead_cell - 1) / spead_cell + (stop == heap_size))};
}

std::uint64_t word_mask(std::size_t w, const cell_range &r) noexcept {
    const std::size_t lo = w * 64 > r.first ? 0 : r.first - w * 64;
    const std::size_t hi = r.end - w * 64 >= 64 ? 64 : r.end - w * 64;  // exclusive
    const std::uint64_t upper = hi == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << hi) - 1;
    return upper & ~((std::uint64_t{1} << lo) - 1);
}

// The bytes a packet [o, e) of a multi-packet heap of `heap` bytes adds to what of the
// heap is covered, exactly. The packet holding a cell's first byte owns the cell
// (cells_of), and its span from its first owned cell to its end overlaps no other
// packet's such span. Packets overlap only where one starts inside a cell (its lead-in,
// up to the next cell, which it owns) and another ends in that cell (its last one): at
// most one of each per cell, since they own the cells on either side. Both put their
// bytes of the cell into the cell's edge byte (a bit per byte); the one that comes
// second sees the other's bits and leaves out the bytes both hold.
//
// With one queue (not `shared`) packets are deposited one after the other, and a packet
// that ends on a cell boundary -- every packet of a heap cut on 8-byte boundaries -- owns
// its last cell whole and leaves no mark: a lead-in that comes later sees the cell's
// bit in the bitmap (`words`) and no mark of its owner's (bit 0 of the edge byte, which
// a lead-in never has), and takes the cell as covered; one that came before left its
// bits, which the owner reads. Edge bytes are then touched only by heaps cut elsewhere.
std::uint64_t cover(chunk &c, std::size_t slot, std::uint64_t o, std::uint64_t e,
                    std::size_t heap, bool shared, const std::uint64_t *words) noexcept {
    const std::uint64_t owned_from = (o + spead_cell - 1) / spead_cell * spead_cell;
    std::uint64_t added = e > owned_from ? e - owned_from : 0;
    std::uint8_t *edges = c.edges + slot * spead_format::edge_bytes(heap);
    auto mark = [&](std::uint64_t k, std::uint8_t mine) {
        __atomic_store_n(&c.edges_used[slot], std::uint8_t{1}, __ATOMIC_RELAXED);
        return or_fetch_old(edges[k], mine, shared);
    };
    if (e < heap) {
        // The packet's last cell: a lead-in of a later packet may hold some of it. (A
        // packet that ends the heap owns the cell past it, so no lead-in follows.)
        const std::uint64_t k = (e - 1) / spead_cell;
        const std::uint64_t n = e - k * spead_cell;
        const std::uint64_t from = o > k * spead_cell ? o - k * spead_cell : 0;
        const auto mine = static_cast<std::uint8_t>(((1u << n) - 1) & ~((1u << from) - 1));
        std::uint8_t others = 0;
        if (shared || n != spead_cell)
            others = mark(k, mine);
        else if (__atomic_load_n(&c.edges_used[slot], __ATOMIC_RELAXED) != 0)
            others = __atomic_load_n(&edges[k], __ATOMIC_RELAXED);
        const unsigned both = static_cast<unsigned>(__builtin_popcount(others & mine));
        added = added > both ? added - both : 0;
    }
    if (o % spead_cell != 0) {
        const std::uint64_t k = o / spead_cell;
        const std::uint64_t n = std::min<std::uint64_t>(spead_cell, heap - k * spead_cell);
        const auto mine =
            static_cast<std::uint8_t>(((1u << n) - 1) & ~((1u << (o % spead_cell)) - 1));
        std::uint8_t others = mark(k, mine);
        if (!shared && (others & 1) == 0 &&
            ((__atomic_load_n(&words[k / 64], __ATOMIC_RELAXED) >> (k % 64)) & 1) != 0)
            others = 0xff;  // the cell's owner came first and ends past it
        added += static_cast<unsigned>(__builtin_popcount(mine & ~others));
    }
    return added;
}

}  // namespace

const char *spead_reject_name(spead_reject r) noexcept {
    switch (r) {
        case spead_reject::none: return "none";
        case spead_reject::frame: return "frame";
        case spead_reject::size: return "size";
        case spead_reject::magic: return "magic";
        case spead_reject::flavour: return "flavour";
        case spead_reject::items: return "items";
        case spead_reject::missing: return "missing";
        case spead_reject::payload: return "payload";
        case spead_reject::heap_size: return "heap_size";
        case spead_reject::offset: return "offset";
        case spead_reject::index: return "index";
        case spead_reject::unaligned: return "unaligned";
        case spead_reject::grid: return "grid";
        case spead_reject::count_: break;
    }
    return "?";
}

void spead_format::validate(std::size_t heap_size) const {
    if (heap_address_bits != 40 && heap_address_bits != 48)
        throw std::invalid_argument("SPEAD heap_address_bits must be 40 (SPEAD-64-40) or 48 "
                                    "(SPEAD-64-48), got " +
                                    std::to_string(heap_address_bits));
    if (heap_size == 0) throw std::invalid_argument("SPEAD heap size must be > 0, got 0");
    if (heap_size > (std::size_t{1} << 31))
        throw std::invalid_argument("SPEAD heap size " + std::to_string(heap_size) +
                                    " exceeds 2^31 bytes");
    const std::uint64_t max_id = (std::uint64_t{1} << (63 - heap_address_bits)) - 1;
    auto check_id = [max_id](std::uint64_t id, const char *what) {
        if (id == 0 || id > max_id)
            throw std::invalid_argument(std::string(what) + " " + hex(id) +
                                        " is not an item id of this flavour (1.." + hex(max_id) +
                                        ")");
        if (id == spead_heap_size_id || id == spead_heap_offset_id ||
            id == spead_payload_length_id)
            throw std::invalid_argument(std::string(what) + " " + hex(id) +
                                        " is a per-packet item (heap size, heap offset or "
                                        "payload length)");
    };
    check_id(index_item, "SPEAD index item");
    if (index_step == 0) throw std::invalid_argument("SPEAD index_step must be > 0, got 0");
    if (n_items > spead_max_items)
        throw std::invalid_argument("at most " + std::to_string(spead_max_items) +
                                    " SPEAD items, got " + std::to_string(n_items));
    for (std::size_t i = 0; i < n_items; i++) {
        check_id(items[i], "SPEAD item");
        for (std::size_t j = 0; j < i; j++)
            if (items[j] == items[i])
                throw std::invalid_argument("SPEAD item " + hex(items[i]) + " named twice");
    }
    if (max_packet < 8 + 4 * 8 || max_packet > 65507)
        throw std::invalid_argument("SPEAD max_packet must be 40..65507 bytes, got " +
                                    std::to_string(max_packet));
}

std::size_t spead_format::cell_words(std::size_t heap_size) noexcept {
    const std::size_t bits = (heap_size + spead_cell - 1) / spead_cell + 1;
    return (bits + 63) / 64;
}

spead_reject parse_spead(const std::uint8_t *data, std::size_t size, const spead_format &f,
                         std::size_t heap_size, spead_packet &out) noexcept {
    if (data == nullptr) return spead_reject::frame;
    if (size < 8 || size > f.max_packet) return spead_reject::size;
    if (data[0] != 0x53 || data[1] != 4) return spead_reject::magic;
    const unsigned abits = f.heap_address_bits;
    if (data[3] * 8u != abits || data[2] + data[3] != 8) return spead_reject::flavour;
    const std::size_t n = (std::size_t{data[6]} << 8) | data[7];
    if (n > (size - 8) / 8) return spead_reject::items;
    const std::uint64_t value_mask = (std::uint64_t{1} << abits) - 1;
    const std::uint64_t id_mask = (std::uint64_t{1} << (63 - abits)) - 1;
    std::uint64_t special[5] = {};
    bool have[5] = {};
    bool have_index = false;
    std::uint64_t index_value = 0;
    out.items.fill(spead_item_absent);
    const std::uint8_t *p = data + 8;
    for (std::size_t i = 0; i < n; i++, p += 8) {
        const std::uint64_t ptr = load_be64(p);
        if ((ptr >> 63) == 0) continue;  // addressed items are the heap's own business
        const std::uint64_t id = (ptr >> abits) & id_mask;
        const std::uint64_t v = ptr & value_mask;
        if (id >= spead_heap_cnt_id && id <= spead_payload_length_id) {
            special[id] = v;
            have[id] = true;
        }
        if (id == f.index_item) {
            index_value = v;
            have_index = true;
        }
        for (std::size_t k = 0; k < f.n_items; k++)
            if (id == f.items[k]) out.items[k] = v;
    }
    if (!have[spead_heap_cnt_id] || !have[spead_heap_size_id] || !have[spead_heap_offset_id] ||
        !have[spead_payload_length_id])
        return spead_reject::missing;
    const std::size_t header = 8 + 8 * n;
    const std::uint64_t length = special[spead_payload_length_id];
    if (length > size - header) return spead_reject::payload;
    if (special[spead_heap_size_id] != heap_size) return spead_reject::heap_size;
    const std::uint64_t offset = special[spead_heap_offset_id];
    if (offset > heap_size || length > heap_size - offset) return spead_reject::offset;
    if (!have_index || index_value % f.index_step != 0) return spead_reject::index;
    if (length > 0 && length < spead_cell && offset + length != heap_size &&
        (offset + spead_cell - 1) / spead_cell == (offset + length + spead_cell - 1) / spead_cell)
        return spead_reject::unaligned;
    out.heap_cnt = special[spead_heap_cnt_id];
    out.offset = offset;
    out.length = length;
    out.index = index_value / f.index_step;
    out.payload = data + header;
    return spead_reject::none;
}

namespace {

void store_items(chunk &c, std::size_t slot, const spead_packet &p, std::size_t ppc,
                 std::size_t n_items) noexcept {
    for (std::size_t k = 0; k < n_items; k++)
        if (p.items[k] != spead_item_absent)
            __atomic_store_n(&c.items[k * ppc + slot], p.items[k], __ATOMIC_RELAXED);
}

// Bitmap words a run scans for set cells at a time (8 KiB of heap): a run through a
// 64-KiB heap scans eight times, and heaps whose packets come out of order (a run per
// packet) scan little each.
constexpr std::size_t run_scan_words = 16;

// A scan of a heap's bitmap from cell `from` for a set cell, over at most
// run_scan_words words: the first set cell (`found`), or where the scan stopped with none
// before it. Cells past `bound` (the bitmap's end) do not exist: found at `bound`.
struct cell_scan {
    std::size_t at;
    bool found;
};

cell_scan scan_cells(const std::uint64_t *words, std::size_t from, std::size_t bound) noexcept {
    if (from >= bound) return {bound, true};
    std::size_t w = from / 64;
    const std::size_t stop = std::min(bound, (w + run_scan_words) * 64);
    std::uint64_t bits =
        __atomic_load_n(&words[w], __ATOMIC_RELAXED) & (~std::uint64_t{0} << (from % 64));
    for (;;) {
        if (bits != 0) return {w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)), true};
        if (++w * 64 >= stop) return {stop, stop == bound};
        bits = __atomic_load_n(&words[w], __ATOMIC_RELAXED);
    }
}

bool run_eligible(const spead_packet &p, std::size_t heap_size) noexcept {
    const std::uint64_t stop = p.offset + p.length;
    return p.offset % spead_cell == 0 && (stop % spead_cell == 0 || stop == heap_size);
}

}  // namespace

bool spead_run_continue(spead_run &run, const spead_packet &p, std::size_t heap_size,
                        std::size_t ppc, std::size_t n_items) noexcept {
    if (run.c == nullptr || p.index != run.index || p.offset != run.end || p.length == 0 ||
        !run_eligible(p, heap_size))
        return false;
    const cell_range r = cells_of(p.offset, p.length, heap_size);
    if (r.end > run.limit) {
        // Scanned only so far: look further before giving up.
        const std::uint64_t *words = run.c->cells + run.slot * spead_format::cell_words(heap_size);
        const std::size_t bound = spead_format::cell_words(heap_size) * 64;
        while (r.end > run.limit && !run.limit_set) {
            const cell_scan next = scan_cells(words, run.limit, bound);
            run.limit = next.at;
            run.limit_set = next.found;
        }
        if (r.end > run.limit) return false;
    }
    copy_into_chunk(run.c->data + run.slot * heap_size + p.offset, p.payload, p.length);
    store_items(*run.c, run.slot, p, ppc, n_items);
    run.end = p.offset + p.length;
    return true;
}

void spead_run_end(spead_run &run, std::size_t heap_size) noexcept {
    if (run.c == nullptr) return;
    chunk &c = *run.c;
    const cell_range r = cells_of(run.start, run.end - run.start, heap_size);
    std::uint64_t *words = c.cells + run.slot * spead_format::cell_words(heap_size);
    for (std::size_t w = r.first / 64; w <= (r.end - 1) / 64; w++)
        or_fetch_old(words[w], word_mask(w, r), false);
    const std::uint64_t added = cover(c, run.slot, run.start, run.end, heap_size, false, words);
    if (added != 0 && add_fetch_new(c.heap_bytes[run.slot], added, false) == heap_size)
        __atomic_store_n(&c.present[run.slot], std::uint8_t{1}, __ATOMIC_RELAXED);
    run.c = nullptr;
}

heap_deposit deposit_heap_packet(chunk &c, std::size_t slot, const spead_packet &p,
                                 std::size_t heap_size, std::size_t ppc, std::size_t n_items,
                                 bool shared, spead_run *run) noexcept {
    std::uint8_t *heap = c.data + slot * heap_size;
    std::uint64_t *bytes = c.heap_bytes + slot;
    bool complete = false;
    if (p.length == heap_size) {
        // The whole heap in one packet: its byte count goes from 0 to full at once, and
        // only for the first copy of it.
        if (!set_if_zero(*bytes, heap_size, shared)) return heap_deposit::duplicate;
        copy_payload(heap, p.payload, heap_size);
        complete = true;
    } else if (p.length > 0) {
        if (__atomic_load_n(bytes, __ATOMIC_RELAXED) >= heap_size) return heap_deposit::duplicate;
        const cell_range r = cells_of(p.offset, p.length, heap_size);
        std::uint64_t *words = c.cells + slot * spead_format::cell_words(heap_size);
        const std::size_t w0 = r.first / 64, w1 = (r.end - 1) / 64;
        // Any cell already received: a repeat of this packet, or one overlapping it.
        for (std::size_t w = w0; w <= w1; w++)
            if (__atomic_load_n(&words[w], __ATOMIC_RELAXED) & word_mask(w, r))
                return heap_deposit::duplicate;
        if (run != nullptr && !shared && run_eligible(p, heap_size)) {
            // The heap's state waits for the run's end (its cells are free: checked above).
            const std::size_t bound = spead_format::cell_words(heap_size) * 64;
            const cell_scan free = scan_cells(words, r.end, bound);
            *run = spead_run{&c, slot, p.index, p.offset, p.offset + p.length, free.at, free.found};
            copy_into_chunk(heap + p.offset, p.payload, p.length);
            store_items(c, slot, p, ppc, n_items);
            return heap_deposit::placed;
        }
        // The first word decides between two queues placing copies of the same packet.
        const std::uint64_t m0 = word_mask(w0, r);
        if (or_fetch_old(words[w0], m0, shared) & m0) return heap_deposit::duplicate;
        for (std::size_t w = w0 + 1; w <= w1; w++) {
            // A whole word ends all ones whatever else sets bits in it: a plain store.
            const std::uint64_t m = word_mask(w, r);
            if (m == ~std::uint64_t{0})
                __atomic_store_n(&words[w], m, __ATOMIC_RELAXED);
            else
                or_fetch_old(words[w], m, shared);
        }
        const std::uint64_t added =
            cover(c, slot, p.offset, p.offset + p.length, heap_size, shared, words);
        complete = added != 0 && add_fetch_new(*bytes, added, shared) == heap_size;
        // The copy last: a locked instruction after its streaming stores would wait for
        // them to drain.
        copy_into_chunk(heap + p.offset, p.payload, p.length);
    }
    // A packet without payload still carries items.
    store_items(c, slot, p, ppc, n_items);
    if (complete) __atomic_store_n(&c.present[slot], std::uint8_t{1}, __ATOMIC_RELAXED);
    return heap_deposit::placed;
}

std::size_t count_partial_heaps(const chunk &c, std::size_t ppc) noexcept {
    std::size_t n = 0;
    for (std::size_t s = 0; s < ppc; s++) n += c.present[s] == 0 && c.heap_bytes[s] != 0 ? 1 : 0;
    return n;
}

}  // namespace casper400g_rx
