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
//   * Latency 3 cycles. Throughput: every cycle.
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

    // Stage A: the (at most two) four-segment frames ending in this cycle.
    logic         a_v [2];
    logic [511:0] a_frame [2];
    always_ff @(posedge clk) begin
        int n;
        n = 0;
        a_v[0] <= 1'b0;
        a_v[1] <= 1'b0;
        for (int e = 0; e < 8; e++) begin
            int q;
            q = 8 + e;
            if (w_ena[q] && w_eop[q] && n < 2) begin
                n = n + 1;
                // Its segments q-3..q, SOP on the first, no EOP before the last, no error.
                if (w_ena[q-3] && w_ena[q-2] && w_ena[q-1] && w_sop[q-3]
                    && !w_eop[q-3] && !w_eop[q-2] && !w_eop[q-1] && !rx_err[e]) begin
                    a_v[n-1]     <= 1'b1;
                    a_frame[n-1] <= w_data[128*(q-3) +: 512];
                end
            end
        end
        if (rst || !rx_tvalid) begin
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

    logic        b_v [2];
    logic [31:0] b_val [2];
    always_ff @(posedge clk) begin
        for (int f = 0; f < 2; f++) begin
            logic [19:0] sum;
            logic [16:0] fold;
            logic [47:0] dmac;
            sum = '0;
            for (int k = 0; k < 10; k++) sum = sum + 20'(be16(a_frame[f], 14 + 2 * k));
            fold = 17'(sum[15:0]) + 17'(sum[19:16]);
            fold = 17'(fold[15:0]) + 17'(fold[16]);
            dmac = {be16(a_frame[f], 0), be32(a_frame[f], 2)};
            b_v[f] <= a_v[f] && cfg_port != 16'd0
                      && dmac == cfg_mac
                      && be16(a_frame[f], 12) == 16'h0800
                      && byte_at(a_frame[f], 14) == 8'h45
                      && be16(a_frame[f], 16) == 16'd36
                      && (be16(a_frame[f], 20) & 16'h3FFF) == 16'd0
                      && byte_at(a_frame[f], 23) == 8'd17
                      && fold[15:0] == 16'hFFFF
                      && be32(a_frame[f], 26) == cfg_src_ip
                      && be32(a_frame[f], 30) == cfg_ip
                      && be16(a_frame[f], 36) == cfg_port
                      && be16(a_frame[f], 38) == 16'd16
                      && be32(a_frame[f], 42) == 32'h43524454;    // "CRDT"
            b_val[f] <= be32(a_frame[f], 46);
        end
        if (rst) begin
            b_v[0] <= 1'b0;
            b_v[1] <= 1'b0;
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
