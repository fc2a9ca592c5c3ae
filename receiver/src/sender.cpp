#include "casper400g_rx/sender.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <thread>

#include "casper400g_rx/errors.h"
#include "casper400g_rx/example_stream.h"
#include "casper400g_rx/udp_source.h"

namespace casper400g_rx {

namespace {

constexpr std::size_t send_batch = 32;
// The largest UDP datagram the kernel accepts in one GSO send: 64 KiB minus the IPv4
// and UDP headers.
constexpr std::size_t gso_max_bytes = 65535 - 20 - 8;
constexpr std::size_t gso_max_segments = 64;  // the kernel's UDP_MAX_SEGMENTS

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

}  // namespace

sender::sender(const send_config &cfg) : cfg_(cfg) {
    if (cfg_.payload_size < 8 || cfg_.payload_size % 8 != 0 || cfg_.payload_size > 65504)
        throw std::invalid_argument("payload size must be a multiple of 8 in 8..65504, got " +
                                    std::to_string(cfg_.payload_size));
    if (cfg_.streams == 0) throw std::invalid_argument("streams must be > 0, got 0");
    if (cfg_.rate_gbps < 0) throw std::invalid_argument("rate must be >= 0 Gb/s");
    if (cfg_.port == 0) throw std::invalid_argument("destination port must be 1..65535, got 0");
    const sockaddr_in addr = make_ipv4_address(cfg_.host, cfg_.port);
    if (!cfg_.allow_remote && (ntohl(addr.sin_addr.s_addr) >> 24) != 127)
        throw std::invalid_argument("refusing to send to '" + cfg_.host +
                                    "': not a loopback address (allow_remote is off)");
    if (cfg_.prefix_seq_width > 8 ||
        (cfg_.prefix_seq_width && cfg_.prefix_seq_offset + cfg_.prefix_seq_width > cfg_.prefix.size()))
        throw std::invalid_argument("sequence field (offset " +
                                    std::to_string(cfg_.prefix_seq_offset) + ", width " +
                                    std::to_string(cfg_.prefix_seq_width) +
                                    ") does not fit in the " + std::to_string(cfg_.prefix.size()) +
                                    "-byte prefix");
    if (cfg_.prefix.size() + cfg_.payload_size > 65507)
        throw std::invalid_argument("prefix + payload exceed the largest UDP/IPv4 payload (65507)");
    if (cfg_.gso_segments > 1) {
        if (cfg_.gso_segments > gso_max_segments || cfg_.gso_segments > send_batch)
            throw std::invalid_argument("gso_segments must be at most " +
                                        std::to_string(std::min(gso_max_segments, send_batch)) +
                                        ", got " + std::to_string(cfg_.gso_segments));
        if (cfg_.gso_segments * packet_size() > gso_max_bytes)
            throw std::invalid_argument(
                "gso_segments " + std::to_string(cfg_.gso_segments) + " x " +
                std::to_string(packet_size()) + "-byte datagrams exceed the " +
                std::to_string(gso_max_bytes) + " bytes one UDP GSO send may carry");
    }
    total_ = cfg_.schedule.empty() ? cfg_.count : cfg_.schedule.size();
    for (std::size_t i = 0; i < cfg_.streams; i++) {
        unique_fd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        if (!fd) throw_errno("cannot create UDP socket");
        const int sndbuf = 4 << 20;
        setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
        // Unconnected on purpose: a connected socket would fail with ECONNREFUSED
        // whenever an earlier datagram found no listener.
        sockets_.push_back(std::move(fd));
    }
    buffers_.resize(send_batch * packet_size());
    for (std::size_t j = 0; j < send_batch; j++)
        std::copy(cfg_.prefix.begin(), cfg_.prefix.end(), buffers_.begin() + j * packet_size());
}

double sender::elapsed() const noexcept {
    if (!started_) return 0.0;
    const auto end = sent_ == total_ ? t_end_ : std::chrono::steady_clock::now();
    return std::chrono::duration<double>(end - t_start_).count();
}

void sender::start_at(std::chrono::steady_clock::time_point epoch) {
    if (started_) throw std::logic_error("start_at after the sender started");
    started_ = true;
    t0_ = epoch;
    t_start_ = epoch;
}

void send_in_step(const std::vector<sender *> &senders, const std::vector<int> &cpus) {
    if (!cpus.empty() && cpus.size() != senders.size())
        throw std::invalid_argument("cpus lists " + std::to_string(cpus.size()) + " CPUs for " +
                                    std::to_string(senders.size()) + " senders");
    for (const int cpu : cpus)
        if (cpu < 0 || cpu >= CPU_SETSIZE)
            throw std::invalid_argument("CPU " + std::to_string(cpu) + " is outside 0.." +
                                        std::to_string(CPU_SETSIZE - 1));
    // Far enough ahead that every thread is running (and pinned) before it.
    const auto epoch = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    for (sender *s : senders) s->start_at(epoch);
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(senders.size());
    for (std::size_t i = 0; i < senders.size(); i++) {
        threads.emplace_back([&, i] {
            try {
                if (!cpus.empty()) {
                    cpu_set_t set;
                    CPU_ZERO(&set);
                    CPU_SET(cpus[i], &set);
                    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
                }
                while (!senders[i]->send_for(std::chrono::hours(24))) {
                }
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    }
    for (auto &t : threads) t.join();
    for (auto &e : errors)
        if (e) std::rethrow_exception(e);
}

bool sender::send_for(std::chrono::nanoseconds budget) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + budget;
    if (!started_) {
        started_ = true;
        t0_ = clock::now();
        t_start_ = t0_;
    }
    const sockaddr_in addr = make_ipv4_address(cfg_.host, cfg_.port);
    mmsghdr msgs[send_batch];
    iovec iov[send_batch];
    alignas(cmsghdr) char control[send_batch][CMSG_SPACE(sizeof(std::uint16_t))];
    const bool gso = cfg_.gso_segments > 1;
    const std::size_t packet = packet_size();
    const std::size_t prefix = cfg_.prefix.size();
    const double ns_per_packet =
        cfg_.rate_gbps > 0 ? cfg_.payload_size * 8.0 / cfg_.rate_gbps : 0.0;
    // After a stall (the thread was descheduled) the sender catches up by at most this
    // much: a longer burst at full speed is not the stream a rate-limited source sends.
    const auto max_lag = std::chrono::nanoseconds(
        static_cast<std::int64_t>(ns_per_packet * 2 * send_batch));
    while (sent_ < total_) {
        if (ns_per_packet > 0) {
            auto due = t0_ + std::chrono::nanoseconds(
                                 static_cast<std::int64_t>(ns_per_packet * sent_));
            const auto now = clock::now();
            if (now - due > max_lag_) max_lag_ = now - due;
            if (!cfg_.catch_up && now - due > max_lag) {
                t0_ += (now - due) - max_lag;
                due = now - max_lag;
            }
            if (due > deadline) {
                std::this_thread::sleep_until(deadline);
                return false;
            }
            std::this_thread::sleep_until(due);
        }
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(send_batch, total_ - sent_));
        std::size_t n_msgs = 0;
        for (std::size_t j = 0; j < n;) {
            // A run of consecutive sequence numbers that ends at a multiple of
            // gso_segments goes as one GSO send; otherwise one datagram per message.
            std::size_t run = 0;
            for (;;) {
                std::uint8_t *p = buffers_.data() + (j + run) * packet;
                const std::uint64_t seq = seq_at(sent_ + j + run);
                for (unsigned b = 0; b < cfg_.prefix_seq_width; b++)
                    p[cfg_.prefix_seq_offset + b] = static_cast<std::uint8_t>(
                        seq >> (8 * (cfg_.prefix_seq_width - 1 - b)));
                fill_example_payload(p + prefix, cfg_.payload_size, seq);
                run++;
                if (!gso || j + run == n || (seq + 1) % cfg_.gso_segments == 0 ||
                    seq_at(sent_ + j + run) != seq + 1)
                    break;
            }
            mmsghdr &m = msgs[n_msgs];
            iov[n_msgs] = {buffers_.data() + j * packet, run * packet};
            m = {};
            m.msg_hdr.msg_name = const_cast<sockaddr_in *>(&addr);
            m.msg_hdr.msg_namelen = sizeof(addr);
            m.msg_hdr.msg_iov = &iov[n_msgs];
            m.msg_hdr.msg_iovlen = 1;
            if (run > 1) {
                m.msg_hdr.msg_control = control[n_msgs];
                m.msg_hdr.msg_controllen = CMSG_SPACE(sizeof(std::uint16_t));
                cmsghdr *c = CMSG_FIRSTHDR(&m.msg_hdr);
                c->cmsg_level = SOL_UDP;
                c->cmsg_type = UDP_SEGMENT;
                c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
                const auto seg = static_cast<std::uint16_t>(packet);
                std::memcpy(CMSG_DATA(c), &seg, sizeof(seg));
            }
            n_msgs++;
            j += run;
        }
        const int fd = sockets_[batches_ % sockets_.size()].get();
        std::size_t done = 0;
        while (done < n_msgs) {
            const int rc = sendmmsg(fd, msgs + done, static_cast<unsigned>(n_msgs - done), 0);
            if (rc < 0) {
                if (errno == EINTR) continue;
                if (errno == ENOBUFS || errno == EAGAIN) {
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
                    continue;
                }
                if (gso && (errno == EINVAL || errno == ENOPROTOOPT || errno == EIO))
                    throw_errno("sendmmsg with UDP GSO (UDP_SEGMENT, " +
                                std::to_string(cfg_.gso_segments) + " segments) to " +
                                cfg_.host + ":" + std::to_string(cfg_.port) +
                                "; the kernel may lack UDP GSO (Linux >= 4.18), "
                                "send with gso_segments=0");
                throw_errno("sendmmsg to " + cfg_.host + ":" + std::to_string(cfg_.port));
            }
            done += static_cast<std::size_t>(rc);
        }
        sent_ += n;
        batches_++;
        if (clock::now() >= deadline && sent_ < total_) return false;
    }
    t_end_ = clock::now();
    return true;
}

}  // namespace casper400g_rx
