// SPDX-License-Identifier: GPL-3.0-or-later
// axil_master.h — the processor side of the twin's AXI4-Lite bus: one access at a time,
// single 32-bit words, as the board's CPU (and board-server behind it) issues them.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>

#include "verilated.h"

namespace twin {

// Pointers into the Verilated model's M_AXI_* ports (filled by the generated design glue).
struct AxilPorts {
    CData *clk = nullptr, *rst_n = nullptr;
    IData *awaddr = nullptr;
    CData *awprot = nullptr, *awvalid = nullptr, *awready = nullptr;
    IData *wdata = nullptr;
    CData *wstrb = nullptr, *wvalid = nullptr, *wready = nullptr;
    CData *bresp = nullptr, *bvalid = nullptr, *bready = nullptr;
    IData *araddr = nullptr;
    CData *arprot = nullptr, *arvalid = nullptr, *arready = nullptr;
    IData *rdata = nullptr;
    CData *rresp = nullptr, *rvalid = nullptr, *rready = nullptr;
};

enum class Resp : int { OKAY = 0, EXOKAY = 1, SLVERR = 2, DECERR = 3, TIMEOUT = 4 };

inline const char *resp_name(Resp r) {
    switch (r) {
    case Resp::OKAY: return "OKAY";
    case Resp::EXOKAY: return "EXOKAY";
    case Resp::SLVERR: return "SLVERR";
    case Resp::DECERR: return "DECERR";
    default: return "TIMEOUT";
    }
}

struct AxilOp {
    bool write = false;
    std::uint32_t addr = 0, data = 0;
    std::function<void(Resp, std::uint32_t)> done;
};

class AxilMaster {
  public:
    // `timeout_cycles`: a slave that never answers fails the access instead of hanging it.
    explicit AxilMaster(const AxilPorts &p, std::uint64_t timeout_cycles = 100000)
        : p_(p), timeout_(timeout_cycles) {
        idle();
    }

    void submit(AxilOp op) { queue_.push_back(std::move(op)); }
    bool busy() const { return active_ || !queue_.empty(); }
    std::uint64_t accesses() const { return accesses_; }

    // Before the rising edge of the bus clock: the handshakes of this cycle.
    void pre_edge() {
        if (!active_) return;
        aw_fire_ = *p_.awvalid && *p_.awready;
        w_fire_ = *p_.wvalid && *p_.wready;
        ar_fire_ = *p_.arvalid && *p_.arready;
        b_fire_ = *p_.bvalid && *p_.bready;
        r_fire_ = *p_.rvalid && *p_.rready;
        bresp_ = *p_.bresp;
        rresp_ = *p_.rresp;
        rdata_ = *p_.rdata;
    }

    // After the edge: drive the next cycle; returns true when an access completed.
    bool post_edge(bool in_reset) {
        if (in_reset) return false;
        if (!active_) return start();
        if (aw_fire_) *p_.awvalid = 0;
        if (w_fire_) *p_.wvalid = 0;
        if (ar_fire_) *p_.arvalid = 0;
        const bool finished = op_.write ? b_fire_ : r_fire_;
        aw_fire_ = w_fire_ = ar_fire_ = b_fire_ = r_fire_ = false;
        if (finished) {
            finish(static_cast<Resp>(op_.write ? bresp_ : rresp_), op_.write ? 0 : rdata_);
            return true;
        }
        if (++waited_ > timeout_) {
            finish(Resp::TIMEOUT, 0);
            return true;
        }
        return false;
    }

  private:
    void idle() {
        *p_.awvalid = *p_.wvalid = *p_.arvalid = 0;
        *p_.bready = *p_.rready = 1;
        *p_.awprot = *p_.arprot = 0;
        *p_.wstrb = 0xF;
    }

    bool start() {
        if (queue_.empty()) return false;
        op_ = std::move(queue_.front());
        queue_.pop_front();
        active_ = true;
        waited_ = 0;
        if (op_.write) {
            *p_.awaddr = op_.addr;
            *p_.wdata = op_.data;
            *p_.awvalid = *p_.wvalid = 1;
        } else {
            *p_.araddr = op_.addr;
            *p_.arvalid = 1;
        }
        return false;
    }

    void finish(Resp r, std::uint32_t data) {
        idle();
        active_ = false;
        accesses_++;
        AxilOp op = std::move(op_);
        op_ = AxilOp{};
        if (op.done) op.done(r, data);
    }

    AxilPorts p_;
    std::uint64_t timeout_;
    std::deque<AxilOp> queue_;
    AxilOp op_;
    bool active_ = false;
    bool aw_fire_ = false, w_fire_ = false, ar_fire_ = false, b_fire_ = false, r_fire_ = false;
    std::uint8_t bresp_ = 0, rresp_ = 0;
    std::uint32_t rdata_ = 0;
    std::uint64_t waited_ = 0, accesses_ = 0;
};

}  // namespace twin
