// SPEAD as a packet format: a heap is a slot, its index comes from the heap counter (or
// an immediate item divided by a step), each packet's payload lands at its heap offset
// inside the slot, and named immediate items land in per-slot arrays.
//
// SPEAD-64-40 and SPEAD-64-48 (version 4): an 8-byte header (0x53, 4, item pointer width,
// heap address width, 2 reserved bytes, item count), 8-byte big-endian item pointers
// (bit 63: immediate; then the item id; then the value or heap address), the payload.
// Heaps of several packets assemble in place; a per-slot bitmap of 8-byte cells makes
// a repeated packet a `duplicate`. A heap counts complete only when every byte of it is
// covered by the packets that came (not when their lengths add up: packets may overlap).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace casper400g_rx {

struct chunk;

inline constexpr std::uint64_t spead_heap_cnt_id = 0x1;
inline constexpr std::uint64_t spead_heap_size_id = 0x2;
inline constexpr std::uint64_t spead_heap_offset_id = 0x3;
inline constexpr std::uint64_t spead_payload_length_id = 0x4;
inline constexpr std::size_t spead_max_items = 8;  // named immediate items per format
// Value of a named item in a slot that no packet carrying it has reached.
inline constexpr std::uint64_t spead_item_absent = ~std::uint64_t{0};
// Granularity of the duplicate check inside multi-packet heaps.
inline constexpr std::size_t spead_cell = 8;

// Why a packet is not placed (counted `rejected`, and by reason).
enum class spead_reject : unsigned {
    none = 0,
    frame,      // the frame did not parse to a UDP payload of the stream
    size,       // shorter than the SPEAD header, or longer than max_packet (cut short)
    magic,      // magic (0x53) or version (4) wrong
    flavour,    // item pointer / heap address widths other than the format's
    items,      // item pointers run past the end of the packet
    missing,    // no heap counter, heap size, heap offset or payload length (immediate)
    payload,    // the payload length runs past the end of the packet
    heap_size,  // heap size other than the format's (descriptor or control heaps, too)
    offset,     // heap offset + payload length past the heap size
    index,      // the index item is absent, or not a multiple of index_step
    unaligned,  // under 8 payload bytes, not on an 8-byte boundary, not ending the heap
    grid,       // header-data split only: offset and length not one of the heap's packets
    count_
};
inline constexpr std::size_t n_spead_rejects = static_cast<std::size_t>(spead_reject::count_) - 1;
// Stats key of a reason (not `none`).
const char *spead_reject_name(spead_reject r) noexcept;

struct spead_format {
    unsigned heap_address_bits = 48;      // 48: SPEAD-64-48, 40: SPEAD-64-40
    std::uint64_t index_item = spead_heap_cnt_id;  // its immediate value / index_step = slot index
    std::uint64_t index_step = 1;
    std::array<std::uint64_t, spead_max_items> items{};  // named immediate items
    std::size_t n_items = 0;
    std::size_t max_packet = 9000;  // largest UDP payload accepted

    // Throws std::invalid_argument naming the offending value.
    void validate(std::size_t heap_size) const;
    // Words (uint64) of the per-slot cell bitmap for heaps of `heap_size` bytes: one bit
    // per 8-byte cell, plus one for a final packet too short to start a cell.
    static std::size_t cell_words(std::size_t heap_size) noexcept;
    // Bytes per slot of the cells' edges (one per cell), for packets that start or end
    // inside a cell.
    static std::size_t edge_bytes(std::size_t heap_size) noexcept {
        return (heap_size + spead_cell - 1) / spead_cell;
    }
};

// One SPEAD packet as parse_spead finds it.
struct spead_packet {
    std::uint64_t heap_cnt = 0;
    std::uint64_t offset = 0;  // payload's byte offset in the heap
    std::uint64_t length = 0;  // payload bytes
    std::uint64_t index = 0;   // slot index in the stream
    const std::uint8_t *payload = nullptr;
    std::array<std::uint64_t, spead_max_items> items{};  // spead_item_absent when not carried
};

// Parses and checks one UDP payload against the format (heaps of `heap_size` bytes).
// Never reads outside [data, data + size).
spead_reject parse_spead(const std::uint8_t *data, std::size_t size, const spead_format &f,
                         std::size_t heap_size, spead_packet &out) noexcept;

enum class heap_deposit { placed, duplicate };

// The packets of one heap that a queue of a one-queue capture deposited in order, each
// starting where the one before ended: their bytes are copied, their cells checked free
// up to `limit`, but the heap's cell bitmap, byte count and presence are brought up to
// date only when the run ends (spead_run_end) -- once per run instead of per packet, as
// a heap's packets arrive in order. The engine ends a run before any other packet of its
// queue is placed and before the batch returns, so nothing reads the heap meanwhile.
struct spead_run {
    chunk *c = nullptr;  // none: no run
    std::size_t slot = 0;
    std::uint64_t index = 0;           // the heap's slot index in the stream
    std::uint64_t start = 0, end = 0;  // heap bytes [start, end) copied
    std::size_t limit = 0;             // cells from end's up to it were free
    bool limit_set = false;            // the cell at `limit` is set (else: not scanned yet)
};

// Deposits `p` as the next packet of `run` when it is one (same heap, starting at the
// run's end on a cell boundary, ending on one or at the heap's end, its cells free):
// payload and items; true when done. False leaves everything as it was.
bool spead_run_continue(spead_run &run, const spead_packet &p, std::size_t heap_size,
                        std::size_t ppc, std::size_t n_items) noexcept;
// Enters the run's bytes into the heap's bitmap and byte count (presence when whole);
// no run afterwards.
void spead_run_end(spead_run &run, std::size_t heap_size) noexcept;

// Puts a parsed packet into slot `slot` of chunk `c` (heaps of `heap_size` bytes,
// `ppc` slots): payload at its offset, named items, the heap's covered byte count and,
// once every byte is covered, its `present` flag. Lock-free; several queues may deposit
// into the same chunk (`shared`); with `shared` false only the calling thread writes
// the chunk's per-slot state, and it is updated without locked instructions. A packet
// whose bytes were already received is a duplicate. With `run` (one queue only, no run
// open) a packet of a multi-packet heap that starts and ends on cell boundaries opens a
// run instead of updating the heap's state.
heap_deposit deposit_heap_packet(chunk &c, std::size_t slot, const spead_packet &p,
                                 std::size_t heap_size, std::size_t ppc, std::size_t n_items,
                                 bool shared = true, spead_run *run = nullptr) noexcept;

// Slots of a closed chunk that received some bytes but not the whole heap.
std::size_t count_partial_heaps(const chunk &c, std::size_t ppc) noexcept;

}  // namespace casper400g_rx
