// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_intake — the user port's first two stages and its tx_afull (user_clk), the same in
// both transmit modes: fhg_tx_writer (UDP) and fhg_rdma_sf (RDMA) take the words from here.
//
// Contract
//   * Input: the user port as docs/design/core.md §1 (one 1024-bit word per cycle, first
//     wire byte in tx_data[1023:1016], tx_byte_enable contiguous from bit 127 qualifying the
//     last word, no bubbles needed). `tx_side` is carried along with each word unchanged
//     (fhg_tx_writer's destination, sampled with tx_end_of_frame).
//   * Stage 1 (registered): s1_valid/s1_eof, s1_none (a last word without an enabled byte),
//     s1_m (the word's bytes minus one unless s1_none; a non-last word counts 128) and
//     s1_words (whole words of the frame before this one). s1_m is put together from
//     registers (an OR of eight groups): the users derive their own per-frame values
//     from it in the same cycle.
//   * Stage 2 (registered): the word in wire order, byte x in bits 8x+7:8x, bytes past the
//     frame's end zeroed (s2_data); s2_len_next, the frame's length up to and including
//     this word; s2_too_long, that length above MAX_PAYLOAD; s2_over_limit, above `limit`
//     (a run-time bound, quasi-static). The length runs on through the words of a frame
//     its user drops; the user discards them anyway.
//   * tx_afull: high two cycles after `room_low` (the user's buffer holds less than one
//     maximum frame plus the pipeline's slack) or `accept` low, and from rst on until they
//     clear; stat_afull_rise, one cycle when it rises.
//   * Latency: 2 cycles, tx_* to s2_*. Throughput: a word every cycle. One clock, no CDC;
//     `rst` (synchronous) clears the valids and the word count.
//   * Timing: the byte count of a last word is one more than the place (from the top) of
//     the last enabled byte, where the enables end. That place is found per group of 16
//     bytes in stage 1 (which group, and where in it) and put together in stage 2, so
//     neither half is a deep encoder; with m = bytes - 1 the length is {words, m} + 1, so
//     the limit checks need no adder.
module fhg_tx_intake #(
    parameter int MAX_PAYLOAD = 8972,
    parameter int SIDE_W      = 1,
    localparam int LEN_W      = 14
) (
    input  wire                 clk,
    input  wire                 rst,

    input  wire  [1023:0]       tx_data,
    input  wire                 tx_valid,
    input  wire  [127:0]        tx_byte_enable,
    input  wire                 tx_end_of_frame,
    input  wire  [SIDE_W-1:0]   tx_side,
    input  wire  [LEN_W-1:0]    limit,
    input  wire                 accept,
    input  wire                 room_low,
    output logic                tx_afull,
    output logic                stat_afull_rise,

    output logic                s1_valid,
    output logic                s1_eof,
    output logic                s1_none,
    output logic [6:0]          s1_m,
    output logic [6:0]          s1_words,

    output logic                s2_valid,
    output logic                s2_eof,
    output logic [1023:0]       s2_data,
    output logic [SIDE_W-1:0]   s2_side,
    output logic [LEN_W:0]      s2_len_next,
    output logic                s2_too_long,
    output logic                s2_over_limit
);
    // ------------------------------------------------------------------ stage 1
    logic [1023:0]     s1_data;
    logic [SIDE_W-1:0] s1_side;
    logic [7:0]        s1_grp;           // the enables end in this group of 16 (from the top)
    logic [3:0]        s1_loc [8];       // ...at this place in it
    always_ff @(posedge clk) begin
        s1_valid <= tx_valid && !rst;
        s1_eof   <= tx_end_of_frame;
        s1_side  <= tx_side;
        s1_none  <= tx_end_of_frame && !tx_byte_enable[127];
        for (int g = 0; g < 8; g++) begin
            logic       hit;
            logic [3:0] loc;
            hit = 1'b0;
            loc = '0;
            for (int k = 0; k < 16; k++) begin
                // byte j = 16g + k from the top is the last enabled one
                if (tx_byte_enable[127 - (16*g + k)]
                    && (16*g + k == 127 || !tx_byte_enable[126 - (16*g + k)])) begin
                    hit = 1'b1;
                    loc = loc | 4'(k);
                end
            end
            // a word that is not a frame's last counts all 128 bytes (the last group's end)
            s1_grp[g] <= tx_end_of_frame ? hit : (g == 7);
            s1_loc[g] <= tx_end_of_frame ? loc : 4'd15;
        end
        for (int i = 0; i < 128; i++)
            s1_data[8*i +: 8] <= (tx_end_of_frame && !tx_byte_enable[127-i]) ? 8'h00
                                 : tx_data[1023-8*i -: 8];
    end
    always_comb begin
        s1_m = '0;
        for (int g = 0; g < 8; g++) if (s1_grp[g]) s1_m = s1_m | {3'(g), s1_loc[g]};
    end

    always_ff @(posedge clk) begin
        if (s1_valid) s1_words <= s1_eof ? 7'd0 : s1_words + 7'd1;
        if (rst) s1_words <= '0;
    end

    // ------------------------------------------------------------------ stage 2
    always_ff @(posedge clk) begin
        s2_valid      <= s1_valid && !rst;
        s2_eof        <= s1_eof;
        s2_side       <= s1_side;
        s2_data       <= s1_data;
        s2_len_next   <= s1_none ? (LEN_W+1)'({s1_words, 7'b0})
                                 : (LEN_W+1)'({s1_words, s1_m}) + (LEN_W+1)'(1);
        s2_too_long   <= s1_none ? (LEN_W+1)'({s1_words, 7'b0}) > (LEN_W+1)'(MAX_PAYLOAD)
                                 : (LEN_W+1)'({s1_words, s1_m}) >= (LEN_W+1)'(MAX_PAYLOAD);
        s2_over_limit <= s1_none ? (LEN_W+1)'({s1_words, 7'b0}) > (LEN_W+1)'(limit)
                                 : (LEN_W+1)'({s1_words, s1_m}) >= (LEN_W+1)'(limit);
    end

    // ------------------------------------------------------------------ almost full
    logic afull_q;
    always_ff @(posedge clk) begin
        afull_q         <= room_low || !accept;
        stat_afull_rise <= afull_q && !tx_afull;
        tx_afull        <= afull_q;
        if (rst) begin
            tx_afull        <= 1'b1;
            stat_afull_rise <= 1'b0;
        end
    end
endmodule
