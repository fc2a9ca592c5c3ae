// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rx_pkg — verdict codes of the receive path: every received frame ends with exactly one
// of them (docs/design/core.md §3 accounting). Each code but V_PEND has a counter of its own in the
// register map; V_PEND is a datagram handed to the merger, which counts it as delivered
// (rx_udp_packets) or, when the RX FIFO had no room, as rx_drop_overrun.
package fhg_rx_pkg;
    localparam int NCODES = 18;
    localparam logic [4:0] V_PEND        = 5'd0;
    localparam logic [4:0] V_ARP         = 5'd1;   // rx_arp_requests
    localparam logic [4:0] V_CPU         = 5'd2;   // rx_to_cpu
    localparam logic [4:0] V_FCS         = 5'd3;   // rx_drop_fcs
    localparam logic [4:0] V_DST_MAC     = 5'd4;
    localparam logic [4:0] V_ETHERTYPE   = 5'd5;
    localparam logic [4:0] V_IP_VERSION  = 5'd6;
    localparam logic [4:0] V_IP_OPTIONS  = 5'd7;
    localparam logic [4:0] V_IP_FRAGMENT = 5'd8;
    localparam logic [4:0] V_IP_CHECKSUM = 5'd9;
    localparam logic [4:0] V_IP_PROTOCOL = 5'd10;
    localparam logic [4:0] V_DST_IP      = 5'd11;
    localparam logic [4:0] V_DST_PORT    = 5'd12;
    localparam logic [4:0] V_LENGTH      = 5'd13;
    localparam logic [4:0] V_OVERRUN     = 5'd14;
    localparam logic [4:0] V_CPU_BUSY    = 5'd15;
    localparam logic [4:0] V_ARP_DROP    = 5'd16;
    localparam logic [4:0] V_DISABLED    = 5'd17;
endpackage
