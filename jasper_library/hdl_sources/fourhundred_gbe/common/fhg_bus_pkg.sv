// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_bus_pkg — the bundles that pass between the core's modules unchanged, one type each, so
// a bundle's fields and widths are written once. fhg_core's own ports stay flat (the yellow
// block reads them from its source text) and fhg_core packs them into these types; a
// bundle's field order is its port order there, so the packing is one concatenation.
// Widths that follow a module parameter (buffer addresses, descriptors) stay plain ports:
// the Yosys front end takes no type parameters.
package fhg_bus_pkg;
    // User TX port (docs/design/core.md §1), user_clk.
    typedef struct packed {
        logic [1023:0] data;           // first wire byte in data[1023:1016]
        logic          valid;
        logic [127:0]  byte_enable;    // last word only, contiguous from bit 127
        logic [31:0]   dest_ip;        // sampled with end_of_frame
        logic [15:0]   dest_port;
        logic          end_of_frame;
    } tx_user_t;

    // What a transmit mode's user side reports in user_clk: the port's flow control and its
    // counters' one-cycle events; fhg_tx_path chooses one mode's set as a whole.
    typedef struct packed {
        logic          afull;          // tx_afull
        logic          overflow;       // tx_overflow, sticky until reset
        logic          word;           // a tx_valid word was accepted
        logic          frame_drop;     // a frame was dropped (overflow)
        logic [7:0]    words_lost;     // words discarded this cycle (0/1)
        logic          afull_rise;
    } tx_user_st_t;

    // User RX word (docs/design/core.md §1), user_clk; rx_ack, rx_overrun and their
    // acknowledges stay ports of their own (they run the other way or outlast a word).
    typedef struct packed {
        logic [1023:0] data;           // first payload byte in data[1023:1016]
        logic          valid;
        logic [127:0]  byte_enable;    // last word only, contiguous from bit 127
        logic [31:0]   source_ip;
        logic [31:0]   dest_ip;
        logic [15:0]   source_port;
        logic [15:0]   dest_port;
        logic          end_of_frame;
        logic          bad_frame;      // UDP checksum failed (last word)
    } rx_user_t;

    // The receive filter's configuration (rx MAC clock, quasi-static): fhg_rx_path hands it
    // to each of its lanes whole.
    typedef struct packed {
        logic [47:0]   mac;
        logic [31:0]   ip;
        logic [31:0]   netmask;
        logic [31:0]   mc_ip;
        logic [31:0]   mc_mask;
        logic [15:0]   port;
        logic          promisc;
        logic          cpu_rx_en;
        logic          arp_reply_en;
        logic          arp_learn_en;
        logic          fabric_en;      // synchronised apart from the others in fhg_core
    } rx_cfg_t;

    // Writes into the CPU RX buffer, two frame words a cycle (frame byte 128*row+k in data
    // bits 8k+7:8k): a lane's, chosen in fhg_rx_path, stored by fhg_rx_cpu.
    typedef struct packed {
        logic          we0;
        logic [6:0]    row0;
        logic [1023:0] data0;
        logic          we1;
        logic [6:0]    row1;
        logic [1023:0] data1;
    } rx_cpu_wr_t;

    // The DCMAC's segmented client bus, port 0 (PG369), without its handshake: segment i in
    // tdata bits 128i+127:128i, its flags in bit i, its mty in bits 4i+3:4i. fhg_core maps it
    // to and from the IP's per-segment ports.
    typedef struct packed {
        logic [1023:0] tdata;
        logic [7:0]    ena;
        logic [7:0]    sop;
        logic [7:0]    eop;
        logic [7:0]    err;
        logic [31:0]   mty;
    } seg_bus_t;

    // The transmit configuration in mac_clk (registers mac_hi/mac_lo, ip, netmask, gateway,
    // port, ttl, ctrl.udp_checksum_en), crossed from the bus clock as one snapshot.
    typedef struct packed {
        logic [47:0]   mac;
        logic [31:0]   ip;
        logic [31:0]   netmask;
        logic [31:0]   gateway;        // the header stage needs only the ARP index, [7:0]
        logic [15:0]   port;
        logic [7:0]    ttl;
        logic          udp_csum;
    } tx_cfg_t;

    // An AXI4-Lite port (AMBA AXI4-Lite, 32-bit data): what the master drives (axil_req_t)
    // and what the slave answers (axil_rsp_t), in channel order AW, W, B, AR, R. Every
    // slave takes the pair: the core's register block, and the stand-in runtime's bus
    // decoder and register blocks (jasper_runtime/hdl_sources/fhg_toolflow). Only the ports
    // a toolflow connects signal by signal, as mlib_devel's top does, stay flat and are
    // packed into it (fhg_core's s_axil_*, fhg_gbe_boot's). The address is 32 bits; a
    // slave decodes the low bits its map spans.
    typedef struct packed {
        logic          awvalid;
        logic [31:0]   awaddr;
        logic [2:0]    awprot;
        logic          wvalid;
        logic [31:0]   wdata;
        logic [3:0]    wstrb;
        logic          bready;
        logic          arvalid;
        logic [31:0]   araddr;
        logic [2:0]    arprot;
        logic          rready;
    } axil_req_t;

    typedef struct packed {
        logic          awready;
        logic          wready;
        logic          bvalid;
        logic [1:0]    bresp;
        logic          arready;
        logic          rvalid;
        logic [31:0]   rdata;
        logic [1:0]    rresp;
    } axil_rsp_t;

    // The pair's widths, for a packed array of ports (one per slave of a bus decoder): the
    // Yosys front end takes neither arrays of structs nor $bits of a type. A module that
    // uses them checks them against $bits of a variable of each type.
    localparam int AXIL_REQ_W = 111;
    localparam int AXIL_RSP_W = 41;
endpackage
