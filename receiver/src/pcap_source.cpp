#include "casper400g_rx/pcap_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/errors.h"

namespace casper400g_rx {

namespace {

constexpr std::size_t global_header = 24;
constexpr std::size_t record_header = 16;
// Bytes read per pread: many records per system call.
constexpr std::size_t read_block = std::size_t{4} << 20;
static_assert(read_block >= pcap_max_record + record_header,
              "a whole record must fit the read buffer");

std::uint32_t load32(const std::uint8_t *p, bool swapped) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return swapped ? __builtin_bswap32(v) : v;
}

}  // namespace

pcap_source::pcap_source(const std::string &path, std::uint16_t udp_port)
    : path_(path), fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)), udp_port_(udp_port) {
    if (!fd_) throw_errno("cannot open '" + path + "'");
    struct stat st {};
    if (fstat(fd_.get(), &st) != 0) throw_errno("cannot stat '" + path + "'");
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ < global_header)
        throw std::invalid_argument("'" + path + "' is too short to be a pcap file");
    buf_.resize(read_block);
    const std::uint8_t *hdr = bytes_at(0, global_header);
    std::uint32_t magic;
    std::memcpy(&magic, hdr, 4);
    if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du) {
        swapped_ = false;
    } else if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u) {
        swapped_ = true;
    } else if (magic == 0x0a0d0d0au) {
        throw std::invalid_argument("'" + path +
                                    "' is pcapng; convert it with `editcap -F pcap` first");
    } else {
        char hex[16];
        std::snprintf(hex, sizeof(hex), "0x%08x", magic);
        throw std::invalid_argument("'" + path + "' is not a pcap file (magic " + hex + ")");
    }
    const std::uint32_t lt = load32(hdr + 20, swapped_) & 0xffffu;
    const auto known = to_linktype(lt);
    if (!known)
        throw std::invalid_argument("'" + path + "' has link type " + std::to_string(lt) +
                                    "; supported: 1 (Ethernet), 101/228 (raw IPv4), "
                                    "113/276 (Linux cooked)");
    lt_ = *known;
}

const std::uint8_t *pcap_source::bytes_at(std::size_t off, std::size_t n) {
    if (off >= buf_off_ && off - buf_off_ + n <= buf_len_) return buf_.data() + (off - buf_off_);
    const std::size_t want = std::min(buf_.size(), size_ - off);
    std::size_t got = 0;
    while (got < want) {
        const ssize_t r = pread(fd_.get(), buf_.data() + got, want - got,
                                static_cast<off_t>(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            throw_errno("cannot read '" + path_ + "' at offset " + std::to_string(off + got));
        }
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
    }
    buf_off_ = off;
    buf_len_ = got;
    if (got < n)
        throw std::runtime_error("'" + path_ + "' was truncated while being replayed: it ends at " +
                                 "offset " + std::to_string(off + got) + ", inside the record " +
                                 "bytes " + std::to_string(off) + ".." + std::to_string(off + n) +
                                 " (it had " + std::to_string(size_) + " bytes when opened)");
    return buf_.data();
}

void pcap_source::run(std::size_t, engine &eng, const std::atomic<bool> &stop) {
    packet_ref batch[batch_size];
    std::size_t n = 0;
    auto flush = [&] {
        if (n) eng.add_batch(batch, n);
        n = 0;
    };
    std::size_t off = global_header;
    while (off < size_ && !stop.load(std::memory_order_relaxed)) {
        bool ok = false;
        packet_ref pkt{};
        if (size_ - off < record_header) {
            off = size_;  // a torn record header ends the file
        } else {
            // The batch points into the buffer: it goes to the engine before a read
            // replaces what the buffer holds.
            if (off < buf_off_ || off - buf_off_ + record_header > buf_len_) flush();
            const std::uint8_t *rec = bytes_at(off, record_header);
            const std::uint32_t incl = load32(rec + 8, swapped_);
            const std::uint32_t orig = load32(rec + 12, swapped_);
            off += record_header;
            if (incl > size_ - off) {
                off = size_;  // a torn record ends the file
            } else if (incl > pcap_max_record) {
                off += incl;  // longer than any datagram of the stream: skipped unread
            } else {
                if (off - buf_off_ + incl > buf_len_) flush();
                const std::uint8_t *frame = bytes_at(off, incl);
                // A frame cut short by the capture's snap length is not a whole packet.
                if (incl == orig) {
                    if (auto p = parse_frame(frame, incl, lt_, udp_port_)) {
                        pkt = *p;
                        ok = true;
                    }
                }
                off += incl;
            }
        }
        // Unusable records still reach the engine (as empty packets) to be counted `rejected`.
        batch[n++] = ok ? pkt : packet_ref{};
        if (n == batch_size) flush();
    }
    flush();
}

}  // namespace casper400g_rx
