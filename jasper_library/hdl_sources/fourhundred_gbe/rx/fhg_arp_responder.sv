// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_arp_responder — builds ARP replies and gratuitous ARPs for the control-frame arbiter
// (TX MAC clock domain).
//
// Contract
//   * `req_valid` with the requester's `req_sha`/`req_spa` (an ARP request for our IP seen by
//     the receive path) is taken with `req_pop` when no frame is pending and answered with a
//     reply (RFC 826: op 2, sender = our MAC/IP, target = the requester), sent to the
//     requester's MAC.
//   * `garp` (one-cycle pulse) asks for one gratuitous ARP: a broadcast request with sender
//     and target IP both ours and target MAC zero (RFC 5227 announcement). A pending
//     gratuitous ARP goes before queued replies; further pulses while one waits merge.
//   * Output: one 60-byte frame at a time on `arp_frame` (wire order, byte k in bits
//     8k+7:8k, zero padded), held with `arp_valid` until `arp_ready`. One frame per
//     arbiter slot; the addresses are those of cfg_mac/cfg_ip when the frame is built.
module fhg_arp_responder (
    input  wire                 clk,
    input  wire                 rst,
    input  wire  [47:0]         cfg_mac,
    input  wire  [31:0]         cfg_ip,
    input  wire                 req_valid,
    input  wire  [47:0]         req_sha,
    input  wire  [31:0]         req_spa,
    output logic                req_pop,
    input  wire                 garp,
    output logic                arp_valid,
    output logic [511:0]        arp_frame,
    input  wire                 arp_ready
);
    function automatic logic [511:0] build(input logic [47:0] dst, input logic [15:0] op,
                                           input logic [47:0] sha, input logic [31:0] spa,
                                           input logic [47:0] tha, input logic [31:0] tpa);
        logic [8*42-1:0] be;   // the 42 header bytes, first byte in the top bits
        logic [511:0]    f;
        be = {dst, sha, 16'h0806, 16'h0001, 16'h0800, 8'd6, 8'd4, op, sha, spa, tha, tpa};
        f = '0;
        for (int k = 0; k < 42; k++) f[8*k +: 8] = be[8*(41-k) +: 8];
        build = f;
    endfunction

    logic garp_pend;
    always_comb begin
        req_pop = req_valid && !garp_pend && (!arp_valid || arp_ready);
    end

    always_ff @(posedge clk) begin
        if (garp) garp_pend <= 1'b1;
        if (arp_valid && arp_ready) arp_valid <= 1'b0;
        if (!arp_valid || arp_ready) begin
            if (garp_pend) begin
                arp_frame <= build(48'hFFFF_FFFF_FFFF, 16'd1, cfg_mac, cfg_ip, 48'd0, cfg_ip);
                arp_valid <= 1'b1;
                garp_pend <= garp;
            end else if (req_valid) begin
                arp_frame <= build(req_sha, 16'd2, cfg_mac, cfg_ip, req_sha, req_spa);
                arp_valid <= 1'b1;
            end
        end
        if (rst) begin
            arp_valid <= 1'b0; garp_pend <= 1'b0;
        end
    end
endmodule
