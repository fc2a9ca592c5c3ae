// SPDX-License-Identifier: GPL-3.0-or-later
// Test-only top for the CDC and RAM primitives: one Verilator build serves every test.
// Everything written by "a" runs on clk_a and everything read on "b" runs on clk_b; each
// test picks the two clock periods. Both SDP instances share their inputs so one stimulus
// checks read latencies 1 and 2 side by side.
module fhg_cdc_tb #(
    parameter int STAGES = 3
) (
    input logic clk_a,
    input logic rst_a,
    input logic clk_b,
    input logic rst_b,

    // fhg_sync_bits: a gray-coded value, driven in clk_a, synchronised into clk_b
    input  logic [3:0] sb_d,
    output logic [3:0] sb_q,

    // fhg_async_fifo: writer on clk_a, reader on clk_b
    input  logic        fifo_wr_en,
    input  logic [31:0] fifo_wr_data,
    output logic        fifo_full,
    output logic [ 3:0] fifo_wr_count,
    output logic        fifo_rd_valid,
    output logic [31:0] fifo_rd_data,
    input  logic        fifo_rd_ready,
    output logic [ 3:0] fifo_rd_count,

    // fhg_pulse_sync: clk_a -> clk_b
    input  logic ps_pulse_a,
    output logic ps_busy_a,
    output logic ps_pulse_b,

    // fhg_ram_sdp x2 (read latency 1 and 2): write on clk_a, read on clk_b
    input  logic        sdp_wr_en,
    input  logic [ 5:0] sdp_wr_addr,
    input  logic [35:0] sdp_wr_data,
    input  logic        sdp_rd_en,
    input  logic [ 5:0] sdp_rd_addr,
    output logic [35:0] sdp1_rd_data,
    output logic [35:0] sdp2_rd_data,

    // fhg_ram_tdp: port a on clk_a, port b on clk_b
    input  logic        tdp_a_en,
    input  logic        tdp_a_we,
    input  logic [ 4:0] tdp_a_addr,
    input  logic [23:0] tdp_a_wdata,
    output logic [23:0] tdp_a_rdata,
    input  logic        tdp_b_en,
    input  logic        tdp_b_we,
    input  logic [ 4:0] tdp_b_addr,
    input  logic [23:0] tdp_b_wdata,
    output logic [23:0] tdp_b_rdata,

    // fhg_cdc_delta: increments in clk_a, deltas in clk_b
    input  logic [ 7:0] cd_incr,
    output logic        cd_valid,
    output logic [15:0] cd_delta,

    // fhg_cfg_sync: value in clk_a, copy in clk_b
    input  logic [47:0] cs_src,
    output logic [47:0] cs_data,
    output logic        cs_update,
    output logic        cs_valid
);

  fhg_sync_bits #(
      .WIDTH (4),
      .STAGES(STAGES)
  ) u_sync (
      .clk(clk_b),
      .rst(rst_b),
      .d  (sb_d),
      .q  (sb_q)
  );

  fhg_async_fifo #(
      .WIDTH (32),
      .DEPTH (8),
      .STAGES(STAGES)
  ) u_fifo (
      .wr_clk  (clk_a),
      .wr_rst  (rst_a),
      .wr_en   (fifo_wr_en),
      .wr_data (fifo_wr_data),
      .full    (fifo_full),
      .wr_count(fifo_wr_count),
      .rd_clk  (clk_b),
      .rd_rst  (rst_b),
      .rd_valid(fifo_rd_valid),
      .rd_data (fifo_rd_data),
      .rd_ready(fifo_rd_ready),
      .rd_count(fifo_rd_count)
  );

  fhg_pulse_sync #(
      .STAGES(STAGES)
  ) u_pulse (
      .clk_a  (clk_a),
      .rst_a  (rst_a),
      .pulse_a(ps_pulse_a),
      .busy_a (ps_busy_a),
      .clk_b  (clk_b),
      .rst_b  (rst_b),
      .pulse_b(ps_pulse_b)
  );

  // One SDP per read latency (1, 2), on the same write and read stimulus.
  logic [35:0] sdp_rd_data[2];
  for (genvar l = 0; l < 2; l++) begin : g_sdp
    fhg_ram_sdp #(
        .WIDTH     (36),
        .DEPTH     (64),
        .RD_LATENCY(l + 1),
        .RAM_STYLE ("block")
    ) u_sdp (
        .wr_clk (clk_a),
        .wr_en  (sdp_wr_en),
        .wr_addr(sdp_wr_addr),
        .wr_data(sdp_wr_data),
        .rd_clk (clk_b),
        .rd_en  (sdp_rd_en),
        .rd_addr(sdp_rd_addr),
        .rd_data(sdp_rd_data[l])
    );
  end
  assign sdp1_rd_data = sdp_rd_data[0];
  assign sdp2_rd_data = sdp_rd_data[1];

  fhg_ram_tdp #(
      .WIDTH(24),
      .DEPTH(32)
  ) u_tdp (
      .a_clk  (clk_a),
      .a_en   (tdp_a_en),
      .a_we   (tdp_a_we),
      .a_addr (tdp_a_addr),
      .a_wdata(tdp_a_wdata),
      .a_rdata(tdp_a_rdata),
      .b_clk  (clk_b),
      .b_en   (tdp_b_en),
      .b_we   (tdp_b_we),
      .b_addr (tdp_b_addr),
      .b_wdata(tdp_b_wdata),
      .b_rdata(tdp_b_rdata)
  );

  fhg_cdc_delta #(
      .INCR_W (8),
      .DELTA_W(16),
      .STAGES (STAGES)
  ) u_delta (
      .src_clk  (clk_a),
      .src_rst  (rst_a),
      .src_incr (cd_incr),
      .dst_clk  (clk_b),
      .dst_rst  (rst_b),
      .dst_valid(cd_valid),
      .dst_delta(cd_delta)
  );

  fhg_cfg_sync #(
      .WIDTH  (48),
      .STAGES (STAGES),
      .RST_VAL(48'h5A5A_0000_C3C3)
  ) u_cfg (
      .src_clk   (clk_a),
      .src_rst   (rst_a),
      .src_data  (cs_src),
      .dst_clk   (clk_b),
      .dst_rst   (rst_b),
      .dst_data  (cs_data),
      .dst_update(cs_update),
      .dst_valid (cs_valid)
  );

endmodule
