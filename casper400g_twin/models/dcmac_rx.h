// SPDX-License-Identifier: GPL-3.0-or-later
// dcmac_rx.h — the DCMAC RX client interface (400G, port 0) as the digital twin drives it:
// C++ counterpart of RxSegmentPacker in verification/models/dcmac_rx.py, "line" mode with
// the FCS stripped (the core's default, RX_FCS_ON_BUS = 0). The port has no tready: frames
// queue here and go on the bus back to back (the next SOP right after an EOP, at most one
// SOP per half-bus) no faster than the 400GbE line delivers them.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "dcmac_tx.h"

namespace dcmac {

struct RxStats {
    std::uint64_t cycles = 0, data_cycles = 0, frames = 0, bytes = 0, wire_bytes = 0,
                  queue_drops = 0;
};

class RxPacker {
  public:
    // `max_queue`: frames waiting for the bus; beyond it a frame is dropped and counted,
    // as a MAC whose client cannot keep up loses what the wire brings.
    RxPacker(double mac_clk_hz, std::size_t max_queue = 4096, double line_bps = LINE_BPS)
        : bytes_per_cycle_(line_bps / 8.0 / mac_clk_hz), burst_(2.0 * BUS_BYTES),
          credit_(burst_), max_queue_(max_queue) {}

    const RxStats &stats() const { return stats_; }
    std::size_t queued() const { return frames_.size(); }

    bool push(const std::uint8_t *frame, std::size_t len) {
        if (len == 0) return true;
        if (frames_.size() >= max_queue_) {
            stats_.queue_drops++;
            return false;
        }
        frames_.emplace_back(frame, frame + len);
        return true;
    }

    // The bus state of the next cycle.
    void next_cycle(Bus &bus) {
        stats_.cycles++;
        credit_ = std::min(credit_ + bytes_per_cycle_, burst_);
        bus.tvalid = false;
        bus.ena = bus.sop = bus.eop = bus.err = 0;
        std::memset(bus.mty, 0, sizeof bus.mty);
        if (frames_.empty() || credit_ <= 0) return;
        bool half_sop[2] = {false, false};
        int seg = 0;
        while (seg < SEGMENTS && !frames_.empty()) {
            const std::vector<std::uint8_t> &f = frames_.front();
            if (off_ == 0) {
                if (half_sop[seg >> 2] || credit_ <= 0) break;
                half_sop[seg >> 2] = true;
                bus.sop |= 1 << seg;
            }
            const std::size_t n = std::min<std::size_t>(SEG_BYTES, f.size() - off_);
            std::memset(bus.data[seg], 0, SEG_BYTES);
            std::memcpy(bus.data[seg], f.data() + off_, n);
            bus.ena |= 1 << seg;
            bus.tvalid = true;
            credit_ -= static_cast<double>(n);
            if (off_ + n >= f.size()) {
                bus.eop |= 1 << seg;
                bus.mty[seg] = static_cast<std::uint8_t>(SEG_BYTES - n);
                const std::uint64_t w = wire_bytes(f.size());
                credit_ -= static_cast<double>(w - f.size());
                stats_.frames++;
                stats_.bytes += f.size();
                stats_.wire_bytes += w;
                frames_.pop_front();
                off_ = 0;
            } else {
                off_ += n;
            }
            seg++;
        }
        if (bus.tvalid) stats_.data_cycles++;
    }

  private:
    double bytes_per_cycle_, burst_, credit_;
    std::size_t max_queue_;
    std::deque<std::vector<std::uint8_t>> frames_;
    std::size_t off_ = 0;
    RxStats stats_;
};

}  // namespace dcmac
