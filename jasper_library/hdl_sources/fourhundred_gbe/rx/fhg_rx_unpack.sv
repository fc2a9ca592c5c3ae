// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rx_unpack — splits the DCMAC RX client bus (8 x 128-bit segments, port 0) into runs
// of segments for three receive lanes, one frame per lane at a time (rx MAC clock domain).
//
// Contract
//   * Input: PG369's segmented RX bus without backpressure; every cycle is taken. Up to two
//     frames start in one cycle (at most one SOP per half-bus), so one cycle holds pieces of
//     at most three frames: the end of one, a whole one and the start of another.
//   * Frames go to lanes 0, 1, 2, 0, ... in arrival order, so one cycle never gives one lane
//     two pieces, and a lane sees its next frame only after its current one ended.
//   * Per lane and cycle: `ln_n` segments from bus segment `ln_lo` (the frame's segments
//     within a cycle are contiguous on the bus), `ln_sop`, `ln_eop` with the EOP segment's
//     `ln_err`/`ln_mty`, and a 3-bit arrival tag per frame (`ln_tag`, set with SOP), which
//     orders frames that reach a later stage in the same cycle.
//   * A SOP while a frame is still open (its EOP never came) ends that frame with err and
//     no data, so it is dropped and counted as rx_drop_fcs. Active segments outside any
//     frame are ignored.
//   * Latency 3 cycles, every stage registered: the bus is registered as it arrives (stage
//     A); stage B finds, for every segment, which of the cycle's (at most three) frame
//     pieces it belongs to — the frame still open from the last cycle (piece 0), the one
//     the first SOP starts (piece 1), the one the second SOP starts (piece 2) — none of
//     which depends on the state; stage C counts each piece's segments, and gives the
//     pieces to lanes with the only state there is (open frame, its lane, the next lane,
//     the tag). The bus data is delayed with them, once for all lanes.
module fhg_rx_unpack #(
    localparam int NL = 3
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 rx_tvalid,
    input  wire  [1023:0]       rx_data,      // segment i in bits 128i+127:128i
    input  wire  [7:0]          rx_ena,
    input  wire  [7:0]          rx_sop,
    input  wire  [7:0]          rx_eop,
    input  wire  [7:0]          rx_err,
    input  wire  [31:0]         rx_mty,       // segment i in bits 4i+3:4i

    output logic [1023:0]       out_data,
    output logic [NL-1:0]       ln_valid,
    output logic [3*NL-1:0]     ln_lo,
    output logic [4*NL-1:0]     ln_n,
    output logic [NL-1:0]       ln_sop,
    output logic [NL-1:0]       ln_eop,
    output logic [NL-1:0]       ln_err,
    output logic [4*NL-1:0]     ln_mty,
    output logic [3*NL-1:0]     ln_tag
);
    localparam int NP = 3;   // pieces per cycle: the open frame, and up to two new ones

    // ================================================================ stage A: the bus
    logic [7:0]    a_s, a_e, a_act, a_err;
    logic [31:0]   a_mty;
    logic [1023:0] a_data;
    always_ff @(posedge clk) begin
        a_act  <= rx_tvalid ? rx_ena : 8'd0;
        a_s    <= rx_tvalid ? (rx_ena & rx_sop) : 8'd0;
        a_e    <= rx_tvalid ? (rx_ena & rx_eop) : 8'd0;
        a_err  <= rx_err;
        a_mty  <= rx_mty;
        a_data <= rx_data;
        if (rst) begin
            a_act <= '0; a_s <= '0; a_e <= '0;
        end
    end

    // ================================================================ stage B: membership
    // Segment i carries data of piece k when it is active, k SOPs happened at or before it
    // (the second and later SOPs of a cycle count as two), and no EOP closed that piece
    // before it (for piece 0 also: a frame was open when the cycle began, checked in C).
    logic [1:0] k [8];       // SOPs at or before segment i (saturating at 2)
    logic [7:0] closed;      // an EOP before segment i, with no SOP after that EOP up to i
    logic [7:0] shut;        // an EOP before segment i, with no SOP after it before i
    logic [7:0] mem_b [NP];  // membership per piece
    logic [NP-1:0] forced_b; // piece k is still open when piece k+1 starts: it ends with err
    logic [NP-1:0] start_b;  // piece k (k >= 1) starts this cycle
    logic       end_open_b;  // after segment 7 the last SOP's frame is still open
    logic       any_sop_b;
    logic       closed_end_b;  // an EOP with no SOP after it
    always_comb begin
        logic [1:0] cnt;
        logic       cl;
        cnt = '0;
        cl  = 1'b0;
        for (int i = 0; i < 8; i++) begin
            shut[i] = cl;
            if (a_s[i]) begin
                cl  = 1'b0;
                cnt = (cnt == 2'd2) ? 2'd2 : cnt + 2'd1;
            end
            k[i]      = cnt;
            closed[i] = cl;
            if (a_e[i]) cl = 1'b1;
        end
        closed_end_b = cl;
        any_sop_b    = |a_s;
        end_open_b   = !cl;
        for (int p = 0; p < NP; p++)
            for (int i = 0; i < 8; i++)
                mem_b[p][i] = a_act[i] && !closed[i] && k[i] == 2'(p);
        // Piece p ends unannounced when SOP p+1 finds it open: segment i holds SOP p+1.
        for (int p = 0; p < NP; p++) begin
            forced_b[p] = 1'b0;
            start_b[p]  = 1'b0;
        end
        for (int i = 0; i < 8; i++)
            if (a_s[i]) begin
                // k[i] is this SOP's number (1 or 2); the piece before it is k[i]-1.
                if (k[i] == 2'd1 && !shut[i]) forced_b[0] = 1'b1;
                if (k[i] == 2'd2 && !shut[i]) forced_b[1] = 1'b1;
                if (k[i] == 2'd1) start_b[1] = 1'b1;
                if (k[i] == 2'd2) start_b[2] = 1'b1;
            end
    end

    logic [7:0]    b_mem [NP];
    logic [7:0]    b_e;
    logic [7:0]    b_err;
    logic [31:0]   b_mty;
    logic [NP-1:0] b_forced, b_start;
    logic          b_any_sop, b_end_open, b_closed_end;
    logic [1:0]    b_nsop;
    logic [1023:0] b_data;
    always_ff @(posedge clk) begin
        for (int p = 0; p < NP; p++) b_mem[p] <= mem_b[p];
        b_e          <= a_e;
        b_err        <= a_err;
        b_mty        <= a_mty;
        b_forced     <= forced_b;
        b_start      <= start_b;
        b_any_sop    <= any_sop_b;
        b_end_open   <= end_open_b;
        b_closed_end <= closed_end_b;
        b_nsop       <= k[7];
        b_data       <= a_data;
        if (rst) begin
            for (int p = 0; p < NP; p++) b_mem[p] <= '0;
            b_e <= '0; b_forced <= '0; b_start <= '0; b_any_sop <= 1'b0; b_nsop <= '0;
        end
    end

    // ================================================================ stage C: to lanes
    // Per piece: first segment, number of segments, its EOP (and that segment's err/mty).
    logic [2:0] p_lo  [NP];
    logic [3:0] p_n   [NP];
    logic       p_eop [NP];
    logic       p_err [NP];
    logic [3:0] p_mty [NP];
    logic       p_v   [NP];
    always_comb begin
        for (int p = 0; p < NP; p++) begin
            logic [7:0] eseg;
            p_lo[p] = '0;
            for (int i = 7; i >= 0; i--) if (b_mem[p][i]) p_lo[p] = 3'(i);
            p_n[p] = '0;
            for (int i = 0; i < 8; i++) p_n[p] = p_n[p] + 4'(b_mem[p][i]);
            eseg = b_mem[p] & b_e;        // one bit at most: an EOP closes the piece
            p_eop[p] = (|eseg) || b_forced[p];
            p_err[p] = b_forced[p] || (|(eseg & b_err));
            p_mty[p] = '0;
            for (int i = 0; i < 8; i++) if (eseg[i]) p_mty[p] = p_mty[p] | b_mty[4*i +: 4];
            if (b_forced[p]) p_mty[p] = '0;
        end
        // Piece 0 exists only if a frame was open; pieces 1 and 2 when their SOP came.
        p_v[0] = in_frame && ((|b_mem[0]) || p_eop[0]);
        p_v[1] = b_start[1];
        p_v[2] = b_start[2];
    end

    logic       in_frame;
    logic [1:0] cur_lane, next_lane;
    logic [2:0] tag;
    logic [1:0] p_lane [NP];
    function automatic logic [1:0] inc3(input logic [1:0] x);
        inc3 = (x == 2'd2) ? 2'd0 : x + 2'd1;
    endfunction
    always_comb begin
        p_lane[0] = cur_lane;
        p_lane[1] = next_lane;
        p_lane[2] = inc3(next_lane);
    end

    always_ff @(posedge clk) begin
        out_data <= b_data;
        for (int l = 0; l < NL; l++) begin
            logic v, s, e, er;
            logic [2:0] lo, tg;
            logic [3:0] n, my;
            v = 1'b0; s = 1'b0; e = 1'b0; er = 1'b0; lo = '0; tg = '0; n = '0; my = '0;
            for (int p = 0; p < NP; p++)
                if (p_v[p] && p_lane[p] == 2'(l)) begin
                    v  = 1'b1;
                    s  = p != 0;
                    e  = p_eop[p];
                    er = p_err[p];
                    lo = p_lo[p];
                    n  = p_n[p];
                    my = p_mty[p];
                    tg = (p == 2) ? tag + 3'd1 : tag;
                end
            ln_valid[l]      <= v;
            ln_sop[l]        <= s;
            ln_eop[l]        <= e;
            ln_err[l]        <= er;
            ln_lo[3*l +: 3]  <= lo;
            ln_n[4*l +: 4]   <= n;
            ln_mty[4*l +: 4] <= my;
            ln_tag[3*l +: 3] <= tg;
        end
        // State: the frame open at the end of the cycle, its lane, the next lane, the tag.
        in_frame <= !b_closed_end && (b_any_sop || in_frame);
        if (b_nsop == 2'd2) begin
            cur_lane  <= inc3(next_lane);
            next_lane <= inc3(inc3(next_lane));
            tag       <= tag + 3'd2;
        end else if (b_nsop == 2'd1) begin
            cur_lane  <= next_lane;
            next_lane <= inc3(next_lane);
            tag       <= tag + 3'd1;
        end
        if (rst) begin
            in_frame <= 1'b0; cur_lane <= '0; next_lane <= '0; tag <= '0; ln_valid <= '0;
        end
    end

    logic unused_ok;
    assign unused_ok = &{1'b0, b_end_open, b_start[0], b_forced[2]};
endmodule
