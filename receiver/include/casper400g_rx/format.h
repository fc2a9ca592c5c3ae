// Packet format descriptor: where a packet's sequence number lives and which
// packets are acceptable. The default is the project's example stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "casper400g_rx/spead.h"

namespace casper400g_rx {

// One received packet as the engine sees it: the UDP payload, plus the IPv4
// Identification field when the source saw the IP header (pcap, raw frames).
struct packet_ref {
    const std::uint8_t *payload = nullptr;
    std::size_t size = 0;
    std::int32_t ip_id = -1;  // -1: not known (UDP sockets do not expose it)
};

enum class seq_source { payload, ipv4_id };

// A field inside the UDP payload.
struct field {
    std::size_t offset = 0;
    unsigned width = 8;  // bytes, 1..8
    bool big_endian = true;
};

struct format {
    seq_source source = seq_source::payload;
    field seq{};                      // used when source == payload
    std::size_t payload_size = 8192;  // every accepted packet has exactly this size
    std::optional<field> stream_id;   // when set, packets whose id differs are rejected
    std::uint64_t stream_id_value = 0;
    std::uint16_t udp_port = 0;  // frame sources only: 0 accepts any destination port
    // SPEAD heaps as slots (spead.h): payload_size is then the heap size, packets vary
    // in size up to max_packet, and `source`, `seq` and `stream_id` are not used.
    std::optional<spead_format> spead;

    // The largest UDP payload of the stream (receive buffers, MTU checks).
    std::size_t max_udp_payload() const noexcept { return spead ? spead->max_packet : payload_size; }

    // Throws std::invalid_argument naming the offending value.
    void validate() const;
};

std::uint64_t read_field(const std::uint8_t *payload, const field &f) noexcept;

// Turns packet_refs into sequence numbers. Stateful only for the 16-bit
// IPv4 Identification, which is unwrapped against the last value seen.
class decoder {
public:
    explicit decoder(const format &fmt);
    const format &fmt() const noexcept { return fmt_; }
    // nullopt: the packet fails the descriptor's checks (counted `rejected`).
    std::optional<std::uint64_t> decode(const packet_ref &pkt) noexcept {
        std::uint64_t seq;
        if (decode(pkt, seq)) return seq;
        return std::nullopt;
    }
    // The same into `seq`; false: rejected. Per packet on every path, inline for the
    // usual format (the sequence number one big-endian word, no stream id): an optional
    // went through memory, a byte and a word stored and read back as one (a stalled
    // forward, a third of the split path's completion time).
    bool decode(const packet_ref &pkt, std::uint64_t &seq) noexcept {
        if (whole_word_) {
            if (pkt.payload == nullptr || pkt.size != fmt_.payload_size) return false;
            std::uint64_t v;
            std::memcpy(&v, pkt.payload + fmt_.seq.offset, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            seq = __builtin_bswap64(v);
#else
            seq = v;
#endif
            return true;
        }
        const std::optional<std::uint64_t> s = decode_other(pkt);
        if (s) seq = *s;
        return s.has_value();
    }

private:
    std::optional<std::uint64_t> decode_other(const packet_ref &pkt) noexcept;

    format fmt_;
    bool whole_word_ = false;
    bool have_id_ = false;
    std::uint64_t last_id_ = 0;
};

// Link-layer types understood by frame sources (pcap numbering).
enum class linktype : std::uint32_t { ethernet = 1, raw = 101, linux_sll = 113, ipv4 = 228, linux_sll2 = 276 };

// `value` as a linktype when it is one of the above, else nullopt.
constexpr std::optional<linktype> to_linktype(std::uint32_t value) noexcept {
    switch (static_cast<linktype>(value)) {
        case linktype::ethernet:
        case linktype::raw:
        case linktype::linux_sll:
        case linktype::ipv4:
        case linktype::linux_sll2:
            return static_cast<linktype>(value);
    }
    return std::nullopt;
}

// Parses an Ethernet/IPv4/UDP frame (or the other link types) down to its UDP
// payload. Rejects truncated or inconsistent headers, non-UDP, IP fragments and,
// when udp_port != 0, other destination ports. Never reads outside [data, data+size).
std::optional<packet_ref> parse_frame(const std::uint8_t *data, std::size_t size, linktype lt,
                                      std::uint16_t udp_port) noexcept;

}  // namespace casper400g_rx
