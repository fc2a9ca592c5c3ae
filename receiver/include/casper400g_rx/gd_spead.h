// The GPUDirect parse kernel's reading of one frame, compiled for both sides: the kernel
// (cuda_kernels.cu) runs it on every frame of the arrival ring, and the host runs the
// same code in tests against the CPU engine's parse_frame() and parse_spead(), and the
// header-data split's slot rule (split_layout::for_spead, part_of). Plain C++ without
// the standard library's runtime, so that nvcc compiles it as device code.
//
// SPEAD formats place a heap per chunk slot, as the copying engine does, and each packet
// at its heap offset inside it. A packet is accepted only where the split layout puts a
// packet of the heap (spead2's sender and the example design cut heaps there): its
// (offset, length) names packet k of the heap, and the kernels keep one duplicate bit per
// packet of a heap (`packet slot` heap_slot * parts + k) where the copying engine keeps
// one per 8-byte cell. Packets off that cut are rejected `grid`, as the split does.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CASPER400G_GD_HD __host__ __device__
#else
#define CASPER400G_GD_HD
#endif

namespace casper400g_rx::gd {

// Why a frame is not placed: the numbering of spead_reject (spead.h; the host code
// checks it), 0 = accepted.
enum spead_reason : std::uint32_t {
    sr_none = 0,
    sr_frame,
    sr_size,
    sr_magic,
    sr_flavour,
    sr_items,
    sr_missing,
    sr_payload,
    sr_heap_size,
    sr_offset,
    sr_index,
    sr_unaligned,
    sr_grid,
    sr_count
};
inline constexpr std::uint32_t n_spead_reasons = sr_count - 1;
inline constexpr unsigned spead_items_max = 8;  // spead_max_items
inline constexpr std::uint64_t spead_absent = ~std::uint64_t{0};

// A SPEAD format as the kernels read it: spead_format's fields and split_layout's cut,
// set on the host (one home each: spead.h, hds_spead.cpp).
struct spead_desc {
    std::uint32_t enabled;    // 0: a fixed-size format
    std::uint32_t abits;      // heap address bits: 40 or 48
    std::uint64_t index_item, index_step;
    std::uint64_t items[spead_items_max];
    std::uint32_t n_items, max_packet;
    std::uint64_t heap;                    // heap bytes (the format's payload_size)
    std::uint64_t first_part, later_part;  // heap bytes of a heap's first / later packets
    std::uint32_t parts;                   // packets per heap
    std::uint32_t heaps;                   // heaps per chunk (packets_per_chunk)
};

// One accepted SPEAD packet.
struct spead_fields {
    std::uint64_t offset, length, index;  // heap offset, payload length, index / step
    std::uint32_t header;                 // SPEAD header bytes: the payload starts there
    std::uint32_t part;                   // the packet of its heap (split_layout::part_of)
    std::uint64_t items[spead_items_max];  // spead_absent when not carried
};

CASPER400G_GD_HD inline std::uint32_t gd_be16(const std::uint8_t *p) {
    return (std::uint32_t(p[0]) << 8) | p[1];
}

CASPER400G_GD_HD inline std::uint64_t gd_be64(const std::uint8_t *p) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

// Mirrors parse_frame() for Ethernet (format.cpp): the UDP payload's offset and length,
// false when the frame is not an unfragmented IPv4/UDP datagram to `udp_port` (0: any).
// Reads only [f, f + len).
CASPER400G_GD_HD inline bool frame_udp_payload(const std::uint8_t *f, std::uint32_t len,
                                               std::uint32_t udp_port, std::uint32_t &poff,
                                               std::uint32_t &plen) {
    if (len < 14) return false;
    std::uint32_t proto = gd_be16(f + 12);
    std::uint32_t off = 14;
    for (int tags = 0; tags < 2 && (proto == 0x8100 || proto == 0x88a8); tags++) {
        if (len < off + 4) return false;
        proto = gd_be16(f + off + 2);
        off += 4;
    }
    if (proto != 0x0800) return false;
    const std::uint8_t *ip = f + off;
    const std::uint32_t avail = len - off;
    if (avail < 20 || (ip[0] >> 4) != 4) return false;
    const std::uint32_t ihl = std::uint32_t(ip[0] & 0x0f) * 4;
    const std::uint32_t total = gd_be16(ip + 2);
    if (ihl < 20 || total < ihl + 8 || total > avail) return false;
    if (ip[9] != 17) return false;
    if ((gd_be16(ip + 6) & 0x3fff) != 0) return false;
    const std::uint8_t *udp = ip + ihl;
    const std::uint32_t udp_len = gd_be16(udp + 4);
    if (udp_len < 8 || udp_len > total - ihl) return false;
    if (udp_port != 0 && gd_be16(udp + 2) != udp_port) return false;
    poff = off + ihl + 8;
    plen = udp_len - 8;
    return true;
}

// split_layout::part_offset / part_len / part_of (hds.h, hds_spead.cpp) on the desc.
CASPER400G_GD_HD inline std::uint64_t spead_part_offset(const spead_desc &d, std::uint32_t k) {
    return k == 0 ? 0 : d.first_part + std::uint64_t(k - 1) * d.later_part;
}

CASPER400G_GD_HD inline std::uint64_t spead_part_len(const spead_desc &d, std::uint32_t k) {
    const std::uint64_t o = spead_part_offset(d, k);
    const std::uint64_t n = k == 0 ? d.first_part : d.later_part;
    return d.heap - o < n ? d.heap - o : n;
}

CASPER400G_GD_HD inline std::uint32_t spead_part_of(const spead_desc &d, std::uint64_t offset,
                                                    std::uint64_t length) {
    std::uint32_t k = 0;
    if (offset != 0) {
        if (offset < d.first_part || (offset - d.first_part) % d.later_part != 0) return d.parts;
        const std::uint64_t after = (offset - d.first_part) / d.later_part;
        if (after >= std::uint64_t(d.parts) - 1) return d.parts;
        k = std::uint32_t(after) + 1;
    }
    return length == spead_part_len(d, k) ? k : d.parts;
}

// Mirrors parse_spead() (spead.cpp) check for check, reason for reason, then the split's
// grid check. `data` is the UDP payload of `size` bytes; reads only [data, data + size).
CASPER400G_GD_HD inline std::uint32_t decode_spead(const std::uint8_t *data, std::uint64_t size,
                                                   const spead_desc &d, spead_fields &out) {
    if (data == nullptr) return sr_frame;
    if (size < 8 || size > d.max_packet) return sr_size;
    if (data[0] != 0x53 || data[1] != 4) return sr_magic;
    const std::uint32_t abits = d.abits;
    if (data[3] * 8u != abits || data[2] + data[3] != 8) return sr_flavour;
    const std::uint64_t n = gd_be16(data + 6);
    if (n > (size - 8) / 8) return sr_items;
    const std::uint64_t value_mask = (std::uint64_t{1} << abits) - 1;
    const std::uint64_t id_mask = (std::uint64_t{1} << (63 - abits)) - 1;
    std::uint64_t special[5] = {0, 0, 0, 0, 0};
    bool have[5] = {false, false, false, false, false};
    bool have_index = false;
    std::uint64_t index_value = 0;
    for (unsigned k = 0; k < spead_items_max; k++) out.items[k] = spead_absent;
    // Bounded by the packet: n pointers of 8 bytes lie inside it (checked above).
    for (std::uint64_t i = 0; i < n; i++) {
        const std::uint64_t ptr = gd_be64(data + 8 + 8 * i);
        if ((ptr >> 63) == 0) continue;
        const std::uint64_t id = (ptr >> abits) & id_mask;
        const std::uint64_t v = ptr & value_mask;
        if (id >= 1 && id <= 4) {
            special[id] = v;
            have[id] = true;
        }
        if (id == d.index_item) {
            index_value = v;
            have_index = true;
        }
        for (unsigned k = 0; k < d.n_items && k < spead_items_max; k++)
            if (id == d.items[k]) out.items[k] = v;
    }
    if (!have[1] || !have[2] || !have[3] || !have[4]) return sr_missing;
    const std::uint64_t header = 8 + 8 * n;
    const std::uint64_t length = special[4];
    if (length > size - header) return sr_payload;
    if (special[2] != d.heap) return sr_heap_size;
    const std::uint64_t offset = special[3];
    if (offset > d.heap || length > d.heap - offset) return sr_offset;
    if (!have_index || index_value % d.index_step != 0) return sr_index;
    if (length > 0 && length < 8 && offset + length != d.heap &&
        (offset + 7) / 8 == (offset + length + 7) / 8)
        return sr_unaligned;
    const std::uint32_t part = spead_part_of(d, offset, length);
    if (part == d.parts) return sr_grid;
    out.offset = offset;
    out.length = length;
    out.index = index_value / d.index_step;
    out.header = std::uint32_t(header);
    out.part = part;
    return sr_none;
}

// Where an accepted packet goes: chunk index / heaps, packet slot (index % heaps) * parts
// + part -- the split's sequence number index * parts + part cut into chunks of
// heaps * parts packets, without its product (which could overflow).
CASPER400G_GD_HD inline void spead_slot(const spead_desc &d, const spead_fields &s,
                                        std::uint64_t &chunk, std::uint32_t &slot) {
    chunk = s.index / d.heaps;
    slot = std::uint32_t(s.index % d.heaps) * d.parts + s.part;
}

// A whole frame of a SPEAD format: its reason (sr_none: accepted, with chunk, packet slot,
// the frame offset of its heap bytes and its fields in `s`).
CASPER400G_GD_HD inline std::uint32_t parse_spead_frame(const std::uint8_t *f, std::uint32_t len,
                                                        std::uint32_t udp_port,
                                                        const spead_desc &d, spead_fields &s,
                                                        std::uint64_t &chunk, std::uint32_t &slot,
                                                        std::uint32_t &data_off) {
    std::uint32_t poff = 0, plen = 0;
    if (!frame_udp_payload(f, len, udp_port, poff, plen)) return sr_frame;
    const std::uint32_t why = decode_spead(f + poff, plen, d, s);
    if (why != sr_none) return why;
    spead_slot(d, s, chunk, slot);
    data_off = poff + s.header;
    return sr_none;
}

}  // namespace casper400g_rx::gd
