// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rx_rdma_credit — picks the RDMA mode's credit datagrams off the DCMAC RX segment bus
// (MAC clock domain), beside the receive path, which sees (and counts) them as usual.
//
// Contract
//   * A credit datagram is a minimum Ethernet frame (60 bytes, 64 with the FCS on the bus:
//     four segments) carrying IPv4 (IHL 5, not a fragment, correct header checksum,
//     total length 36) and UDP (length 16) from cfg_src_ip to our MAC and IP, to the UDP
//     port cfg_port (0: none taken), whose payload is ASCII "CRDT" followed by the number
//     of the last chunk the consumer released (big-endian 32 bits). The frame must end
//     without `err` (bad FCS). Anything else is ignored here.
//   * Output: credit_valid for one cycle with the value; two credits ending in one cycle
//     give the later one (credits only move forward) and credit_count = 2.
//   * The bus is read-only here: frames start on segment boundaries, a frame's segments
//     are contiguous, and a four-segment frame spans at most two valid cycles.
//   * Latency 8 cycles. Throughput: every cycle.
//   * Timing: the frames ending in a cycle are found from per-segment flags registered with
//     the bus window; the header checks are registered field by field and the IPv4 header
//     checksum is added in registered pairs and compared without folding (a ones'-complement
//     sum of ten words is 0xFFFF exactly when the plain sum is a non-zero multiple of
//     0xFFFF).
module fhg_rx_rdma_credit (
    input  wire                 clk,
    input  wire                 rst,
    input  wire  [47:0]         cfg_mac,
    input  wire  [31:0]         cfg_ip,
    input  wire  [31:0]         cfg_src_ip,
    input  wire  [15:0]         cfg_port,

    input  wire                 rx_tvalid,
    input  wire  [1023:0]       rx_data,
    input  wire  [7:0]          rx_ena,
    input  wire  [7:0]          rx_sop,
    input  wire  [7:0]          rx_eop,
    input  wire  [7:0]          rx_err,

    output logic                credit_valid,
    output logic [31:0]         credit_value,
    output logic [1:0]          credit_count
);
    // The last valid cycle and this one: 16 segments, the older first.
    logic [1023:0] p_data;
    logic [7:0]    p_ena, p_sop, p_eop;
    always_ff @(posedge clk) begin
        if (rx_tvalid) begin
            p_data <= rx_data;
            p_ena  <= rx_ena;
            p_sop  <= rx_sop;
            p_eop  <= rx_eop;
        end
        if (rst) p_ena <= '0;
    end
    logic [2047:0] w_data;
    logic [15:0]   w_ena, w_sop, w_eop;
    assign w_data = {rx_data, p_data};
    assign w_ena  = {rx_tvalid ? rx_ena : 8'd0, p_ena};
    assign w_sop  = {rx_sop, p_sop};
    assign w_eop  = {rx_eop, p_eop};

    // Stage A0: the window's segments 5..15 (where a four-segment frame ending in this cycle
    // lies) and, per segment e of this cycle, whether a frame ends there and whether it is a
    // clean four-segment frame.
    logic [1407:0] a0_win;
    logic [7:0]    a0_end, a0_good;
    logic          a0_v;
    always_ff @(posedge clk) begin
        a0_v   <= rx_tvalid && !rst;
        a0_win <= w_data[2047:640];
        for (int e = 0; e < 8; e++) begin
            a0_end[e]  <= w_ena[8+e] && w_eop[8+e];
            a0_good[e] <= w_ena[8+e] && w_eop[8+e] && w_ena[5+e] && w_ena[6+e] && w_ena[7+e]
                          && w_sop[5+e] && !w_eop[5+e] && !w_eop[6+e] && !w_eop[7+e]
                          && !rx_err[e];
        end
    end

    // Stage A1: the first two frames ending in the cycle.
    logic         a_v [2];
    logic [511:0] a_frame [2];
    always_ff @(posedge clk) begin
        logic [7:0] sel0, sel1;
        logic [511:0] f0, f1;
        for (int e = 0; e < 8; e++) begin
            int below;
            below = 0;
            for (int k = 0; k < e; k++) below = below + int'(a0_end[k]);
            sel0[e] = a0_end[e] && below == 0;
            sel1[e] = a0_end[e] && below == 1;
        end
        f0 = '0;
        f1 = '0;
        for (int e = 0; e < 8; e++) begin
            if (sel0[e]) f0 = f0 | a0_win[128*e +: 512];
            if (sel1[e]) f1 = f1 | a0_win[128*e +: 512];
        end
        a_frame[0] <= f0;
        a_frame[1] <= f1;
        a_v[0] <= a0_v && |(sel0 & a0_good);
        a_v[1] <= a0_v && |(sel1 & a0_good);
        if (rst) begin
            a_v[0] <= 1'b0;
            a_v[1] <= 1'b0;
        end
    end

    // Stage B: the checks.
    function automatic logic [7:0] byte_at(input logic [511:0] f, input int k);
        byte_at = f[8*k +: 8];
    endfunction
    function automatic logic [15:0] be16(input logic [511:0] f, input int k);
        be16 = {f[8*k +: 8], f[8*(k+1) +: 8]};
    endfunction
    function automatic logic [31:0] be32(input logic [511:0] f, input int k);
        be32 = {be16(f, k), be16(f, k + 2)};
    endfunction

    // B1: the fields, and the header's ten 16-bit words added in pairs; B2-B4 the sum.
    localparam int CHK = 4;                // stages B1..B4 (B5 is b_v)
    logic        bv [2][CHK];
    logic [31:0] bval [2][CHK];
    logic [16:0] b1_p [2][5];
    logic [17:0] b2_q [2][3];
    logic [18:0] b3_r [2][2];
    logic [19:0] b4_sum [2];
    logic        b_v [2];
    logic [31:0] b_val [2];
    always_ff @(posedge clk) begin
        for (int f = 0; f < 2; f++) begin
            bv[f][0] <= a_v[f] && cfg_port != 16'd0
                        && {be16(a_frame[f], 0), be32(a_frame[f], 2)} == cfg_mac
                        && be16(a_frame[f], 12) == 16'h0800
                        && byte_at(a_frame[f], 14) == 8'h45
                        && be16(a_frame[f], 16) == 16'd36
                        && (be16(a_frame[f], 20) & 16'h3FFF) == 16'd0
                        && byte_at(a_frame[f], 23) == 8'd17
                        && be32(a_frame[f], 26) == cfg_src_ip
                        && be32(a_frame[f], 30) == cfg_ip
                        && be16(a_frame[f], 36) == cfg_port
                        && be16(a_frame[f], 38) == 16'd16
                        && be32(a_frame[f], 42) == 32'h43524454;    // "CRDT"
            bval[f][0] <= be32(a_frame[f], 46);
            for (int k = 0; k < 5; k++)
                b1_p[f][k] <= 17'(be16(a_frame[f], 14 + 4 * k))
                              + 17'(be16(a_frame[f], 16 + 4 * k));
            for (int s = 1; s < CHK; s++) begin
                bv[f][s]   <= bv[f][s-1];
                bval[f][s] <= bval[f][s-1];
            end
            b2_q[f][0] <= 18'(b1_p[f][0]) + 18'(b1_p[f][1]);
            b2_q[f][1] <= 18'(b1_p[f][2]) + 18'(b1_p[f][3]);
            b2_q[f][2] <= 18'(b1_p[f][4]);
            b3_r[f][0] <= 19'(b2_q[f][0]) + 19'(b2_q[f][1]);
            b3_r[f][1] <= 19'(b2_q[f][2]);
            b4_sum[f]  <= 20'(b3_r[f][0]) + 20'(b3_r[f][1]);
            begin
                logic ok;
                ok = 1'b0;
                for (int k = 1; k <= 10; k++) ok = ok | (b4_sum[f] == 20'(k * 65535));
                b_v[f] <= bv[f][CHK-1] && ok;
            end
            b_val[f] <= bval[f][CHK-1];
        end
        if (rst) begin
            for (int f = 0; f < 2; f++) begin
                for (int s = 0; s < CHK; s++) bv[f][s] <= 1'b0;
                b_v[f] <= 1'b0;
            end
        end
    end

    always_ff @(posedge clk) begin
        credit_valid <= b_v[0] || b_v[1];
        credit_value <= b_v[1] ? b_val[1] : b_val[0];
        credit_count <= 2'(b_v[0]) + 2'(b_v[1]);
        if (rst) begin
            credit_valid <= 1'b0;
            credit_count <= '0;
        end
    end
endmodule
