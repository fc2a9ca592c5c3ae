#include "casper400g_rx/udp_source.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/errors.h"

namespace casper400g_rx {

namespace {

std::string endpoint(const std::string &host, std::uint16_t port) {
    return host + ":" + std::to_string(port);
}

std::size_t read_rmem_max() {
    std::ifstream f("/proc/sys/net/core/rmem_max");
    std::size_t v = 0;
    f >> v;
    return v;
}

// The kernel reports twice what was set (it reserves room for its bookkeeping).
std::size_t effective_rcvbuf(int fd) {
    int v = 0;
    socklen_t len = sizeof(v);
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len) != 0) throw_errno("getsockopt(SO_RCVBUF)");
    return static_cast<std::size_t>(v) / 2;
}

}  // namespace

std::vector<sock_filter> steer_program(const field &seq, std::size_t block, std::size_t sockets) {
    if (seq.width < 1 || seq.width > 8)
        throw std::invalid_argument("sequence field width must be 1..8, got " +
                                    std::to_string(seq.width));
    if (block == 0 || sockets == 0)
        throw std::invalid_argument("steering needs a block and sockets > 0");
    // The program sees the datagram from the UDP payload on (the kernel skips the UDP
    // header first). Build the field's low 32 bits byte by byte, most significant first:
    // A = (A << 8) | byte, with the scratch word M[0] holding A while a byte is loaded.
    // A packet too short for the field stops the program, which then returns 0.
    const unsigned n = std::min(seq.width, 4u);
    auto at = [&](unsigned significance) {  // offset of the byte of that significance
        return static_cast<std::uint32_t>(seq.big_endian ? seq.offset + seq.width - 1 - significance
                                                         : seq.offset + significance);
    };
    std::vector<sock_filter> prog;
    prog.push_back(BPF_STMT(BPF_LD | BPF_B | BPF_ABS, at(n - 1)));
    for (unsigned s = n - 1; s-- > 0;) {
        prog.push_back(BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 8));
        prog.push_back(BPF_STMT(BPF_ST, 0));
        prog.push_back(BPF_STMT(BPF_LD | BPF_B | BPF_ABS, at(s)));
        prog.push_back(BPF_STMT(BPF_LDX | BPF_W | BPF_MEM, 0));
        prog.push_back(BPF_STMT(BPF_ALU | BPF_OR | BPF_X, 0));
    }
    prog.push_back(BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, static_cast<std::uint32_t>(block)));
    prog.push_back(BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, static_cast<std::uint32_t>(sockets)));
    prog.push_back(BPF_STMT(BPF_RET | BPF_A, 0));
    return prog;
}

sockaddr_in make_ipv4_address(const std::string &host, std::uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    const std::string h = host == "localhost" ? "127.0.0.1" : host.empty() ? "0.0.0.0" : host;
    if (inet_pton(AF_INET, h.c_str(), &addr.sin_addr) != 1)
        throw std::invalid_argument("bad IPv4 address '" + host + "'");
    return addr;
}

udp_source::udp_source(const udp_config &cfg) : cfg_(cfg) {
    if (cfg_.threads == 0) throw std::invalid_argument("threads must be > 0, got 0");
    if (!cfg_.cpus.empty() && cfg_.cpus.size() != cfg_.threads)
        throw std::invalid_argument("cpus lists " + std::to_string(cfg_.cpus.size()) +
                                    " CPUs for " + std::to_string(cfg_.threads) + " threads");
    for (const int cpu : cfg_.cpus)
        if (cpu < 0 || cpu >= CPU_SETSIZE)
            throw std::invalid_argument("CPU " + std::to_string(cpu) + " is outside 0.." +
                                        std::to_string(CPU_SETSIZE - 1));
    if (cfg_.max_payload == 0 || cfg_.max_payload > 65507)
        throw std::invalid_argument("max_payload must be 1..65507, got " +
                                    std::to_string(cfg_.max_payload));
    sockaddr_in addr = make_ipv4_address(cfg_.host, cfg_.port);
    if (!cfg_.src_filter.empty()) {
        in_addr a{};
        if (inet_pton(AF_INET, cfg_.src_filter.c_str(), &a) != 1 || a.s_addr == 0)
            throw std::invalid_argument("src_filter must be the sender's IPv4 address, got '" +
                                        cfg_.src_filter + "'");
        src_addr_ = a.s_addr;
    }
    drops_.reset(new drops[cfg_.threads]);
    filtered_.reset(new std::atomic<std::uint64_t>[cfg_.threads]);
    for (std::size_t i = 0; i < cfg_.threads; i++) filtered_[i].store(0);
    wake_ = unique_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake_) throw_errno("cannot create eventfd");
    for (std::size_t i = 0; i < cfg_.threads; i++) {
        unique_fd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        if (!fd) throw_errno("cannot create UDP socket");
        const int one = 1;
        if (cfg_.threads > 1 &&
            setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
            throw_errno("setsockopt(SO_REUSEPORT)");
        const int want = static_cast<int>(std::min<std::size_t>(cfg_.rcvbuf, INT32_MAX / 2));
        if (setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &want, sizeof(want)) != 0)
            throw_errno("setsockopt(SO_RCVBUF)");
        std::size_t got = effective_rcvbuf(fd.get());
        if (got < static_cast<std::size_t>(want)) {
            // SO_RCVBUFFORCE exceeds rmem_max for CAP_NET_ADMIN; without it, warn.
            if (setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) == 0)
                got = effective_rcvbuf(fd.get());
        }
        if (i == 0 && got < static_cast<std::size_t>(want))
            warnings_.push_back("UDP receive buffer is " + std::to_string(got) + " bytes, not the " +
                                std::to_string(want) + " requested: net.core.rmem_max = " +
                                std::to_string(read_rmem_max()) +
                                " caps it (raise it with `sysctl -w net.core.rmem_max=" +
                                std::to_string(want) + "`)");
        if (i == 0) rcvbuf_ = got;
        if (bind(fd.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)) != 0)
            throw_errno("cannot bind UDP socket to " + endpoint(cfg_.host, ntohs(addr.sin_port)));
        if (i == 0) {
            sockaddr_in bound{};
            socklen_t len = sizeof(bound);
            if (getsockname(fd.get(), reinterpret_cast<sockaddr *>(&bound), &len) != 0)
                throw_errno("getsockname");
            port_ = ntohs(bound.sin_port);
            addr.sin_port = bound.sin_port;  // the other fan-out sockets join this port
        }
        sockets_.push_back(std::move(fd));
    }
    if (cfg_.threads > 1 && cfg_.steer) {
        // One program for the whole socket group: socket i is the i-th that joined.
        std::vector<sock_filter> prog = steer_program(*cfg_.steer, cfg_.steer_block, cfg_.threads);
        sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
        if (setsockopt(sockets_[0].get(), SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fprog,
                       sizeof(fprog)) != 0)
            warnings_.push_back(std::string("cannot steer the SO_REUSEPORT sockets by sequence "
                                            "number (SO_ATTACH_REUSEPORT_CBPF: ") +
                                std::strerror(errno) +
                                "): the kernel spreads flows instead, unevenly for few flows");
    }
}

int udp_source::cpu(std::size_t i) const { return cfg_.cpus.empty() ? -1 : cfg_.cpus[i]; }

void udp_source::interrupt() {
    const std::uint64_t one = 1;
    // The eventfd stays readable, so every thread's poll() returns.
    [[maybe_unused]] ssize_t rc = write(wake_.get(), &one, sizeof(one));
}

std::uint64_t udp_source::read_drops(std::size_t i) const noexcept {
    // The kernel's own per-socket drop counter, readable at any time from any thread. It
    // is 32 bits and wraps (about 2 minutes of 8-KiB datagrams at 400 Gb/s dropped).
    std::uint32_t info[SK_MEMINFO_VARS] = {};
    socklen_t len = sizeof(info);
    drops &d = drops_[i];
    std::lock_guard<std::mutex> lock(d.m);
    if (getsockopt(sockets_[i].get(), SOL_SOCKET, SO_MEMINFO, info, &len) == 0 &&
        len > SK_MEMINFO_DROPS * sizeof(std::uint32_t))
        return d.n.update(info[SK_MEMINFO_DROPS]);
    return d.n.total();
}

std::uint64_t udp_source::kernel_drops() const noexcept {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < sockets_.size(); i++) total += read_drops(i);
    return total;
}

std::uint64_t udp_source::source_filtered() const noexcept {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < sockets_.size(); i++)
        total += filtered_[i].load(std::memory_order_relaxed);
    return total;
}

void udp_source::run(std::size_t i, engine &eng, const std::atomic<bool> &stop) {
    const int fd = sockets_[i].get();
    const std::size_t slot = cfg_.max_payload + 1;  // one spare byte reveals oversized datagrams
    std::vector<std::uint8_t> staging(batch_size * slot);
    mmsghdr msgs[batch_size];
    iovec iov[batch_size];
    sockaddr_in from[batch_size];
    packet_ref batch[batch_size];
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    std::uint64_t batches = 0;
    while (!stop.load(std::memory_order_relaxed)) {
        // The kernel's drop count is read well before it can wrap between two readings.
        if (++batches % 4096 == 0) read_drops(i);
        for (std::size_t j = 0; j < batch_size; j++) {
            iov[j] = {staging.data() + j * slot, slot};
            msgs[j] = {};
            msgs[j].msg_hdr.msg_iov = &iov[j];
            msgs[j].msg_hdr.msg_iovlen = 1;
            if (src_addr_ != 0) {
                msgs[j].msg_hdr.msg_name = &from[j];
                msgs[j].msg_hdr.msg_namelen = sizeof(from[j]);
            }
        }
        const int n = recvmmsg(fd, msgs, batch_size, MSG_DONTWAIT, nullptr);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                throw_errno("recvmmsg on " + endpoint(cfg_.host, port_));
            const int rc = poll(fds, 2, 1000);
            if (rc < 0 && errno != EINTR) throw_errno("poll");
            if (rc > 0 && (fds[1].revents & POLLIN)) return;
            if (rc == 0) read_drops(i);
            continue;
        }
        std::size_t k = 0;
        std::uint64_t foreign = 0;
        for (int j = 0; j < n; j++) {
            if (src_addr_ != 0 && (msgs[j].msg_hdr.msg_namelen < sizeof(sockaddr_in) ||
                                   from[j].sin_addr.s_addr != src_addr_)) {
                foreign++;
                continue;
            }
            const bool truncated = (msgs[j].msg_hdr.msg_flags & MSG_TRUNC) != 0;
            batch[k++] = packet_ref{staging.data() + j * slot, truncated ? 0 : msgs[j].msg_len, -1};
        }
        if (foreign != 0) filtered_[i].fetch_add(foreign, std::memory_order_relaxed);
        if (k != 0) eng.add_batch(i, batch, k);
    }
}

}  // namespace casper400g_rx
