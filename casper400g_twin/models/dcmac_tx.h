// SPDX-License-Identifier: GPL-3.0-or-later
// dcmac_tx.h — the DCMAC TX client interface (400G, port 0, 8 x 128-bit segments) as the
// digital twin plays it, in C++: the same rules, reassembly and line pacing as
// verification/models/dcmac_tx.py (DcmacTxChecker, LinePacer "line" mode), without the
// per-cycle Python cost. A broken PG369 rule is counted and the first one described, so a
// long twin run reports it instead of stopping; the cocotb tests stay the place where one
// rule break fails a test.
//
// Bus conventions (PG369): byte 0 of a segment is bits 7:0; `mty` counts the unused bytes
// at the top of the EOP segment. The MAC inserts the FCS, so frames are handed on without.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace dcmac {

constexpr int SEGMENTS = 8;
constexpr int SEG_BYTES = 16;
constexpr int BUS_BYTES = SEGMENTS * SEG_BYTES;
constexpr int FCS_BYTES = 4;
constexpr int PREAMBLE_IFG_BYTES = 20;  // preamble + SFD (8) + minimum inter-frame gap (12)
constexpr int WIRE_OVERHEAD_BYTES = FCS_BYTES + PREAMBLE_IFG_BYTES;
constexpr int MIN_FRAME_BYTES = 60;  // before FCS
constexpr double LINE_BPS = 400e9;

// Wire time of a frame given its length without FCS, in bytes (runts padded).
inline std::uint64_t wire_bytes(std::size_t frame_len) {
    return std::max<std::size_t>(frame_len, MIN_FRAME_BYTES) + WIRE_OVERHEAD_BYTES;
}

// One cycle of the segmented bus, as sampled from (TX) or driven onto (RX) the DUT.
struct Bus {
    bool tvalid = false;
    std::uint8_t ena = 0, sop = 0, eop = 0, err = 0;  // one bit per segment
    std::uint8_t mty[SEGMENTS] = {};
    std::uint8_t data[SEGMENTS][SEG_BYTES] = {};

    bool same_as(const Bus &o) const {
        if (ena != o.ena) return false;
        for (int i = 0; i < SEGMENTS; i++) {
            if (!(ena >> i & 1)) continue;
            const int b = 1 << i;
            if ((sop & b) != (o.sop & b) || (eop & b) != (o.eop & b) || (err & b) != (o.err & b) ||
                mty[i] != o.mty[i] || std::memcmp(data[i], o.data[i], SEG_BYTES) != 0)
                return false;
        }
        return true;
    }
};

// tready/taf per MAC cycle: a token bucket of line_bps / 8 / mac_clk_hz bytes per cycle,
// each consumed cycle charged its wire bytes; tready while the credit is positive, taf
// whenever this cycle's worst case could empty the bucket (so taf leads every fall of
// tready). The bucket's size stands for the MAC's small TX FIFO.
class LinePacer {
  public:
    // Worst charge of one cycle: a full bus plus three frame ends, each padded from 1 byte.
    static constexpr double MAX_CYCLE_COST =
        BUS_BYTES + 3.0 * (WIRE_OVERHEAD_BYTES + MIN_FRAME_BYTES - 1);

    LinePacer(double mac_clk_hz, double line_bps = LINE_BPS, int taf_lead = 1)
        : bytes_per_cycle_(line_bps / 8.0 / mac_clk_hz), taf_lead_(taf_lead),
          burst_(2.0 * MAX_CYCLE_COST * taf_lead), credit_(burst_) {
        decide();
    }

    bool tready() const { return tready_; }
    bool taf() const { return taf_; }
    double bytes_per_cycle() const { return bytes_per_cycle_; }

    // Close the current cycle (`cost` wire bytes consumed in it); decide the next one.
    void advance(std::uint64_t cost) {
        credit_ = std::min(credit_ + bytes_per_cycle_ - static_cast<double>(cost), burst_);
        decide();
    }

  private:
    void decide() {
        tready_ = credit_ > 0;
        taf_ = credit_ + taf_lead_ * (bytes_per_cycle_ - MAX_CYCLE_COST) <= 0;
    }
    double bytes_per_cycle_;
    int taf_lead_;
    double burst_, credit_;
    bool tready_ = true, taf_ = false;
};

struct TxStats {
    std::uint64_t cycles = 0, data_cycles = 0, stall_cycles = 0, frames = 0, bytes = 0,
                  wire_bytes = 0, err_frames = 0, violations = 0;
};

// Checks the TX bus every MAC cycle (PG369 rules, as dcmac_tx.py's RULES) and reassembles
// the frames; `on_frame(frame, err)` gets each one without FCS.
class TxChecker {
  public:
    using FrameFn = std::function<void(const std::vector<std::uint8_t> &, bool)>;

    explicit TxChecker(FrameFn on_frame) : on_frame_(std::move(on_frame)) { buf_.reserve(16384); }

    const TxStats &stats() const { return stats_; }
    const std::string &first_violation() const { return first_violation_; }

    // One cycle: the bus the client presents and the tready/taf presented to it. Returns
    // the wire bytes the consumed segments cost (for the pacer).
    std::uint64_t step(const Bus &bus, bool tready, bool taf) {
        const std::uint64_t c = stats_.cycles++;
        std::uint64_t cost = 0;
        if (prev_tready_ && !tready && !prev_taf_)
            violation(c, -1, "taf_lead", "tready fell with taf low the cycle before");
        if (held_valid_) {
            if (!bus.tvalid)
                violation(c, -1, "hold", "tvalid dropped before the cycle was taken");
            else if (!bus.same_as(held_))
                violation(c, -1, "hold", "the bus changed while tready was low");
        }
        const bool active = bus.tvalid && bus.ena;
        if (bus.tvalid && !tready) {
            stats_.stall_cycles++;
            held_ = bus;
            held_valid_ = true;
        } else {
            held_valid_ = false;
            if (!tready) stats_.stall_cycles++;
            if (!active) {
                if (in_frame_ && !prev_taf_)
                    violation(c, -1, "tvalid_gap", "no data inside a frame without taf before");
            } else {
                stats_.data_cycles++;
                cost = consume(c, bus);
            }
        }
        prev_tready_ = tready;
        prev_taf_ = taf;
        return cost;
    }

  private:
    std::uint64_t consume(std::uint64_t c, const Bus &bus) {
        std::uint64_t cost = 0;
        if (!(bus.ena & 1)) {
            violation(c, 0, "seg0_active", "a cycle with data has segment 0 inactive");
            return 0;
        }
        bool idle_seen = false, sop_lo = false, sop_hi = false;
        for (int i = 0; i < SEGMENTS; i++) {
            const int b = 1 << i;
            if (!(bus.ena & b)) {
                if (in_frame_) violation(c, i, "seg_order", "inactive segment inside a frame");
                idle_seen = true;
                continue;
            }
            if (idle_seen) violation(c, i, "idle_after_eop", "active after an idle segment");
            const bool eop = bus.eop & b;
            if (bus.mty[i] && !eop) violation(c, i, "mty_not_eop", "mty without EOP");
            if (bus.sop & b) {
                if (i && !(bus.eop >> (i - 1) & 1))
                    violation(c, i, "sop_after_eop", "SOP not right after an EOP");
                if (in_frame_) violation(c, i, "sop_in_frame", "SOP inside a frame");
                bool &half = i < 4 ? sop_lo : sop_hi;
                if (half) violation(c, i, "one_sop_per_half", "second SOP in one half");
                half = true;
                in_frame_ = true;
                buf_.clear();
            } else if (!in_frame_) {
                violation(c, i, eop ? "eop_outside_frame" : "data_outside_frame",
                          "segment outside a frame");
                continue;
            }
            if (eop) {
                const int n = SEG_BYTES - (bus.mty[i] & 15);
                buf_.insert(buf_.end(), bus.data[i], bus.data[i] + n);
                cost += static_cast<std::uint64_t>(n);
                const std::uint64_t w = wire_bytes(buf_.size());
                cost += w - buf_.size();
                stats_.frames++;
                stats_.bytes += buf_.size();
                stats_.wire_bytes += w;
                const bool err = bus.err & b;
                stats_.err_frames += err;
                on_frame_(buf_, err);
                in_frame_ = false;
            } else {
                buf_.insert(buf_.end(), bus.data[i], bus.data[i] + SEG_BYTES);
                cost += SEG_BYTES;
            }
        }
        return cost;
    }

    void violation(std::uint64_t cycle, int seg, const char *rule, const char *what) {
        if (stats_.violations++ == 0)
            first_violation_ = "cycle " + std::to_string(cycle) +
                               (seg >= 0 ? ", segment " + std::to_string(seg) : std::string()) +
                               ": rule '" + rule + "' broken: " + what;
    }

    FrameFn on_frame_;
    TxStats stats_;
    std::string first_violation_;
    std::vector<std::uint8_t> buf_;
    bool in_frame_ = false, prev_tready_ = false, prev_taf_ = false, held_valid_ = false;
    Bus held_;
};

}  // namespace dcmac
