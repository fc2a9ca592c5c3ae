// SPDX-License-Identifier: GPL-3.0-or-later
// design_ports.h — what the harness needs from a Verilated design: its clocks, the
// AXI4-Lite bus and each 400GbE block's DCMAC client ports. The per-design glue
// (twin_design.h, written by casper400g_twin/build.py from the design's top.v) fills
// these with pointers into the model and drives the blocks' link status inputs.
#pragma once

#include <string>
#include <vector>

#include "axil_master.h"
#include "verilated.h"

namespace twin {

constexpr int SEGMENTS = 8;

struct SegmentPorts {
    CData *tvalid = nullptr;
    EData *tdata[SEGMENTS] = {};
    CData *ena[SEGMENTS] = {}, *sop[SEGMENTS] = {}, *eop[SEGMENTS] = {}, *err[SEGMENTS] = {},
          *mty[SEGMENTS] = {};
};

struct MacPorts {
    std::string name;  // the block's name in the design (gbe0)
    CData *tx_clk = nullptr, *tx_rst = nullptr, *tready = nullptr, *taf = nullptr;
    CData *rx_clk = nullptr, *rx_rst = nullptr;
    SegmentPorts tx, rx;
};

struct DesignPorts {
    CData *user_clk = nullptr;
    AxilPorts axil;
    std::vector<MacPorts> macs;
};

}  // namespace twin
