// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_stats_rx — the receive path's statistics, from the RX MAC clock into the register
// block's clock: one exact count per verdict code of docs/design/core.md §3 (every received
// frame gets exactly one), and the totals the register map shows beside them.
//
// Contract
//   * Source (mac_clk): per cycle, `verdict_cnt[3c +: 3]` frames got verdict c (up to two
//     frames end per cycle, three lanes), `frames` frames were received, `bytes` their bytes,
//     `delivered` a datagram went to the user port with `udp_bytes` payload bytes in `words`
//     words, `bad` it failed its UDP checksum.
//   * Destination (axil_clk): each count arrives as fhg_cdc_delta transfers, a `*_v` cycle
//     with its `*_d` increment, ready for a counter's incr/incrvalue inputs; together they
//     reproduce the source counts exactly. `drops` is the sum of the drop verdicts (V_FCS and
//     above). Verdict 0 (pending) is never counted: its outputs stay 0.
//   * Latency: at most two handshake round trips of fhg_cdc_delta; throughput: counts keep
//     accumulating while a transfer is in flight.
//   * Resets: mac_rst and axil_rst synchronous, asserted together (fhg_cdc_delta).
//   * CDC: only through fhg_cdc_delta.
module fhg_stats_rx #(
    parameter int NC = fhg_rx_pkg::NCODES
) (
    input  logic              mac_clk,
    input  logic              mac_rst,
    input  logic [3*NC-1:0]   verdict_cnt,
    input  logic [1:0]        frames,
    input  logic [15:0]       bytes,
    input  logic              delivered,
    input  logic [13:0]       udp_bytes,
    input  logic [7:0]        words,
    input  logic              bad,

    input  logic              axil_clk,
    input  logic              axil_rst,
    output logic [NC-1:0]     verdict_v,
    output logic [16*NC-1:0]  verdict_d,
    output logic              frames_v,
    output logic [15:0]       frames_d,
    output logic              bytes_v,
    output logic [23:0]       bytes_d,
    output logic              delivered_v,
    output logic [15:0]       delivered_d,
    output logic              udp_bytes_v,
    output logic [23:0]       udp_bytes_d,
    output logic              words_v,
    output logic [15:0]       words_d,
    output logic              bad_v,
    output logic [15:0]       bad_d,
    output logic              drops_v,
    output logic [15:0]       drops_d
);
    for (genvar c = 1; c < NC; c++) begin : g_verdict
        fhg_cdc_delta #(.INCR_W(3)) u_c (
            .src_clk(mac_clk), .src_rst(mac_rst), .src_incr(verdict_cnt[3*c +: 3]),
            .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(verdict_v[c]),
            .dst_delta(verdict_d[16*c +: 16]));
    end
    assign verdict_v[0]      = 1'b0;
    assign verdict_d[15:0]   = '0;

    // All drop reasons together, summed in two registered halves (one cycle later).
    localparam int D0 = int'(fhg_rx_pkg::V_FCS);
    localparam int DM = (D0 + NC) / 2;
    logic [4:0] drops, drops_lo, drops_hi, drops_lo_sum, drops_hi_sum;
    always_ff @(posedge mac_clk) begin
        drops_lo <= drops_lo_sum;
        drops_hi <= drops_hi_sum;
        if (mac_rst) begin
            drops_lo <= '0; drops_hi <= '0;
        end
    end
    always_comb begin
        drops_lo_sum = '0;
        drops_hi_sum = '0;
        for (int c = D0; c < DM; c++) drops_lo_sum = drops_lo_sum + 5'(verdict_cnt[3*c +: 3]);
        for (int c = DM; c < NC; c++) drops_hi_sum = drops_hi_sum + 5'(verdict_cnt[3*c +: 3]);
    end
    assign drops = drops_lo + drops_hi;

    fhg_cdc_delta #(.INCR_W(2)) u_frames (
        .src_clk(mac_clk), .src_rst(mac_rst), .src_incr(frames),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(frames_v), .dst_delta(frames_d));
    fhg_cdc_delta #(.INCR_W(16), .DELTA_W(24)) u_bytes (
        .src_clk(mac_clk), .src_rst(mac_rst), .src_incr(bytes),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(bytes_v), .dst_delta(bytes_d));
    fhg_cdc_delta #(.INCR_W(1)) u_delivered (
        .src_clk(mac_clk), .src_rst(mac_rst), .src_incr(delivered),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(delivered_v),
        .dst_delta(delivered_d));
    fhg_cdc_delta #(.INCR_W(14), .DELTA_W(24)) u_udp_bytes (
        .src_clk(mac_clk), .src_rst(mac_rst), .src_incr(delivered ? udp_bytes : 14'd0),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(udp_bytes_v),
        .dst_delta(udp_bytes_d));
    fhg_cdc_delta #(.INCR_W(8)) u_words (
        .src_clk(mac_clk), .src_rst(mac_rst), .src_incr(delivered ? words : 8'd0),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(words_v), .dst_delta(words_d));
    fhg_cdc_delta #(.INCR_W(1)) u_bad (
        .src_clk(mac_clk), .src_rst(mac_rst), .src_incr(bad),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(bad_v), .dst_delta(bad_d));
    fhg_cdc_delta #(.INCR_W(5)) u_drops (
        .src_clk(mac_clk), .src_rst(mac_rst), .src_incr(drops),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(drops_v), .dst_delta(drops_d));

    logic unused_ok;
    assign unused_ok = &{1'b0, verdict_cnt[2:0]};
endmodule
