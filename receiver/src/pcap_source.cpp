#include "casper400g_rx/pcap_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/errors.h"
#include "casper400g_rx/fd.h"

namespace casper400g_rx {

namespace {

constexpr std::size_t global_header = 24;
constexpr std::size_t record_header = 16;

std::uint32_t load32(const std::uint8_t *p, bool swapped) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return swapped ? __builtin_bswap32(v) : v;
}

}  // namespace

mapped_file::mapped_file(const std::string &path) {
    unique_fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw_errno("cannot open '" + path + "'");
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) throw_errno("cannot stat '" + path + "'");
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ == 0) return;
    void *p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (p == MAP_FAILED) throw_errno("cannot map '" + path + "'");
    data_ = static_cast<const std::uint8_t *>(p);
}

mapped_file::~mapped_file() {
    if (data_ != nullptr) munmap(const_cast<std::uint8_t *>(data_), size_);
}

pcap_source::pcap_source(const std::string &path, std::uint16_t udp_port)
    : file_(path), udp_port_(udp_port) {
    if (file_.size() < global_header)
        throw std::invalid_argument("'" + path + "' is too short to be a pcap file");
    std::uint32_t magic;
    std::memcpy(&magic, file_.data(), 4);
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
    const std::uint32_t lt = load32(file_.data() + 20, swapped_) & 0xffffu;
    const auto known = to_linktype(lt);
    if (!known)
        throw std::invalid_argument("'" + path + "' has link type " + std::to_string(lt) +
                                    "; supported: 1 (Ethernet), 101/228 (raw IPv4), "
                                    "113/276 (Linux cooked)");
    lt_ = *known;
}

void pcap_source::run(std::size_t, engine &eng, const std::atomic<bool> &stop) {
    const std::uint8_t *const data = file_.data();
    const std::size_t size = file_.size();
    packet_ref batch[batch_size];
    std::size_t n = 0;
    std::size_t off = global_header;
    while (off < size && !stop.load(std::memory_order_relaxed)) {
        bool ok = false;
        packet_ref pkt{};
        if (size - off < record_header) {
            off = size;  // a torn record header ends the file
        } else {
            const std::uint32_t incl = load32(data + off + 8, swapped_);
            const std::uint32_t orig = load32(data + off + 12, swapped_);
            off += record_header;
            if (incl > size - off) {
                off = size;  // a torn record ends the file
            } else {
                // A frame cut short by the capture's snap length is not a whole packet.
                if (incl == orig) {
                    if (auto p = parse_frame(data + off, incl, lt_, udp_port_)) {
                        pkt = *p;
                        ok = true;
                    }
                }
                off += incl;
            }
        }
        // Unusable records still reach the engine (as empty packets) to be counted `rejected`.
        batch[n++] = ok ? pkt : packet_ref{};
        if (n == batch_size) {
            eng.add_batch(batch, n);
            n = 0;
        }
    }
    if (n) eng.add_batch(batch, n);
}

}  // namespace casper400g_rx
