// SPDX-License-Identifier: GPL-3.0-or-later
// link_model.h — the twin's own model of the link between the FPGA and the host, for
// fault tests where the kernel has no netem: the FPGA's UDP datagrams are dropped,
// duplicated or delayed behind later ones by a seeded schedule (or at given indices), and
// every decision is counted. Only IPv4/UDP frames are touched: ARP and ICMP always pass,
// so the link stays manageable while the data stream suffers.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace twin {

struct LinkFaults {
    double drop = 0, duplicate = 0, delay = 0;  // probability per UDP datagram
    unsigned depth = 3;                         // a delayed datagram goes after this many
    std::uint64_t seed = 1;
    std::set<std::uint64_t> drop_at, duplicate_at, delay_at;  // datagram indices (from 0)

    bool any() const {
        return drop > 0 || duplicate > 0 || delay > 0 || !drop_at.empty() ||
               !duplicate_at.empty() || !delay_at.empty();
    }
};

struct LinkStats {
    std::uint64_t datagrams = 0, dropped = 0, duplicated = 0, delayed = 0, passed = 0;
};

inline bool is_udp_datagram(const std::vector<std::uint8_t> &f) {
    // Untagged IPv4 (ethertype 0x0800), protocol 17, not a fragment.
    return f.size() >= 42 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 17 &&
           (((f[20] & 0x3F) << 8) | f[21]) == 0;
}

class LinkModel {
  public:
    using SendFn = std::function<void(const std::vector<std::uint8_t> &)>;

    explicit LinkModel(SendFn send) : send_(std::move(send)) {}

    void configure(const LinkFaults &f) {
        faults_ = f;
        rng_.seed(f.seed);
        stats_ = LinkStats{};
        flush();
    }
    const LinkStats &stats() const { return stats_; }
    const LinkFaults &faults() const { return faults_; }
    std::size_t held() const { return held_.size(); }

    void carry(const std::vector<std::uint8_t> &frame) {
        if (!is_udp_datagram(frame)) {
            forward(frame, false);
            return;
        }
        const std::uint64_t k = stats_.datagrams++;
        if (!faults_.any()) {
            forward(frame, true);
            return;
        }
        // One draw per fault kind per datagram, whatever the outcome: the schedule of a
        // seed does not depend on the other rates.
        const double u_drop = uniform_(rng_), u_dup = uniform_(rng_), u_delay = uniform_(rng_);
        if (faults_.drop_at.count(k) || u_drop < faults_.drop) {
            stats_.dropped++;
            release_due();
            return;
        }
        if (faults_.delay_at.count(k) || u_delay < faults_.delay) {
            stats_.delayed++;
            held_.push_back({frame, faults_.depth});
            return;
        }
        forward(frame, true);
        if (faults_.duplicate_at.count(k) || u_dup < faults_.duplicate) {
            stats_.duplicated++;
            send_(frame);
        }
    }

    // Release every held datagram (the stream paused: nothing comes to overtake them).
    void flush() {
        while (!held_.empty()) {
            send_(held_.front().frame);
            stats_.passed++;
            held_.pop_front();
        }
    }

  private:
    struct Held {
        std::vector<std::uint8_t> frame;
        unsigned left;
    };

    void forward(const std::vector<std::uint8_t> &frame, bool datagram) {
        send_(frame);
        if (datagram) {
            stats_.passed++;
            release_due();
        }
    }

    // A datagram passed (or was dropped): held ones it overtook come one step closer.
    void release_due() {
        for (auto &h : held_)
            if (h.left) h.left--;
        while (!held_.empty() && held_.front().left == 0) {
            send_(held_.front().frame);
            stats_.passed++;
            held_.pop_front();
        }
    }

    SendFn send_;
    LinkFaults faults_;
    LinkStats stats_;
    std::mt19937_64 rng_{1};
    std::uniform_real_distribution<double> uniform_{0.0, 1.0};
    std::deque<Held> held_;
};

}  // namespace twin
