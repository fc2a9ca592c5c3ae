// Receives UDP datagrams with recvmmsg, optionally fanned out over several
// SO_REUSEPORT sockets, one pinned thread each. The sockets share the stream by its
// sequence numbers (a BPF program of the socket group), so one flow spreads evenly.
#pragma once

#include <linux/filter.h>
#include <netinet/in.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "casper400g_rx/fd.h"
#include "casper400g_rx/format.h"
#include "casper400g_rx/source.h"

namespace casper400g_rx {

struct udp_config {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;
    std::size_t threads = 1;
    std::vector<int> cpus;               // one per thread, or empty
    std::size_t rcvbuf = 64 << 20;       // bytes requested per socket
    std::size_t max_payload = 8192;      // larger datagrams are truncated and rejected
    // With several threads: the sequence field by which the sockets share the stream
    // (blocks of `steer_block` consecutive sequence numbers in turn), or none (the
    // kernel's hash of source and destination, which spreads flows, not packets).
    std::optional<field> steer;
    std::size_t steer_block = 64;
    // Only datagrams sent from this IPv4 address (the FPGA's) reach the engine; others
    // are dropped and counted (`source_filtered`). Empty: any sender.
    std::string src_filter;
};

// A 32-bit counter that wraps (the kernel's per-socket drop count), followed in 64 bits:
// each reading adds what it grew by since the last. Read often enough that it cannot
// grow by 2^32 in between.
class wrapping_counter {
public:
    std::uint64_t update(std::uint32_t raw) noexcept {
        total_ += static_cast<std::uint32_t>(raw - last_);
        last_ = raw;
        return total_;
    }
    std::uint64_t total() const noexcept { return total_; }

private:
    std::uint32_t last_ = 0;
    std::uint64_t total_ = 0;
};

// The classic BPF program (SO_ATTACH_REUSEPORT_CBPF) that picks socket
// (seq / block) % sockets from the sequence field in the UDP payload (its low 32 bits).
std::vector<sock_filter> steer_program(const field &seq, std::size_t block, std::size_t sockets);

// Parses "a.b.c.d" into a sockaddr_in; throws std::invalid_argument naming `host`.
sockaddr_in make_ipv4_address(const std::string &host, std::uint16_t port);

class udp_source : public source {
public:
    explicit udp_source(const udp_config &cfg);  // binds now, so errors surface here
    std::size_t n_threads() const override { return sockets_.size(); }
    int cpu(std::size_t i) const override;
    void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) override;
    void interrupt() override;
    std::vector<std::string> warnings() const override { return warnings_; }
    std::uint16_t port() const noexcept { return port_; }  // the bound port (useful with 0)
    std::size_t rcvbuf() const noexcept { return rcvbuf_; }  // effective, as the kernel reports
    // Datagrams the kernel dropped because the socket buffers were full (its per-socket
    // 32-bit counts, followed in 64 bits).
    std::uint64_t kernel_drops() const noexcept;
    // Datagrams from senders other than src_filter, dropped.
    std::uint64_t source_filtered() const noexcept;

private:
    // Each socket's drop count, read by its receive thread now and then and by stats().
    struct drops {
        std::mutex m;
        wrapping_counter n;
    };
    std::uint64_t read_drops(std::size_t i) const noexcept;

    udp_config cfg_;
    std::vector<unique_fd> sockets_;
    std::unique_ptr<drops[]> drops_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> filtered_;  // per thread
    std::uint32_t src_addr_ = 0;  // src_filter, network order (0: none)
    unique_fd wake_;  // eventfd: readable once interrupt() was called
    std::vector<std::string> warnings_;
    std::uint16_t port_ = 0;
    std::size_t rcvbuf_ = 0;
};

}  // namespace casper400g_rx
