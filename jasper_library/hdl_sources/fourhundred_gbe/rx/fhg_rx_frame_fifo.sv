// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rx_frame_fifo — dual-clock FIFO of whole frames: the writer may discard the frame it
// is writing, the reader only ever sees complete frames (RX FIFO, MAC clock -> user_clk).
//
// Contract
//   * Write side (wr_clk): `wr_en` stores `wr_data` (the caller checks `wr_room` first: a
//     write without room is ignored). `wr_end` closes the frame: with `wr_keep` the frame
//     (including a word written in the same cycle) becomes visible to the reader; without it
//     every word since the previous frame end is discarded (the word of that cycle too).
//   * `wr_room`: at least one free entry, counted against a delayed copy of the read pointer
//     (never optimistic).
//   * Read side (rd_clk): first-word fall-through from a register; `rd_pop` with `rd_valid`
//     takes the word, the next shows in the next cycle (one word per cycle sustained).
//     `rd_flush` drops everything visible (at a frame boundary: the commit point).
//   * Latency: a committed frame is visible about 2 handshake round trips later.
//   * CDC: the commit pointer (moves by a whole frame) and the read pointer cross as
//     consistent snapshots (fhg_cfg_sync), so multi-bit jumps are safe; both only grow,
//     so a late snapshot is merely conservative. `wr_rst` puts the writer back at the reader's
//     position; use it together with the reader idle (normally with `rd_flush`).
module fhg_rx_frame_fifo #(
    parameter int WIDTH  = 64,
    parameter int DEPTH  = 512,
    localparam int AW = $clog2(DEPTH)
) (
    input  wire               wr_clk,
    input  wire               wr_rst,
    input  wire               wr_en,
    input  wire  [WIDTH-1:0]  wr_data,
    input  wire               wr_end,
    input  wire               wr_keep,
    output logic              wr_room,

    input  wire               rd_clk,
    input  wire               rd_rst,
    input  wire               rd_flush,
    output logic              rd_valid,
    output logic [WIDTH-1:0]  rd_data,
    input  wire               rd_pop,
    output logic              rd_empty       // nothing committed is waiting (registered)
);
    if (DEPTH < 4 || (1 << AW) != DEPTH) begin : g_bad_depth
        $error("fhg_rx_frame_fifo: DEPTH must be a power of two, at least 4");
    end

    (* ram_style = "block" *) logic [WIDTH-1:0] mem [DEPTH];

    // ---------------- write side
    logic [AW:0] wptr, wcommit, rp_w, wused;
    logic        wdo;
    assign wused   = wptr - rp_w;
    assign wr_room = !wused[AW];
    assign wdo     = wr_en && wr_room && !(wr_end && !wr_keep);

    always_ff @(posedge wr_clk) begin
        if (wdo) mem[wptr[AW-1:0]] <= wr_data;
    end

    always_ff @(posedge wr_clk) begin
        if (wr_end && wr_keep) begin
            wptr    <= wptr + (AW+1)'(wdo);
            wcommit <= wptr + (AW+1)'(wdo);
        end else if (wr_end) begin
            wptr    <= wcommit;
        end else begin
            wptr    <= wptr + (AW+1)'(wdo);
        end
        if (wr_rst) begin
            wptr <= rp_w; wcommit <= rp_w;
        end
    end

    // ---------------- read side
    logic [AW:0] rptr, wc_r, avail;
    logic        load;
    assign avail = wc_r - rptr;
    assign load  = avail != 0 && avail <= (AW+1)'(DEPTH) && (!rd_valid || rd_pop) && !rd_flush;

    always_ff @(posedge rd_clk) begin
        if (load) rd_data <= mem[rptr[AW-1:0]];
    end

    always_ff @(posedge rd_clk) begin
        if (load) rptr <= rptr + 1'b1;
        if (load) rd_valid <= 1'b1;
        else if (rd_pop) rd_valid <= 1'b0;
        rd_empty <= !(avail != 0 && avail <= (AW+1)'(DEPTH)) && !rd_valid;
        if (rd_flush) begin
            rptr <= wc_r; rd_valid <= 1'b0;
        end
        if (rd_rst) begin
            rd_valid <= 1'b0; rd_empty <= 1'b1;
        end
    end

    // ---------------- pointer crossings
    fhg_cfg_sync #(.WIDTH(AW + 1)) u_commit (
        .src_clk(wr_clk), .src_rst(1'b0), .src_data(wcommit),
        .dst_clk(rd_clk), .dst_rst(1'b0), .dst_data(wc_r), .dst_update(), .dst_valid()
    );
    fhg_cfg_sync #(.WIDTH(AW + 1)) u_rptr (
        .src_clk(rd_clk), .src_rst(1'b0), .src_data(rptr),
        .dst_clk(wr_clk), .dst_rst(1'b0), .dst_data(rp_w), .dst_update(), .dst_valid()
    );

    // Power-up: pointers start equal (an initial value, as for the block RAM contents).
    initial begin
        wptr = '0; wcommit = '0; rptr = '0;
    end
endmodule
