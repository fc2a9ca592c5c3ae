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
//   * Latency 1 cycle (outputs registered, the bus data once for all lanes).
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
    logic       in_frame, open;
    logic [1:0] cur_lane, next_lane, lane, nl;
    logic [2:0] tag, tg;

    logic [NL-1:0]   v_valid, v_sop, v_eop, v_err, v_seen;
    logic [2:0]      v_lo  [NL];
    logic [3:0]      v_n   [NL];
    logic [3:0]      v_mty [NL];
    logic [2:0]      v_tag [NL];

    function automatic logic [1:0] inc3(input logic [1:0] x);
        inc3 = (x == 2'd2) ? 2'd0 : x + 2'd1;
    endfunction

    always_comb begin
        open = in_frame; lane = cur_lane; nl = next_lane; tg = tag;
        v_valid = '0; v_sop = '0; v_eop = '0; v_err = '0; v_seen = '0;
        for (int l = 0; l < NL; l++) begin
            v_lo[l] = '0; v_n[l] = '0; v_mty[l] = '0; v_tag[l] = '0;
        end
        for (int i = 0; i < 8; i++) begin
            if (rx_tvalid && rx_ena[i]) begin
                if (rx_sop[i]) begin
                    if (open) begin
                        // the open frame lost its end: close it as errored
                        v_valid[lane] = 1'b1; v_eop[lane] = 1'b1; v_err[lane] = 1'b1;
                        v_mty[lane] = '0;
                    end
                    lane = nl; nl = inc3(nl); open = 1'b1;
                    v_sop[lane] = 1'b1; v_tag[lane] = tg; tg = tg + 3'd1;
                end
                if (open) begin
                    v_valid[lane] = 1'b1;
                    if (!v_seen[lane]) v_lo[lane] = 3'(i);
                    v_seen[lane] = 1'b1;
                    v_n[lane] = v_n[lane] + 4'd1;
                    if (rx_eop[i]) begin
                        v_eop[lane] = 1'b1; v_err[lane] = rx_err[i];
                        v_mty[lane] = rx_mty[4*i +: 4];
                        open = 1'b0;
                    end
                end
            end
        end
    end

    always_ff @(posedge clk) begin
        in_frame  <= open;
        cur_lane  <= lane;
        next_lane <= nl;
        tag       <= tg;
        out_data  <= rx_data;
        ln_valid  <= v_valid;
        ln_sop    <= v_sop;
        ln_eop    <= v_eop;
        ln_err    <= v_err;
        for (int l = 0; l < NL; l++) begin
            ln_lo[3*l +: 3]  <= v_lo[l];
            ln_n[4*l +: 4]   <= v_n[l];
            ln_mty[4*l +: 4] <= v_mty[l];
            ln_tag[3*l +: 3] <= v_tag[l];
        end
        if (rst) begin
            in_frame <= 1'b0; cur_lane <= '0; next_lane <= '0; tag <= '0; ln_valid <= '0;
        end
    end
endmodule
