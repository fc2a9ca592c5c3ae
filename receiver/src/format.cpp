#include "casper400g_rx/format.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace casper400g_rx {

namespace {

void check_field(const field &f, std::size_t payload_size, const char *name) {
    if (f.width < 1 || f.width > 8)
        throw std::invalid_argument(std::string(name) + " width must be 1..8 bytes, got " +
                                    std::to_string(f.width));
    if (f.offset + f.width > payload_size)
        throw std::invalid_argument(std::string(name) + " at offset " + std::to_string(f.offset) +
                                    " width " + std::to_string(f.width) +
                                    " does not fit in a payload of " +
                                    std::to_string(payload_size) + " bytes");
}

std::uint16_t load_be16(const std::uint8_t *p) noexcept {
    return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

}  // namespace

void format::validate() const {
    if (spead) {
        spead->validate(payload_size);
        return;
    }
    if (payload_size == 0) throw std::invalid_argument("payload size must be > 0, got 0");
    if (payload_size > 65507)
        throw std::invalid_argument("payload size " + std::to_string(payload_size) +
                                    " exceeds the largest UDP/IPv4 payload (65507)");
    if (source == seq_source::payload) check_field(seq, payload_size, "sequence field");
    if (stream_id) check_field(*stream_id, payload_size, "stream id field");
}

std::uint64_t read_field(const std::uint8_t *payload, const field &f) noexcept {
    const std::uint8_t *p = payload + f.offset;
    std::uint64_t v = 0;
    if (f.width == 8) {  // the usual sequence word: one load (per packet, on every path)
        std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        return f.big_endian ? __builtin_bswap64(v) : v;
#else
        return f.big_endian ? v : __builtin_bswap64(v);
#endif
    }
    if (f.big_endian) {
        for (unsigned i = 0; i < f.width; i++) v = (v << 8) | p[i];
    } else {
        for (unsigned i = f.width; i-- > 0;) v = (v << 8) | p[i];
    }
    return v;
}

decoder::decoder(const format &fmt) : fmt_(fmt) {
    fmt_.validate();
    whole_word_ = !fmt_.spead && fmt_.source == seq_source::payload && !fmt_.stream_id &&
                  fmt_.seq.width == 8 && fmt_.seq.big_endian;
}

std::optional<std::uint64_t> decoder::decode_other(const packet_ref &pkt) noexcept {
    if (fmt_.spead) {
        spead_packet p;
        if (parse_spead(pkt.payload, pkt.size, *fmt_.spead, fmt_.payload_size, p) !=
            spead_reject::none)
            return std::nullopt;
        return p.index;
    }
    if (pkt.payload == nullptr || pkt.size != fmt_.payload_size) return std::nullopt;
    if (fmt_.stream_id && read_field(pkt.payload, *fmt_.stream_id) != fmt_.stream_id_value)
        return std::nullopt;
    if (fmt_.source == seq_source::payload) return read_field(pkt.payload, fmt_.seq);
    if (pkt.ip_id < 0) return std::nullopt;
    const auto id = static_cast<std::uint16_t>(pkt.ip_id);
    if (!have_id_) {
        have_id_ = true;
        last_id_ = id;
        return last_id_;
    }
    // The 16-bit counter moved by the signed distance to the last value seen.
    const auto delta = static_cast<std::int16_t>(static_cast<std::uint16_t>(id - last_id_));
    const std::uint64_t seq = last_id_ + static_cast<std::int64_t>(delta);
    if (delta < 0 && static_cast<std::uint64_t>(-static_cast<std::int64_t>(delta)) > last_id_)
        return std::nullopt;  // before the very first packet: no sequence to give it
    if (seq > last_id_) last_id_ = seq;
    return seq;
}

std::optional<packet_ref> parse_frame(const std::uint8_t *data, std::size_t size, linktype lt,
                                      std::uint16_t udp_port) noexcept {
    if (data == nullptr) return std::nullopt;
    std::size_t off = 0;
    std::uint16_t proto = 0x0800;
    switch (lt) {
        case linktype::ethernet:
            if (size < 14) return std::nullopt;
            proto = load_be16(data + 12);
            off = 14;
            for (int tags = 0; tags < 2 && (proto == 0x8100 || proto == 0x88a8); tags++) {
                if (size < off + 4) return std::nullopt;
                proto = load_be16(data + off + 2);
                off += 4;
            }
            break;
        case linktype::linux_sll:
            if (size < 16) return std::nullopt;
            proto = load_be16(data + 14);
            off = 16;
            break;
        case linktype::linux_sll2:
            if (size < 20) return std::nullopt;
            proto = load_be16(data);
            off = 20;
            break;
        case linktype::raw:
        case linktype::ipv4:
            break;
        default:
            return std::nullopt;
    }
    if (proto != 0x0800) return std::nullopt;
    const std::uint8_t *ip = data + off;
    const std::size_t avail = size - off;
    if (avail < 20 || (ip[0] >> 4) != 4) return std::nullopt;
    const std::size_t ihl = static_cast<std::size_t>(ip[0] & 0x0f) * 4;
    const std::size_t total = load_be16(ip + 2);
    if (ihl < 20 || total < ihl + 8 || total > avail) return std::nullopt;
    if (ip[9] != 17) return std::nullopt;                       // not UDP
    if ((load_be16(ip + 6) & 0x3fff) != 0) return std::nullopt;  // a fragment
    const std::uint8_t *udp = ip + ihl;
    const std::size_t udp_len = load_be16(udp + 4);
    if (udp_len < 8 || udp_len > total - ihl) return std::nullopt;
    if (udp_port != 0 && load_be16(udp + 2) != udp_port) return std::nullopt;
    packet_ref out;
    out.payload = udp + 8;
    out.size = udp_len - 8;
    out.ip_id = load_be16(ip + 4);
    return out;
}

}  // namespace casper400g_rx
