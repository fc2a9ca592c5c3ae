// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_pktgen_2port — the two-port example design's user logic: one packet generator
// (fhg_pktgen, examples/pktgen_400g) per 400GbE port, each with its own registers,
// destination table and stream id.
//
// Contract
//   * Port p's signals `p<p>_*` are fhg_pktgen's ports of the same name (its contract
//     holds for each generator on its own): registers, destination table, the 400GbE
//     block's transmit ports and `gbe_rst`. The generators share the clock and nothing
//     else, so either port runs, pauses or resets without touching the other.
//   * STREAM_ID0 / STREAM_ID1 (1..255) are the generators' stream ids: the first byte of
//     every packet's payload (fhg_pktgen's STREAM_ID), so a receiver taking both streams
//     tells them apart whatever their destinations. They must differ.
module fhg_pktgen_2port #(
    parameter logic [7:0] STREAM_ID0 = 8'd1,
    parameter logic [7:0] STREAM_ID1 = 8'd2
) (
    input  wire            clk,
    // ---- port 0: generator 0, into the 400GbE block on cage 0
    input  wire  [31:0]    p0_ctrl, p0_period, p0_count, p0_size, p0_dest_ip, p0_dest_port,
    input  wire  [31:0]    p0_mode, p0_tone_step, p0_tone_shape, p0_spead_ctrl, p0_spead_channel, p0_spead_ts_step,
    input  wire  [31:0]    p0_dest_tbl_ip, p0_dest_tbl_port, p0_dest_tbl_count, p0_dest_tbl_ctrl,
    output logic [31:0]    p0_dest_tbl_status, p0_dest_tbl_switch, p0_dest_tbl_sent, p0_sent,
    output logic           p0_gbe_rst,
    output logic [1023:0]  p0_tx_data,
    output logic           p0_tx_valid,
    output logic [127:0]   p0_tx_byte_enable,
    output logic [31:0]    p0_tx_dest_ip,
    output logic [15:0]    p0_tx_dest_port,
    output logic           p0_tx_end_of_frame,
    input  wire            p0_tx_afull,
    input  wire            p0_tx_overflow,
    // ---- port 1: generator 1, into the 400GbE block on cage 1
    input  wire  [31:0]    p1_ctrl, p1_period, p1_count, p1_size, p1_dest_ip, p1_dest_port,
    input  wire  [31:0]    p1_mode, p1_tone_step, p1_tone_shape, p1_spead_ctrl, p1_spead_channel, p1_spead_ts_step,
    input  wire  [31:0]    p1_dest_tbl_ip, p1_dest_tbl_port, p1_dest_tbl_count, p1_dest_tbl_ctrl,
    output logic [31:0]    p1_dest_tbl_status, p1_dest_tbl_switch, p1_dest_tbl_sent, p1_sent,
    output logic           p1_gbe_rst,
    output logic [1023:0]  p1_tx_data,
    output logic           p1_tx_valid,
    output logic [127:0]   p1_tx_byte_enable,
    output logic [31:0]    p1_tx_dest_ip,
    output logic [15:0]    p1_tx_dest_port,
    output logic           p1_tx_end_of_frame,
    input  wire            p1_tx_afull,
    input  wire            p1_tx_overflow
);
    // Equal or zero ids would make the streams indistinguishable at the receiver.
    if (STREAM_ID0 == 8'd0 || STREAM_ID1 == 8'd0 || STREAM_ID0 == STREAM_ID1) begin : g_bad_ids
        $error("fhg_pktgen_2port: STREAM_ID0 and STREAM_ID1 must be distinct and non-zero");
    end

    fhg_pktgen #(.STREAM_ID(STREAM_ID0)) u_gen0 (
        .clk             (clk),
        .ctrl            (p0_ctrl),
        .period          (p0_period),
        .count           (p0_count),
        .size            (p0_size),
        .dest_ip         (p0_dest_ip),
        .dest_port       (p0_dest_port),
        .mode            (p0_mode),
        .tone_step       (p0_tone_step),
        .tone_shape      (p0_tone_shape),
        .spead_ctrl      (p0_spead_ctrl),
        .spead_channel   (p0_spead_channel),
        .spead_ts_step   (p0_spead_ts_step),
        .dest_tbl_ip     (p0_dest_tbl_ip),
        .dest_tbl_port   (p0_dest_tbl_port),
        .dest_tbl_count  (p0_dest_tbl_count),
        .dest_tbl_ctrl   (p0_dest_tbl_ctrl),
        .dest_tbl_status (p0_dest_tbl_status),
        .dest_tbl_switch (p0_dest_tbl_switch),
        .dest_tbl_sent   (p0_dest_tbl_sent),
        .sent            (p0_sent),
        .gbe_rst         (p0_gbe_rst),
        .tx_data         (p0_tx_data),
        .tx_valid        (p0_tx_valid),
        .tx_byte_enable  (p0_tx_byte_enable),
        .tx_dest_ip      (p0_tx_dest_ip),
        .tx_dest_port    (p0_tx_dest_port),
        .tx_end_of_frame (p0_tx_end_of_frame),
        .tx_afull        (p0_tx_afull),
        .tx_overflow     (p0_tx_overflow)
    );
    fhg_pktgen #(.STREAM_ID(STREAM_ID1)) u_gen1 (
        .clk             (clk),
        .ctrl            (p1_ctrl),
        .period          (p1_period),
        .count           (p1_count),
        .size            (p1_size),
        .dest_ip         (p1_dest_ip),
        .dest_port       (p1_dest_port),
        .mode            (p1_mode),
        .tone_step       (p1_tone_step),
        .tone_shape      (p1_tone_shape),
        .spead_ctrl      (p1_spead_ctrl),
        .spead_channel   (p1_spead_channel),
        .spead_ts_step   (p1_spead_ts_step),
        .dest_tbl_ip     (p1_dest_tbl_ip),
        .dest_tbl_port   (p1_dest_tbl_port),
        .dest_tbl_count  (p1_dest_tbl_count),
        .dest_tbl_ctrl   (p1_dest_tbl_ctrl),
        .dest_tbl_status (p1_dest_tbl_status),
        .dest_tbl_switch (p1_dest_tbl_switch),
        .dest_tbl_sent   (p1_dest_tbl_sent),
        .sent            (p1_sent),
        .gbe_rst         (p1_gbe_rst),
        .tx_data         (p1_tx_data),
        .tx_valid        (p1_tx_valid),
        .tx_byte_enable  (p1_tx_byte_enable),
        .tx_dest_ip      (p1_tx_dest_ip),
        .tx_dest_port    (p1_tx_dest_port),
        .tx_end_of_frame (p1_tx_end_of_frame),
        .tx_afull        (p1_tx_afull),
        .tx_overflow     (p1_tx_overflow)
    );
endmodule
