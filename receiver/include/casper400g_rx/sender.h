// Sends the example stream over UDP with sendmmsg (optionally several datagrams per
// send with UDP GSO) at a limited rate, with the faults a test asks for expressed as an
// explicit schedule of sequence numbers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "casper400g_rx/fd.h"

namespace casper400g_rx {

struct send_config {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;
    std::size_t payload_size = 8192;
    double rate_gbps = 0.0;  // payload bits per second / 1e9; 0 = as fast as possible
    std::uint64_t first = 0;
    std::uint64_t count = 0;
    std::vector<std::uint64_t> schedule;  // when not empty, replaces first/count
    std::size_t streams = 1;              // source sockets, batches go round-robin
    bool allow_remote = false;            // refuse non-loopback destinations unless set
    // Optional header sent before each payload (e.g. another protocol's framing);
    // the sequence number is also written into it, big-endian, at seq_offset/seq_width.
    std::vector<std::uint8_t> prefix;
    std::size_t prefix_seq_offset = 0;
    unsigned prefix_seq_width = 0;  // 0: the prefix is sent unchanged
    // After a stall, send the backlog at full speed and keep to the schedule, rather
    // than move the schedule on: for several senders that together send one stream, so
    // that one that lost its core does not stay behind the others.
    bool catch_up = false;
    // UDP generic segmentation offload: up to this many datagrams of consecutive sequence
    // numbers leave in one send (UDP_SEGMENT), the kernel cutting them apart; 0 or 1 =
    // one send per datagram. A run never crosses a multiple of gso_segments in the
    // sequence, so a receiver that steers blocks of a multiple of it by sequence number
    // (SO_REUSEPORT program) still gets every datagram of a run on the right socket.
    std::size_t gso_segments = 0;
};

class sender {
public:
    explicit sender(const send_config &cfg);
    // Sends until done or `budget` has elapsed; returns true when done.
    bool send_for(std::chrono::nanoseconds budget);
    // Paces from `epoch` rather than from the first send_for (several senders of one
    // stream keep one schedule); before the first send_for.
    void start_at(std::chrono::steady_clock::time_point epoch);
    // How far behind its schedule the sender fell at worst (0 without a rate).
    double max_lag_seconds() const noexcept { return max_lag_.count() * 1e-9; }
    std::uint64_t packets_sent() const noexcept { return sent_; }
    std::uint64_t total() const noexcept { return total_; }
    double elapsed() const noexcept;

private:
    std::size_t packet_size() const noexcept { return cfg_.prefix.size() + cfg_.payload_size; }
    std::uint64_t seq_at(std::uint64_t i) const noexcept {
        return cfg_.schedule.empty() ? cfg_.first + i : cfg_.schedule[i];
    }

    send_config cfg_;
    std::vector<unique_fd> sockets_;
    std::vector<std::uint8_t> buffers_;
    std::uint64_t total_ = 0;
    std::uint64_t sent_ = 0;
    std::uint64_t batches_ = 0;
    bool started_ = false;
    std::chrono::steady_clock::time_point t_start_{};
    std::chrono::steady_clock::time_point t0_{};  // pacing origin; moves forward after stalls
    std::chrono::steady_clock::time_point t_end_{};
    std::chrono::nanoseconds max_lag_{0};
};

// Runs the senders together, one thread each (pinned to cpus[i] when given), on one
// schedule that starts a moment from now: a sender whose thread starts late or loses its
// core catches up (catch_up) instead of sending its share of the stream behind the
// others'. Returns when all are done.
void send_in_step(const std::vector<sender *> &senders, const std::vector<int> &cpus);

}  // namespace casper400g_rx
