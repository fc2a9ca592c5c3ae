// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_header — turns a committed frame's descriptor into its Ethernet/IPv4/UDP header
// (MAC clock domain).
//
// Contract
//   * Input: descriptors {start_seg, payload_len, dst_ip, dst_port, payload_sum} from the
//     writer (first-word-fall-through, in_valid/in_ready), one per cycle at most.
//   * Next hop (docs/design/core.md §2): 224.0.0.0/4 → 01:00:5E + dst[22:0]; 255.255.255.255 or the
//     subnet broadcast → FF:FF:FF:FF:FF:FF; own subnet → ARP entry of dst[7:0]; otherwise
//     the ARP entry of gateway[7:0]. An ARP entry whose valid bit is clear makes the frame
//     `drop` (the packer skips its buffer space and tx_arp_miss counts it).
//   * Header: Ethernet II (type 0x0800), IPv4 (IHL 5, DF, TTL from config, protocol 17,
//     Identification +1 per descriptor so receivers can see every datagram, including the
//     ones the core dropped), UDP (source port = core port, length, checksum over pseudo
//     header + header + payload, a computed 0 sent as 0xFFFF, 0 when disabled). 42 bytes in
//     wire order, byte k in hdr[8k+7:8k].
//   * Frame geometry for the packer: nseg = ceil(max(42+len, 60)/16) segments, mty = unused
//     bytes of the last segment.
//   * Throughput one descriptor per cycle; latency 4 cycles. A descriptor is taken only
//     while the consumer announces room for more than the five that can be in flight here
//     (out_room counts free slots; in_ready is registered), so there is no back-pressure
//     inside the pipeline.
//   * Timing: the checksums' per-frame operands are added in pairs while the descriptor is
//     registered, the configuration's share ahead (it is quasi-static), so each sum is an
//     adder tree of at most four operands, folded in the next stage.
//   * arp_addr/arp_entry: read port of the ARP table RAM, one cycle read latency; entry
//     layout as the register map: [15:0] MAC[47:32], [16] valid, [63:32] MAC[31:0].
module fhg_tx_header #(
    parameter int SP    = 13,        // segment pointer width (with wrap bit)
    localparam int LEN_W = 14,
    localparam int DESC_W = SP + LEN_W + 32 + 16 + 16,
    localparam int NSEG_W = 10,
    localparam int OUT_W  = SP + NSEG_W + 4 + LEN_W + 1 + 336
) (
    input  wire                 clk,
    input  wire                 rst,

    /* verilator lint_off UNUSEDSIGNAL */
    input  fhg_bus_pkg::tx_cfg_t cfg,           // of the gateway only the ARP index [7:0]
    /* verilator lint_on UNUSEDSIGNAL */

    input  wire                 in_valid,
    input  wire  [DESC_W-1:0]   in_data,
    output logic                in_ready,

    output logic [7:0]          arp_addr,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [63:0]         arp_entry,     // bits 31:17 are reserved
    /* verilator lint_on UNUSEDSIGNAL */

    input  wire  [4:0]          out_room,      // free slots downstream
    output logic                out_valid,
    output logic [OUT_W-1:0]    out_data,      // {start_seg, nseg, mty, len, drop, hdr}

    output logic [15:0]         next_ip_id     // for the ip_id status register
);
    localparam int STAGES = 4;

    // ------------------------------------------------------------------ stage 0: pop + ARP read
    logic [SP-1:0]    d_start;
    logic [LEN_W-1:0] d_len;
    logic [31:0]      d_ip;
    logic [15:0]      d_port, d_psum;
    assign {d_start, d_len, d_ip, d_port, d_psum} = in_data;

    // in_ready is registered: after this cycle at most five entries are in flight (this
    // cycle's pop, three stages, the output), so room for more than five is enough.
    logic v1, v2, v3;
    always_ff @(posedge clk) in_ready <= !rst && (out_room > 5'd5);

    logic is_mc, is_bc, on_net;
    always_comb begin
        is_mc  = d_ip[31:28] == 4'hE;
        is_bc  = (d_ip == 32'hFFFF_FFFF) || (d_ip == (cfg.ip | ~cfg.netmask));
        on_net = ((d_ip ^ cfg.ip) & cfg.netmask) == 32'd0;
        arp_addr = on_net ? d_ip[7:0] : cfg.gateway[7:0];
    end

    logic [SP-1:0]    s1_start;
    logic [LEN_W-1:0] s1_len;
    logic [31:0]      s1_ip;
    logic [15:0]      s1_port, s1_psum, s1_id;
    logic             s1_mc, s1_bc;
    // Pairs of the checksum operands added here (one 17-bit add each), so stage 1's adder
    // trees have 3 and 4 operands: the address halves (both sums), length + Identification
    // (IP), twice the length + destination port (UDP).
    logic [16:0]      s1_ip_pair, s1_len_id, s1_len_port;
    logic [15:0]      ip_id;
    assign next_ip_id = ip_id;

    always_ff @(posedge clk) begin
        v1 <= in_valid && in_ready;
        if (in_valid && in_ready) ip_id <= ip_id + 16'd1;
        s1_start <= d_start;
        s1_len   <= d_len;
        s1_ip    <= d_ip;
        s1_port  <= d_port;
        s1_psum  <= d_psum;
        s1_id    <= ip_id;
        s1_mc    <= is_mc;
        s1_bc    <= is_bc;
        s1_ip_pair  <= 17'(d_ip[31:16]) + 17'(d_ip[15:0]);
        s1_len_id   <= 17'(d_len) + 17'(ip_id);
        s1_len_port <= 17'({d_len, 1'b0}) + 17'(d_port);
        if (rst) begin
            v1 <= 1'b0;
            ip_id <= '0;
        end
    end

    // ------------------------------------------------------------------ stage 1: sums, MAC

    logic [SP-1:0]    s2_start;
    logic [LEN_W-1:0] s2_len;
    logic [31:0]      s2_ip;
    logic [15:0]      s2_port, s2_id;
    logic [47:0]      s2_dmac;
    logic             s2_drop;
    logic [19:0]      s2_ip_sum, s2_udp_sum;
    // The configuration's and the constants' share of both sums (the lengths' offsets
    // included: IP length = len + 28, UDP length = len + 8, counted twice), added ahead (it
    // is quasi-static), so the per-frame adder trees have fewer operands and no adder in
    // front of them.
    logic [19:0]      c_ip_sum, c_udp_sum;
    always_ff @(posedge clk) begin
        c_ip_sum  <= 20'h4500 + 20'h4000 + 20'({cfg.ttl, 8'd17}) + 20'd28
                   + 20'(cfg.ip[31:16]) + 20'(cfg.ip[15:0]);
        c_udp_sum <= 20'(cfg.ip[31:16]) + 20'(cfg.ip[15:0]) + 20'd17 + 20'd16 + 20'(cfg.port);
    end
    always_ff @(posedge clk) begin
        v2 <= v1;
        s2_start <= s1_start;
        s2_len   <= s1_len;
        s2_ip    <= s1_ip;
        s2_port  <= s1_port;
        s2_id    <= s1_id;
        if (s1_mc) begin
            s2_dmac <= {24'h01005E, 1'b0, s1_ip[22:0]};
            s2_drop <= 1'b0;
        end else if (s1_bc) begin
            s2_dmac <= 48'hFFFF_FFFF_FFFF;
            s2_drop <= 1'b0;
        end else begin
            s2_dmac <= {arp_entry[15:0], arp_entry[63:32]};
            s2_drop <= !arp_entry[16];
        end
        s2_ip_sum  <= c_ip_sum + 20'(s1_ip_pair) + 20'(s1_len_id);
        s2_udp_sum <= c_udp_sum + 20'(s1_ip_pair) + 20'(s1_len_port) + 20'(s1_psum);
        if (rst) v2 <= 1'b0;
    end

    // ------------------------------------------------------------------ stage 2: first fold
    logic [SP-1:0]    s3_start;
    logic [LEN_W-1:0] s3_len;
    logic [31:0]      s3_ip;
    logic [15:0]      s3_port, s3_id;
    logic [47:0]      s3_dmac;
    logic             s3_drop;
    logic [16:0]      s3_ip_f, s3_udp_f;
    always_ff @(posedge clk) begin
        v3 <= v2;
        s3_start <= s2_start;
        s3_len   <= s2_len;
        s3_ip    <= s2_ip;
        s3_port  <= s2_port;
        s3_id    <= s2_id;
        s3_dmac  <= s2_dmac;
        s3_drop  <= s2_drop;
        s3_ip_f  <= 17'(s2_ip_sum[15:0]) + 17'(s2_ip_sum[19:16]);
        s3_udp_f <= 17'(s2_udp_sum[15:0]) + 17'(s2_udp_sum[19:16]);
        if (rst) v3 <= 1'b0;
    end

    // ------------------------------------------------------------------ stage 3: header
    logic [15:0] ip_csum, udp_fold, udp_csum;
    logic [15:0] ip_len, udp_len;
    logic [LEN_W:0] frame_len;
    logic [NSEG_W-1:0] nseg;
    logic [3:0] mty;
    always_comb begin
        ip_csum  = ~(s3_ip_f[15:0] + 16'(s3_ip_f[16]));
        udp_fold = s3_udp_f[15:0] + 16'(s3_udp_f[16]);
        udp_csum = !cfg.udp_csum ? 16'h0000 : (udp_fold == 16'hFFFF) ? 16'hFFFF : ~udp_fold;
        ip_len   = 16'(s3_len) + 16'd28;
        udp_len  = 16'(s3_len) + 16'd8;
        frame_len = (s3_len < LEN_W'(18)) ? (LEN_W+1)'(60) : (LEN_W+1)'(s3_len) + (LEN_W+1)'(42);
        nseg     = NSEG_W'((frame_len + (LEN_W+1)'(15)) >> 4);
        mty      = 4'(16 - frame_len[3:0]);
    end

    // Wire order: byte k of the header in bits 8k+7:8k.
    function automatic logic [335:0] pack_header(
        input logic [47:0] dmac, input logic [47:0] smac,
        input logic [15:0] iplen, input logic [15:0] id, input logic [7:0] ttl,
        input logic [15:0] ipcsum, input logic [31:0] sip, input logic [31:0] dip,
        input logic [15:0] sport, input logic [15:0] dport, input logic [15:0] ulen,
        input logic [15:0] ucsum);
        logic [8*42-1:0] be;   // big-endian image: byte 0 in the top bits
        logic [335:0] le;
        be = {dmac, smac, 16'h0800, 8'h45, 8'h00, iplen, id, 16'h4000, ttl, 8'd17, ipcsum,
              sip, dip, sport, dport, ulen, ucsum};
        for (int k = 0; k < 42; k++) le[8*k +: 8] = be[8*(41-k) +: 8];
        pack_header = le;
    endfunction

    always_ff @(posedge clk) begin
        out_valid <= v3;
        out_data  <= {s3_start, nseg, (frame_len[3:0] == 4'd0) ? 4'd0 : mty, s3_len, s3_drop,
                      pack_header(s3_dmac, cfg.mac, ip_len, s3_id, cfg.ttl, ip_csum, cfg.ip,
                                  s3_ip, cfg.port, s3_port, udp_len, udp_csum)};
        if (rst) out_valid <= 1'b0;
    end

    initial if (STAGES != 4) $error("fhg_tx_header: latency bookkeeping");
endmodule
