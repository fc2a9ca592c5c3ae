// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rx_lane — one receive lane: realigns one frame at a time from DCMAC segments into
// 1024-bit frame words and UDP payload words, runs the docs/design/core.md §3 filter on its header and
// decides the frame's fate (rx MAC clock domain).
//
// Contract
//   * Input (from fhg_rx_unpack, registered there): per cycle a contiguous run of `in_n`
//     (0..8) segments of this lane's frame, starting at bus segment `in_lo` of `in_data`
//     (segment i in bits 128i+127:128i, first byte in the low bits). `in_sop` marks the run
//     that starts a frame, `in_eop`/`in_err`/`in_mty` the run that ends it (`in_n` may be 0
//     on a forced end). The unpacker hands frames to three lanes in turn, so a lane never
//     sees a new frame before its previous one ended; the next one may start the cycle after.
//   * Frame words: frame byte 128w+k in bits 8k+7:8k of word w. Payload word m (UDP payload
//     bytes 128m..128m+127, LSB-first) is frame word m bytes 42..127 followed by frame word
//     m+1 bytes 0..41; it is produced as soon as the 42nd byte of word m+1 has arrived (at
//     most one per cycle) or at the frame's end, so at most two per cycle.
//   * Filter: docs/design/core.md §3 in its order, evaluated from the header snapshot (the first 48
//     bytes) and the frame length at EOP; every frame leaves exactly one verdict
//     (`vd_valid`/`vd_code`, codes in fhg_rx_pkg) in the cycle its end leaves stage 2.
//     V_PEND (fhg_rx_pkg) means "a UDP datagram handed to the merger": the merger counts it.
//   * Data path: a datagram that passes the header checks is accepted at header time when
//     `acc_room` (order queue) is set and this lane's FIFO has two free entries; it then
//     pushes its payload words in order (up to two per cycle, lo first) into the lane FIFO,
//     the last one carrying `last` and `ok` (the end verdict). If the FIFO fills up
//     mid-frame the rest is dropped and the last entry is an `ok=0` token (rx_drop_overrun).
//     The FIFO is read first-word-fall-through by fhg_rx_merge.
//   * CPU path: a frame meant for the CPU asks for the CPU buffer at header time
//     (`cpu_want`); with `cpu_grant` its raw frame words go out on cpu_we0/1 (two per cycle
//     at most, rows in order) and its end on cpu_end (ok: placed; else dropped).
//   * ARP: a request for our IP (or, with learning on, a reply to us) is consumed at EOP when
//     `arp_room` was set at header time: arp_evt with the sender's addresses.
//   * Latency: input to verdict 2 cycles; throughput one run per cycle, no backpressure.
module fhg_rx_lane #(
    parameter bit FCS_ON_BUS  = 1'b0,   // 1: the MAC leaves the 4-byte FCS on the bus
    parameter int FIFO_DEPTH  = 32,     // lane FIFO entries (two banks)
    localparam int FW = 1024 + 1 + 1 + 8   // lane FIFO entry: data, last, ok, byte count-1
) (
    input  wire                clk,
    input  wire                rst,

    input  wire                in_valid,
    input  wire  [1023:0]      in_data,
    input  wire  [2:0]         in_lo,
    input  wire  [3:0]         in_n,
    input  wire                in_sop,
    input  wire                in_eop,
    input  wire                in_err,
    input  wire  [3:0]         in_mty,
    input  wire  [2:0]         in_tag,

    input  wire  [47:0]        cfg_mac,
    input  wire  [31:0]        cfg_ip,
    input  wire  [31:0]        cfg_netmask,
    input  wire  [31:0]        cfg_mc_ip,
    input  wire  [31:0]        cfg_mc_mask,
    input  wire  [15:0]        cfg_port,
    input  wire                cfg_promisc,
    input  wire                cfg_cpu_rx_en,
    input  wire                cfg_fabric_en,
    input  wire                cfg_arp_reply_en,
    input  wire                cfg_arp_learn_en,

    // header-time requests (stage 2)
    output logic               hdr_evt,        // this frame's header decision is taken now
    output logic [2:0]         hdr_tag,
    output logic               acc_push,       // accepted datagram: queue its meta
    output logic [116:0]       acc_meta,       // {src ip, dst ip, src port, dst port,
                                               //  UDP checksum field != 0, header sum}
    input  wire                acc_room,
    output logic               cpu_want,
    input  wire                cpu_grant,
    input  wire                arp_room,

    // lane FIFO read side (first-word fall-through)
    output logic               lf_valid,
    output logic [FW-1:0]      lf_data,
    input  wire                lf_pop,

    // CPU buffer writes
    output logic               cpu_we0,
    output logic [6:0]         cpu_row0,
    output logic [1023:0]      cpu_data0,
    output logic               cpu_we1,
    output logic [6:0]         cpu_row1,
    output logic [1023:0]      cpu_data1,
    output logic               cpu_end,
    output logic               cpu_end_ok,
    output logic               cpu_rel,        // the buffer this lane held is free again now
    output logic [13:0]        cpu_len,

    // ARP events
    output logic               arp_evt,
    output logic               arp_evt_reply,  // 0: request for us, 1: reply to learn
    output logic [47:0]        arp_sha,
    output logic [31:0]        arp_spa,

    // verdict
    output logic               vd_valid,
    output logic [4:0]         vd_code,
    output logic [14:0]        vd_bytes
);
    // ================================================================ stage 0: realign
    logic          in_frame;
    logic [2:0]    f;          // slots of the current frame word already filled
    logic [7:0]    w;          // current frame word index
    logic          oversize;   // frame longer than 255 words: payload/CPU words suppressed
    logic [10:0]   segcnt;
    logic [1023:0] P, Q;       // partial current word, previous complete word

    logic [127:0]  seg_in [8];
    logic [127:0]  R [8];
    logic [1023:0] Rw, Cw;
    logic [2:0]    rsh;
    logic [3:0]    fn;         // f + n
    logic          complete;
    logic [3:0]    g;          // fill of the frame's last word at EOP (0: exactly full)
    always_comb begin
        for (int i = 0; i < 8; i++) seg_in[i] = in_data[128*i +: 128];
        rsh = in_lo - f;
        for (int s = 0; s < 8; s++) R[s] = seg_in[3'(s) + rsh];
        for (int s = 0; s < 8; s++) begin
            Rw[128*s +: 128] = R[s];
            Cw[128*s +: 128] = (3'(s) < f) ? P[128*s +: 128] : R[s];
        end
        fn       = 4'(f) + in_n;
        complete = fn >= 4'd8;
        g        = complete ? fn - 4'd8 : fn;
    end

    /* verilator lint_off UNUSEDSIGNAL */
    function automatic logic [1023:0] pword(input logic [1023:0] x, input logic [1023:0] y);
        pword = {y[335:0], x[1023:336]};
    endfunction
    /* verilator lint_on UNUSEDSIGNAL */

    logic          act;
    logic          thr_cur, thr_next;
    logic          e_a, e_b, h_now, r0, r1;
    logic [7:0]    ia, ib;
    logic [1023:0] da, db;
    always_comb begin
        act      = in_valid && (in_frame || in_sop);
        thr_cur  = act && f < 3'd3 && fn >= 4'd3;
        thr_next = act && complete && g >= 4'd3;
        h_now    = act && ((thr_cur && w == 8'd0) || (in_eop && w == 8'd0 && !complete && fn < 4'd3));
        e_a = 1'b0; ia = '0; da = '0;
        if (thr_cur && w != 8'd0) begin
            e_a = 1'b1; ia = w - 8'd1; da = pword(Q, Cw);
        end else if (thr_next) begin
            e_a = 1'b1; ia = w; da = pword(Cw, Rw);
        end
        e_b = 1'b0; ib = '0; db = '0;
        if (act && in_eop) begin
            if (complete && g == 4'd0) begin
                e_b = 1'b1; ib = w; db = pword(Cw, '0);
            end else if (g >= 4'd3) begin
                e_b = 1'b1; ib = complete ? w + 8'd1 : w; db = pword(complete ? Rw : Cw, '0);
            end else if (complete || w != 8'd0) begin
                e_b = 1'b1; ib = complete ? w : w - 8'd1;
                db = complete ? pword(Cw, Rw) : pword(Q, Cw);
            end
        end
        if (oversize) begin
            e_a = 1'b0; e_b = 1'b0;
        end
        r0 = act && (complete || in_eop) && !oversize;
        r1 = act && in_eop && complete && g != 4'd0 && !oversize;
    end

    // frame length at EOP (bytes on the bus, then without FCS)
    logic [14:0] nbus, nfr;
    logic        short_fcs;
    always_comb begin
        nbus = 15'({segcnt + 11'(in_n), 4'd0}) - 15'(in_n != 0 ? in_mty : 4'd0);
        if (in_n == 0) nbus = 15'({segcnt, 4'd0});
        short_fcs = FCS_ON_BUS && nbus < 15'd4;
        nfr = FCS_ON_BUS ? (short_fcs ? 15'd0 : nbus - 15'd4) : nbus;
    end

    logic [2:0] cur_tag;
    always_ff @(posedge clk) begin
        if (act && in_sop) cur_tag <= in_tag;
        if (act) begin
            if (in_eop) begin
                in_frame <= 1'b0;
                f <= '0; w <= '0; segcnt <= '0; oversize <= 1'b0;
            end else begin
                in_frame <= 1'b1;
                segcnt   <= segcnt + 11'(in_n);
                if (complete) begin
                    Q <= Cw;
                    P <= Rw;
                    f <= g[2:0];
                    if (w == 8'hFF) oversize <= 1'b1;
                    else w <= w + 8'd1;
                end else begin
                    P <= Cw;
                    f <= fn[2:0];
                end
                if (segcnt > 11'd2000) oversize <= 1'b1;
            end
        end
        if (rst) begin
            in_frame <= 1'b0; f <= '0; w <= '0; segcnt <= '0; oversize <= 1'b0;
        end
    end

    // ================================================================ stage 1
    logic          s1_ea, s1_eb, s1_h, s1_r0, s1_r1, s1_eop, s1_err, s1_big;
    logic [7:0]    s1_ia, s1_ib, s1_w;
    logic [1023:0] s1_da, s1_db, s1_c, s1_r;
    logic [383:0]  s1_hdr;
    logic [14:0]   s1_len;
    logic [2:0]    s1_tag;
    always_ff @(posedge clk) begin
        s1_ea <= e_a; s1_eb <= e_b; s1_ia <= ia; s1_ib <= ib; s1_da <= da; s1_db <= db;
        s1_h  <= h_now; s1_r0 <= r0; s1_r1 <= r1; s1_w <= w; s1_c <= Cw; s1_r <= Rw;
        s1_eop <= act && in_eop;
        s1_err <= in_err || short_fcs;
        s1_big <= oversize || (segcnt > 11'd2000);
        s1_len <= nfr;
        if (h_now) s1_hdr <= Cw[383:0];
        s1_tag <= (act && in_sop) ? in_tag : cur_tag;
        if (rst) begin
            s1_ea <= 1'b0; s1_eb <= 1'b0; s1_h <= 1'b0; s1_r0 <= 1'b0; s1_r1 <= 1'b0;
            s1_eop <= 1'b0;
        end
    end

    // header fields (bytes LSB-first in s1_hdr)
    function automatic logic [7:0] hb(input logic [383:0] h, input int k);
        hb = h[8*k +: 8];
    endfunction
    logic [47:0] h_dmac, h_sha;
    logic [15:0] h_etype, h_iplen, h_sport, h_dport, h_udplen, h_op;
    logic [31:0] h_sip, h_dip, h_spa, h_tpa;
    logic [19:0] h_csum20;
    logic [16:0] h_fold1;
    logic [15:0] h_fold;
    logic        mac_ok, is_arp, is_ipv4, ver_ok, ihl_ok, frag, csum_ok, proto_ok, dip_ok, port_ok;
    logic        lenh_ok, arp_ok_req, arp_ok_rep;
    logic [8:0]  h_m;           // payload words
    logic [7:0]  h_lastb;       // bytes in the last payload word, minus one (8'h80: none)
    logic [15:0] plen;
    logic [7:0]  h_b14, h_b20;
    logic        arp_base;
    logic [19:0] h_usum;        // pseudo header + UDP header, unfolded
    always_comb begin
        h_dmac  = {hb(s1_hdr,0), hb(s1_hdr,1), hb(s1_hdr,2), hb(s1_hdr,3), hb(s1_hdr,4), hb(s1_hdr,5)};
        h_etype = {hb(s1_hdr,12), hb(s1_hdr,13)};
        h_iplen = {hb(s1_hdr,16), hb(s1_hdr,17)};
        h_sip   = {hb(s1_hdr,26), hb(s1_hdr,27), hb(s1_hdr,28), hb(s1_hdr,29)};
        h_dip   = {hb(s1_hdr,30), hb(s1_hdr,31), hb(s1_hdr,32), hb(s1_hdr,33)};
        h_sport = {hb(s1_hdr,34), hb(s1_hdr,35)};
        h_dport = {hb(s1_hdr,36), hb(s1_hdr,37)};
        h_udplen = {hb(s1_hdr,38), hb(s1_hdr,39)};
        h_op    = {hb(s1_hdr,20), hb(s1_hdr,21)};
        h_b14   = hb(s1_hdr,14);
        h_b20   = hb(s1_hdr,20);
        h_sha   = {hb(s1_hdr,22), hb(s1_hdr,23), hb(s1_hdr,24), hb(s1_hdr,25), hb(s1_hdr,26), hb(s1_hdr,27)};
        h_spa   = {hb(s1_hdr,28), hb(s1_hdr,29), hb(s1_hdr,30), hb(s1_hdr,31)};
        h_tpa   = {hb(s1_hdr,38), hb(s1_hdr,39), hb(s1_hdr,40), hb(s1_hdr,41)};

        mac_ok = h_dmac == cfg_mac || h_dmac == 48'hFFFF_FFFF_FFFF ||
                 (cfg_mc_mask != 0 && h_dmac[47:23] == {24'h01005E, 1'b0} &&
                  (h_dmac[22:0] & cfg_mc_mask[22:0]) == (cfg_mc_ip[22:0] & cfg_mc_mask[22:0]));
        is_arp  = h_etype == 16'h0806;
        is_ipv4 = h_etype == 16'h0800;
        ver_ok  = h_b14[7:4] == 4'd4;
        ihl_ok  = h_b14[3:0] == 4'd5;
        frag    = h_b20[5] || {h_b20[4:0], hb(s1_hdr,21)} != 13'd0;
        h_csum20 = '0;
        for (int k = 0; k < 10; k++)
            h_csum20 = h_csum20 + 20'({hb(s1_hdr, 14 + 2*k), hb(s1_hdr, 15 + 2*k)});
        h_fold1 = 17'(h_csum20[15:0]) + 17'(h_csum20[19:16]);
        h_fold  = h_fold1[15:0] + 16'(h_fold1[16]);
        csum_ok = h_fold == 16'hFFFF;
        proto_ok = hb(s1_hdr,23) == 8'd17;
        dip_ok  = h_dip == cfg_ip || h_dip == 32'hFFFF_FFFF || h_dip == (cfg_ip | ~cfg_netmask) ||
                  (cfg_mc_mask != 0 && (h_dip & cfg_mc_mask) == (cfg_mc_ip & cfg_mc_mask));
        port_ok = cfg_promisc || h_dport == cfg_port;
        // UDP length 8 (no payload, RFC 768 allows it) is delivered as an empty datagram.
        lenh_ok = h_iplen >= 16'd28 && h_udplen == h_iplen - 16'd20 && h_udplen >= 16'd8;
        arp_base   = {hb(s1_hdr,14), hb(s1_hdr,15)} == 16'd1 && {hb(s1_hdr,16), hb(s1_hdr,17)} == 16'h0800 &&
                     hb(s1_hdr,18) == 8'd6 && hb(s1_hdr,19) == 8'd4 && h_tpa == cfg_ip;
        arp_ok_rep = arp_base && h_op == 16'd2 && cfg_arp_learn_en;
        arp_ok_req = arp_base && h_op == 16'd1 && cfg_arp_reply_en;
        // The UDP checksum's part that the header alone gives (RFC 768 pseudo header: source
        // and destination IP, protocol 17, UDP length; then the UDP header itself).
        h_usum = 20'd17 + 20'(h_udplen);
        for (int k = 0; k < 8; k++)
            h_usum = h_usum + 20'({hb(s1_hdr, 26 + 2*k), hb(s1_hdr, 27 + 2*k)});
        plen    = h_udplen - 16'd8;
        h_m     = 9'((plen + 16'd127) >> 7);
        // bit 7 set on a last entry: no payload byte at all (the empty datagram)
        h_lastb = plen == 16'd0 ? 8'h80 : 8'((plen - 16'd1) & 16'h7F);
    end

    // ================================================================ stage 2
    typedef struct packed {
        logic        mac_ok, is_arp, is_ipv4, ver_ok, ihl_ok, frag, csum_ok, proto_ok;
        logic        dip_ok, port_ok, lenh_ok, arp_req, arp_rep;
        logic [15:0] iplen;
        logic [8:0]  m;
        logic [7:0]  lastb;
        logic [116:0] meta;
        logic [47:0] sha;
        logic [31:0] spa;
    } hflags_t;

    hflags_t       s2_hf, hf_lat, hf;
    logic          s2_ea, s2_eb, s2_h, s2_r0, s2_r1, s2_eop, s2_err, s2_big;
    logic [7:0]    s2_ia, s2_ib, s2_w;
    logic [1023:0] s2_da, s2_db, s2_c, s2_r;
    logic [14:0]   s2_len;
    logic [2:0]    s2_tag;
    always_ff @(posedge clk) begin
        s2_ea <= s1_ea; s2_eb <= s1_eb; s2_ia <= s1_ia; s2_ib <= s1_ib;
        s2_da <= s1_da; s2_db <= s1_db; s2_h <= s1_h; s2_r0 <= s1_r0; s2_r1 <= s1_r1;
        s2_w <= s1_w; s2_c <= s1_c; s2_r <= s1_r; s2_eop <= s1_eop; s2_err <= s1_err;
        s2_big <= s1_big; s2_len <= s1_len; s2_tag <= s1_tag;
        s2_hf <= {mac_ok, is_arp, is_ipv4, ver_ok, ihl_ok, frag, csum_ok, proto_ok,
                  dip_ok, port_ok, lenh_ok, arp_ok_req, arp_ok_rep, h_iplen, h_m, h_lastb,
                  h_sip, h_dip, h_sport, h_dport, {hb(s1_hdr,40), hb(s1_hdr,41)} != 16'd0,
                  h_usum, h_sha, h_spa};
        if (rst) begin
            s2_ea <= 1'b0; s2_eb <= 1'b0; s2_h <= 1'b0; s2_r0 <= 1'b0; s2_r1 <= 1'b0;
            s2_eop <= 1'b0;
        end
    end

    // Per-frame decisions taken at header time, valid for the rest of the frame.
    localparam int CW = $clog2(FIFO_DEPTH) + 1;
    logic          acc_lat, claim_lat, trunc, disabled_lat, noroom_lat, arp_room_lat, cpu_rx_lat;
    logic          cpu_tl_lat;
    logic          accepted, claimed, disabled, noroom, arp_room_f, cpu_rx_f;
    logic [1023:0] held_d;
    logic          cand, cpu_class;
    logic [CW-1:0] lf_count, lf_free;

    assign hf      = s2_h ? s2_hf : hf_lat;
    assign lf_free = CW'(FIFO_DEPTH) - lf_count;

    // Would-be verdict ignoring the frame length (the length checks come at EOP). Every ARP
    // frame asks for the CPU buffer: whether it is consumed depends on its length.
    always_comb begin
        cand = hf.mac_ok && hf.is_ipv4 && hf.ver_ok && hf.ihl_ok && !hf.frag && hf.csum_ok &&
               hf.proto_ok && hf.dip_ok && hf.port_ok && hf.lenh_ok;
        cpu_class = hf.mac_ok && (
            hf.is_arp || !hf.is_ipv4 ||
            (hf.ver_ok && !hf.ihl_ok) ||
            (hf.ver_ok && hf.ihl_ok && !hf.frag && hf.csum_ok && !hf.proto_ok) ||
            (hf.ver_ok && hf.ihl_ok && !hf.frag && hf.csum_ok && hf.proto_ok &&
             hf.dip_ok && !hf.port_ok));
    end

    assign hdr_evt  = s2_h;
    assign hdr_tag  = s2_tag;
    assign acc_meta = s2_hf.meta;
    assign acc_push = s2_h && cand && cfg_fabric_en && acc_room && lf_free >= CW'(2);
    assign cpu_want = s2_h && cpu_class && cfg_cpu_rx_en;

    always_comb begin
        accepted   = s2_h ? acc_push : acc_lat;
        claimed    = s2_h ? (cpu_want && cpu_grant) : claim_lat;
        disabled   = s2_h ? (cand && !cfg_fabric_en) : disabled_lat;
        noroom     = s2_h ? (cand && cfg_fabric_en && !acc_push) : noroom_lat;
        arp_room_f = s2_h ? arp_room : arp_room_lat;
        cpu_rx_f   = s2_h ? cfg_cpu_rx_en : cpu_rx_lat;
    end

    // ---------------------------------------------------------------- lane FIFO pushes
    // Emissions below the last payload word are body words; the last one waits for the end.
    logic data_a, hold_a, data_b, hold_b, trunc_body, trunc_eff;
    logic p0, p1;
    logic [1023:0] pd0, pd1;
    always_comb begin
        data_a = s2_ea && accepted && 9'(s2_ia) + 9'd1 < hf.m;
        hold_a = s2_ea && accepted && 9'(s2_ia) + 9'd1 == hf.m;
        data_b = s2_eb && accepted && 9'(s2_ib) + 9'd1 < hf.m;
        hold_b = s2_eb && accepted && 9'(s2_ib) + 9'd1 == hf.m;
        p0 = 1'b0; p1 = 1'b0; pd0 = s2_da; pd1 = s2_db; trunc_body = 1'b0;
        if (accepted && !trunc && !s2_eop) begin
            // each body word needs a free entry beyond the one kept for the end entry
            if (data_a) begin
                if (lf_free >= CW'(3)) p0 = 1'b1;
                else trunc_body = 1'b1;
            end
            if (data_b && !trunc_body) begin
                if (lf_free >= (p0 ? CW'(4) : CW'(3))) begin
                    if (p0) p1 = 1'b1;
                    else begin p0 = 1'b1; pd0 = s2_db; end
                end else trunc_body = 1'b1;
            end
        end
        // At the end a second-to-last word may still come with the last one: two entries.
        trunc_eff = trunc || trunc_body ||
                    (s2_eop && accepted && data_a && lf_free < CW'(2));
    end

    // ---------------------------------------------------------------- end verdict
    logic [4:0] vb, v;
    logic       tl_eff, place_cpu;
    assign tl_eff = cpu_tl_lat || cpu_toolong;
    always_comb begin
        vb = fhg_rx_pkg::V_PEND;
        if (s2_err)                              vb = fhg_rx_pkg::V_FCS;
        else if (s2_len < 15'd14)                vb = fhg_rx_pkg::V_LENGTH;
        else if (!hf.mac_ok)                     vb = fhg_rx_pkg::V_DST_MAC;
        else if (hf.is_arp) begin
            if (s2_len >= 15'd42 && arp_room_f && (hf.arp_req || hf.arp_rep))
                                                 vb = fhg_rx_pkg::V_ARP;
            else                                 vb = cpu_rx_f ? fhg_rx_pkg::V_CPU : fhg_rx_pkg::V_ARP_DROP;
        end
        else if (!hf.is_ipv4)                    vb = cpu_rx_f ? fhg_rx_pkg::V_CPU : fhg_rx_pkg::V_ETHERTYPE;
        else if (s2_len < 15'd34)                vb = fhg_rx_pkg::V_LENGTH;
        else if (!hf.ver_ok)                     vb = fhg_rx_pkg::V_IP_VERSION;
        else if (!hf.ihl_ok)                     vb = cpu_rx_f ? fhg_rx_pkg::V_CPU : fhg_rx_pkg::V_IP_OPTIONS;
        else if (hf.frag)                        vb = fhg_rx_pkg::V_IP_FRAGMENT;
        else if (!hf.csum_ok)                    vb = fhg_rx_pkg::V_IP_CHECKSUM;
        else if (!hf.proto_ok)                   vb = cpu_rx_f ? fhg_rx_pkg::V_CPU : fhg_rx_pkg::V_IP_PROTOCOL;
        else if (!hf.dip_ok)                     vb = fhg_rx_pkg::V_DST_IP;
        else if (s2_len < 15'd42)                vb = fhg_rx_pkg::V_LENGTH;
        else if (!hf.port_ok)                    vb = cpu_rx_f ? fhg_rx_pkg::V_CPU : fhg_rx_pkg::V_DST_PORT;
        else if (!hf.lenh_ok || 17'(hf.iplen) + 17'd14 > 17'(s2_len))
                                                 vb = fhg_rx_pkg::V_LENGTH;
        else if (disabled)                       vb = fhg_rx_pkg::V_DISABLED;
        else if (noroom || trunc_eff)            vb = fhg_rx_pkg::V_OVERRUN;
        if (s2_big && (vb == fhg_rx_pkg::V_PEND || vb == fhg_rx_pkg::V_CPU))
                                                 vb = fhg_rx_pkg::V_LENGTH;
        if (vb == fhg_rx_pkg::V_CPU && tl_eff)   vb = fhg_rx_pkg::V_LENGTH;
        // A frame for the CPU that did not get the buffer at header time.
        place_cpu = vb == fhg_rx_pkg::V_CPU;
    end
    // Kept apart from vb: only v depends on this cycle's cpu_grant.
    always_comb begin
        v = vb;
        if (place_cpu && !claimed)               v = fhg_rx_pkg::V_CPU_BUSY;
    end

    logic          end_ok;
    logic [1023:0] last_d;
    logic          q0, q1;
    logic [FW-1:0] qd0, qd1;
    always_comb begin
        end_ok = v == fhg_rx_pkg::V_PEND;
        last_d = hold_b ? s2_db : hold_a ? s2_da : held_d;
        q0 = p0; q1 = p1;
        qd0 = {8'hFF, 1'b0, 1'b0, pd0};
        qd1 = {8'hFF, 1'b0, 1'b0, pd1};
        if (s2_eop && accepted) begin
            if (end_ok && data_a) begin
                q0 = 1'b1; qd0 = {8'hFF, 1'b0, 1'b0, s2_da};
                q1 = 1'b1; qd1 = {hf.lastb, 1'b1, 1'b1, last_d};
            end else begin
                q0 = 1'b1; qd0 = {hf.lastb, 1'b1, end_ok, end_ok ? last_d : 1024'd0};
                q1 = 1'b0;
            end
        end
    end

    always_ff @(posedge clk) begin
        if (s2_h) begin
            hf_lat       <= s2_hf;
            acc_lat      <= acc_push;
            claim_lat    <= cpu_want && cpu_grant;
            disabled_lat <= cand && !cfg_fabric_en;
            noroom_lat   <= cand && cfg_fabric_en && !acc_push;
            arp_room_lat <= arp_room;
            cpu_rx_lat   <= cfg_cpu_rx_en;
            cpu_tl_lat   <= 1'b0;
        end
        if (trunc_body) trunc <= 1'b1;
        if (cpu_toolong) cpu_tl_lat <= 1'b1;
        if (hold_a) held_d <= s2_da;
        if (hold_b) held_d <= s2_db;
        if (s2_eop || rst) begin
            acc_lat <= 1'b0; claim_lat <= 1'b0; trunc <= 1'b0; cpu_tl_lat <= 1'b0;
        end
    end

    // ---------------------------------------------------------------- CPU words
    // Rows beyond the 16 KiB buffer make the frame too long for it (rx_drop_length).
    logic       cpu_toolong;
    logic [7:0] w_next;
    assign w_next      = s2_w + 8'd1;
    assign cpu_toolong = claim_lat && ((s2_r0 && s2_w[7]) || (s2_r1 && w_next[7]));
    always_comb begin
        cpu_we0   = claimed && s2_r0 && !s2_w[7];
        cpu_row0  = s2_w[6:0];
        cpu_data0 = s2_c;
        cpu_we1   = claimed && s2_r1 && !w_next[7];
        cpu_row1  = w_next[6:0];
        cpu_data1 = s2_r;
        // cpu_rel does not depend on cpu_grant, so the arbiter may hand a released buffer
        // to another lane in the same cycle without a combinational loop.
        cpu_end    = s2_eop && claimed;
        cpu_end_ok = place_cpu;
        cpu_rel    = s2_eop && claim_lat && !place_cpu;
        cpu_len    = s2_len[13:0];
    end

    // ---------------------------------------------------------------- ARP and verdict
    always_comb begin
        arp_evt       = s2_eop && v == fhg_rx_pkg::V_ARP;
        arp_evt_reply = hf.arp_rep;
        arp_sha       = hf.sha;
        arp_spa       = hf.spa;
        vd_valid      = s2_eop;
        vd_code       = v;
        vd_bytes      = s2_len;
    end

    // ================================================================ lane FIFO
    fhg_rx_lane_fifo #(.WIDTH(FW), .DEPTH(FIFO_DEPTH)) u_fifo (
        .clk(clk), .rst(rst),
        .push0(q0), .data0(qd0), .push1(q1), .data1(qd1),
        .count(lf_count),
        .rd_valid(lf_valid), .rd_data(lf_data), .rd_pop(lf_pop)
    );

    logic unused_ok;
    assign unused_ok = &{1'b0, s1_hdr[383:336], h_b20[7:6], hf.meta, hf_lat.meta, s2_hf.sha[0]};
endmodule
