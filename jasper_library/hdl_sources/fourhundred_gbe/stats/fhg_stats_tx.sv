// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_stats_tx — the transmit path's statistics, from the user clock and the TX MAC clock
// into the register block's clock.
//
// Contract
//   * Source, user_clk: per cycle `word` a tx_valid word was accepted, `words_lost` words
//     were lost to a full buffer, `frame_drop` a datagram was damaged by that, `afull_rise`
//     tx_afull rose.
//   * Source, tx_mac_clk: per cycle `frames` UDP frames and `ctl_frame` a control frame (ARP
//     reply or CPU frame) went to the MAC, with `bytes` / `ctl_bytes` bytes (Ethernet header
//     to payload) and `payload` UDP payload bytes; `arp_sent`, `cpu_sent` say which control
//     frame, `arp_miss` a datagram was dropped for an invalid ARP entry.
//   * Destination (axil_clk): each count as fhg_cdc_delta transfers (`*_v` with its `*_d`);
//     `all` counts every frame (UDP + control), `bytes` every frame's bytes.
//   * Widths: bytes and payload take LEN_W+2-bit per-cycle counts whose top bit is always 0
//     (at most one maximum-size frame's bytes per count); the crossings carry LEN_W+3 and
//     LEN_W+1 bits as the core has always counted them.
//   * Resets: the user-clock counts have no reset (they run from configuration);
//     tx_mac_rst and axil_rst synchronous, asserted together (fhg_cdc_delta).
//   * CDC: only through fhg_cdc_delta.
module fhg_stats_tx #(
    parameter int LEN_W = 14
) (
    input  logic             user_clk,
    input  logic             word,
    input  logic [7:0]       words_lost,
    input  logic             frame_drop,
    input  logic             afull_rise,

    input  logic             tx_mac_clk,
    input  logic             tx_mac_rst,
    input  logic [1:0]       frames,
    input  logic             ctl_frame,
    input  logic [LEN_W+1:0] ctl_bytes,
    input  logic [LEN_W+1:0] bytes,
    input  logic [LEN_W+1:0] payload,
    input  logic             arp_sent,
    input  logic             cpu_sent,
    input  logic             arp_miss,

    input  logic             axil_clk,
    input  logic             axil_rst,
    output logic             word_v,
    output logic [15:0]      word_d,
    output logic             lost_v,
    output logic [15:0]      lost_d,
    output logic             drop_v,
    output logic [15:0]      drop_d,
    output logic             afull_v,
    output logic [15:0]      afull_d,
    output logic             frames_v,
    output logic [15:0]      frames_d,
    output logic             all_v,
    output logic [15:0]      all_d,
    output logic             arp_v,
    output logic [15:0]      arp_d,
    output logic             cpu_v,
    output logic [15:0]      cpu_d,
    output logic             bytes_v,
    output logic [23:0]      bytes_d,
    output logic             payload_v,
    output logic [23:0]      payload_d,
    output logic             miss_v,
    output logic [15:0]      miss_d
);
    // user_clk events
    fhg_cdc_delta #(.INCR_W(1)) u_word (
        .src_clk(user_clk), .src_rst(1'b0), .src_incr(word),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(word_v), .dst_delta(word_d));
    fhg_cdc_delta #(.INCR_W(8)) u_lost (
        .src_clk(user_clk), .src_rst(1'b0), .src_incr(words_lost),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(lost_v), .dst_delta(lost_d));
    fhg_cdc_delta #(.INCR_W(1)) u_drop (
        .src_clk(user_clk), .src_rst(1'b0), .src_incr(frame_drop),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(drop_v), .dst_delta(drop_d));
    fhg_cdc_delta #(.INCR_W(1)) u_afull (
        .src_clk(user_clk), .src_rst(1'b0), .src_incr(afull_rise),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(afull_v), .dst_delta(afull_d));

    // tx_mac_clk events: UDP frames and all frames (UDP + control) are separate counts.
    logic [2:0]       all_frames;
    logic [LEN_W+2:0] all_bytes;
    assign all_frames = 3'(frames) + 3'(ctl_frame);
    assign all_bytes  = (LEN_W+3)'(bytes) + (ctl_frame ? (LEN_W+3)'(ctl_bytes) : '0);
    fhg_cdc_delta #(.INCR_W(2)) u_frames (
        .src_clk(tx_mac_clk), .src_rst(tx_mac_rst), .src_incr(frames),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(frames_v), .dst_delta(frames_d));
    fhg_cdc_delta #(.INCR_W(3)) u_all (
        .src_clk(tx_mac_clk), .src_rst(tx_mac_rst), .src_incr(all_frames),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(all_v), .dst_delta(all_d));
    fhg_cdc_delta #(.INCR_W(1)) u_arp (
        .src_clk(tx_mac_clk), .src_rst(tx_mac_rst), .src_incr(arp_sent),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(arp_v), .dst_delta(arp_d));
    fhg_cdc_delta #(.INCR_W(1)) u_cpu (
        .src_clk(tx_mac_clk), .src_rst(tx_mac_rst), .src_incr(cpu_sent),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(cpu_v), .dst_delta(cpu_d));
    fhg_cdc_delta #(.INCR_W(LEN_W+3), .DELTA_W(24)) u_bytes (
        .src_clk(tx_mac_clk), .src_rst(tx_mac_rst), .src_incr(all_bytes),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(bytes_v), .dst_delta(bytes_d));
    fhg_cdc_delta #(.INCR_W(LEN_W+1), .DELTA_W(24)) u_payload (
        .src_clk(tx_mac_clk), .src_rst(tx_mac_rst), .src_incr(payload[LEN_W:0]),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(payload_v),
        .dst_delta(payload_d));
    fhg_cdc_delta #(.INCR_W(1)) u_miss (
        .src_clk(tx_mac_clk), .src_rst(tx_mac_rst), .src_incr(arp_miss),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(miss_v), .dst_delta(miss_d));

    logic unused_ok;
    assign unused_ok = &{1'b0, payload[LEN_W+1]};
endmodule
