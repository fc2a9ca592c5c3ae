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
//   * Filter: docs/design/core.md §3 in its order, evaluated from the header snapshot (the
//     first 48 bytes) and the frame length at EOP; every frame leaves exactly one verdict
//     (`vd_valid`/`vd_code`, codes in fhg_rx_pkg). V_PEND (fhg_rx_pkg) means "a UDP datagram
//     handed to the merger": the merger counts it.
//   * Stages (all registered): 0 realigns the run into frame and payload words; 1 takes the
//     header apart into flags and half sums; 2 finishes the flags (the IPv4 checksum, the
//     filter's verdict as far as the header decides it) and compares the words' places and
//     the frame length with what the header says; 3 decides at header time (`hdr_evt`) and
//     at the frame's end, and pushes the lane FIFO.
//   * Data path: a datagram that passes the header checks is accepted at header time when
//     `acc_room` (order queue) is set and this lane's FIFO has two free entries (`acc_push`
//     with its meta and arrival tag, registered: one cycle after header time); it then
//     pushes its payload words in order (up to two per cycle, lo first) into the lane FIFO,
//     the last one carrying `last` and `ok` (the end verdict). If the FIFO fills up
//     mid-frame the rest is dropped and the last entry is an `ok=0` token (rx_drop_overrun).
//     The FIFO is read first-word-fall-through by fhg_rx_merge.
//   * CPU path: a frame meant for the CPU asks for the CPU buffer at header time
//     (`cpu_want`); with `cpu_grant` in that cycle its raw frame words go out on cpu_wr
//     (two per cycle at most, rows in order) and its end, one cycle after the last words,
//     on cpu_end (cpu_end_ok: placed; else dropped).
//   * ARP: a request for our IP (or, with learning on, a reply to us) is consumed at EOP when
//     `arp_room` was set at header time: arp_evt with the sender's addresses, registered.
//   * Latency: input to header time 3 cycles; to the verdict (`vd_*`, registered) 4 cycles
//     after the frame's last run; throughput one run per cycle, no backpressure.
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

    input  fhg_bus_pkg::rx_cfg_t cfg,         // filter configuration (quasi-static)

    // header-time requests (stage 3)
    output logic               hdr_evt,        // this frame's header decision is taken now
    output logic [2:0]         hdr_tag,
    input  wire                acc_room,
    output logic               cpu_want,
    input  wire                cpu_grant,
    input  wire                arp_room,
    // accepted datagram (registered, one cycle after header time): queue its meta
    output logic               acc_push,
    output logic [116:0]       acc_meta,       // {src ip, dst ip, src port, dst port,
                                               //  UDP checksum field != 0, header sum}
    output logic [2:0]         acc_tag,

    // lane FIFO read side (first-word fall-through)
    output logic               lf_valid,
    output logic [FW-1:0]      lf_data,
    input  wire                lf_pop,

    // CPU buffer writes
    output fhg_bus_pkg::rx_cpu_wr_t cpu_wr,
    output logic               cpu_end,        // registered: the cycle after the last words
    output logic               cpu_end_ok,
    output logic [13:0]        cpu_len,

    // ARP events (registered)
    output logic               arp_evt,
    output logic               arp_evt_reply,  // 0: request for us, 1: reply to learn
    output logic [47:0]        arp_sha,
    output logic [31:0]        arp_spa,
    output logic [2:0]         ev_tag,         // arrival tag of the frame of arp_evt

    // verdict (registered)
    output logic               vd_valid,
    output logic [4:0]         vd_code,
    output logic [14:0]        vd_bytes        // zero without a verdict
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
    // in_lo - f (mod 8) as a table of its six bits: one LUT level, no carry chain in front
    // of the 8-way segment rotation.
    logic [2:0] rsh_tab [64];
    initial for (int i = 0; i < 64; i++) rsh_tab[i] = 3'(i >> 3) - 3'(i);
    always_comb begin
        for (int i = 0; i < 8; i++) seg_in[i] = in_data[128*i +: 128];
        rsh = rsh_tab[{in_lo, f}];
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

    // Configuration, registered where it is combined before use (it changes rarely; a frame
    // sees it one cycle later than it was written, which nothing can tell apart).
    logic [31:0] c_bcast, c_mc_ip;
    logic        c_mc_en;
    always_ff @(posedge clk) begin
        c_bcast <= cfg.ip | ~cfg.netmask;
        c_mc_ip <= cfg.mc_ip & cfg.mc_mask;
        c_mc_en <= cfg.mc_mask != 32'd0;
    end

    // ---------------------------------------------------------------- header, first half
    // Every check reduced to a few flags; the two sums split in halves of five words.
    function automatic logic [7:0] hb(input logic [383:0] h, input int k);
        hb = h[8*k +: 8];
    endfunction
    function automatic logic [15:0] hw(input logic [383:0] h, input int k);
        hw = {h[8*k +: 8], h[8*(k+1) +: 8]};
    endfunction
    logic [47:0] h_dmac, h_sha;
    logic [15:0] h_etype, h_iplen, h_sport, h_dport, h_udplen, h_op;
    logic [31:0] h_sip, h_dip, h_spa, h_tpa;
    logic [7:0]  h_b14, h_b20;
    logic [15:0] plen;
    typedef struct packed {
        logic        mac_eq, mac_bc, mac_mc, is_arp, is_ipv4, ver_ok, ihl_ok, frag, proto_ok;
        logic        dip_eq, dip_bc, dip_sn, dip_mc, port_ok, lenh_ok, arp_req, arp_rep;
        logic [18:0] ipsum_a, ipsum_b;   // IPv4 header words 0-4 and 5-9
        logic [18:0] usum_a, usum_b;     // RFC 768 pseudo header + UDP header, two halves
        logic [15:0] iplen;
        logic [8:0]  m;
        logic [7:0]  lastb;
        logic [96:0] addr;               // {src ip, dst ip, src port, dst port, csum != 0}
        logic [47:0] sha;
        logic [31:0] spa;
    } hpart_t;
    hpart_t h1;
    always_comb begin
        h_dmac  = {hb(s1_hdr,0), hb(s1_hdr,1), hb(s1_hdr,2), hb(s1_hdr,3), hb(s1_hdr,4), hb(s1_hdr,5)};
        h_etype = hw(s1_hdr, 12);
        h_iplen = hw(s1_hdr, 16);
        h_sip   = {hw(s1_hdr, 26), hw(s1_hdr, 28)};
        h_dip   = {hw(s1_hdr, 30), hw(s1_hdr, 32)};
        h_sport = hw(s1_hdr, 34);
        h_dport = hw(s1_hdr, 36);
        h_udplen = hw(s1_hdr, 38);
        h_op    = hw(s1_hdr, 20);
        h_b14   = hb(s1_hdr,14);
        h_b20   = hb(s1_hdr,20);
        h_sha   = {hb(s1_hdr,22), hb(s1_hdr,23), hb(s1_hdr,24), hb(s1_hdr,25), hb(s1_hdr,26), hb(s1_hdr,27)};
        h_spa   = {hw(s1_hdr, 28), hw(s1_hdr, 30)};
        h_tpa   = {hw(s1_hdr, 38), hw(s1_hdr, 40)};

        h1.mac_eq  = h_dmac == cfg.mac;
        h1.mac_bc  = h_dmac == 48'hFFFF_FFFF_FFFF;
        h1.mac_mc  = c_mc_en && h_dmac[47:23] == {24'h01005E, 1'b0} &&
                     (h_dmac[22:0] & cfg.mc_mask[22:0]) == c_mc_ip[22:0];
        h1.is_arp  = h_etype == 16'h0806;
        h1.is_ipv4 = h_etype == 16'h0800;
        h1.ver_ok  = h_b14[7:4] == 4'd4;
        h1.ihl_ok  = h_b14[3:0] == 4'd5;
        h1.frag    = h_b20[5] || {h_b20[4:0], hb(s1_hdr,21)} != 13'd0;
        h1.proto_ok = hb(s1_hdr,23) == 8'd17;
        h1.dip_eq  = h_dip == cfg.ip;
        h1.dip_bc  = h_dip == 32'hFFFF_FFFF;
        h1.dip_sn  = h_dip == c_bcast;
        h1.dip_mc  = c_mc_en && (h_dip & cfg.mc_mask) == c_mc_ip;
        h1.port_ok = cfg.promisc || h_dport == cfg.port;
        // UDP length 8 (no payload, RFC 768 allows it) is delivered as an empty datagram.
        h1.lenh_ok = h_iplen >= 16'd28 && h_udplen == h_iplen - 16'd20 && h_udplen >= 16'd8;
        h1.arp_req = hw(s1_hdr, 14) == 16'd1 && hw(s1_hdr, 16) == 16'h0800 &&
                     hb(s1_hdr,18) == 8'd6 && hb(s1_hdr,19) == 8'd4 && h_tpa == cfg.ip &&
                     h_op == 16'd1 && cfg.arp_reply_en;
        h1.arp_rep = hw(s1_hdr, 14) == 16'd1 && hw(s1_hdr, 16) == 16'h0800 &&
                     hb(s1_hdr,18) == 8'd6 && hb(s1_hdr,19) == 8'd4 && h_tpa == cfg.ip &&
                     h_op == 16'd2 && cfg.arp_learn_en;
        h1.ipsum_a = 19'(hw(s1_hdr, 14)) + 19'(hw(s1_hdr, 16)) + 19'(hw(s1_hdr, 18))
                   + 19'(hw(s1_hdr, 20)) + 19'(hw(s1_hdr, 22));
        h1.ipsum_b = 19'(hw(s1_hdr, 24)) + 19'(hw(s1_hdr, 26)) + 19'(hw(s1_hdr, 28))
                   + 19'(hw(s1_hdr, 30)) + 19'(hw(s1_hdr, 32));
        // The UDP checksum's part that the header alone gives (RFC 768 pseudo header: source
        // and destination IP, protocol 17, UDP length; then the UDP header itself).
        h1.usum_a  = 19'd17 + 19'(h_udplen) + 19'(hw(s1_hdr, 26)) + 19'(hw(s1_hdr, 28))
                   + 19'(hw(s1_hdr, 30));
        h1.usum_b  = 19'(hw(s1_hdr, 32)) + 19'(hw(s1_hdr, 34)) + 19'(hw(s1_hdr, 36))
                   + 19'(hw(s1_hdr, 38)) + 19'(hw(s1_hdr, 40));
        h1.iplen   = h_iplen;
        plen       = h_udplen - 16'd8;
        h1.m       = 9'((plen + 16'd127) >> 7);
        // bit 7 set on a last entry: no payload byte at all (the empty datagram)
        h1.lastb   = plen == 16'd0 ? 8'h80 : 8'((plen - 16'd1) & 16'h7F);
        h1.addr    = {h_sip, h_dip, h_sport, h_dport, hw(s1_hdr, 40) != 16'd0};
        h1.sha     = h_sha;
        h1.spa     = h_spa;
    end

    // ================================================================ stage 2
    hpart_t        s2_hp;
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
        s2_hp <= h1;
        if (rst) begin
            s2_ea <= 1'b0; s2_eb <= 1'b0; s2_h <= 1'b0; s2_r0 <= 1'b0; s2_r1 <= 1'b0;
            s2_eop <= 1'b0;
        end
    end

    // ---------------------------------------------------------------- header, second half
    // The filter's order (docs/design/core.md §3) reduced to what the header alone decides:
    // `code`, the verdict if the frame is long enough, and `need`, which of the length
    // checks before that verdict applies. Every length check gives V_LENGTH and the
    // thresholds grow along the order (14, 34, 42, IP length + 14), so a frame is too short
    // exactly when it is shorter than the last threshold before its deciding check.
    localparam logic [1:0] N14 = 2'd0, N34 = 2'd1, N42 = 2'd2, NIP = 2'd3;
    localparam logic [4:0] C_ARP = fhg_rx_pkg::V_ARP;     // decided with the length at the end
    typedef struct packed {
        logic        cand, cpu_class, mac_ok, arp_ok;
        logic [4:0]  code;
        logic [1:0]  need;
        logic [8:0]  m;
        logic [7:0]  lastb;
        logic [47:0] sha;
        logic [31:0] spa;
        logic        arp_rep;
        logic        cpu_rx;      // cpu_rx_en when the header was decided
    } hflags_t;
    hflags_t     h2;
    logic [116:0] h2_meta;
    logic        mac_ok, dip_ok, csum_ok;
    logic [19:0] ipsum, usum;
    always_comb begin
        hpart_t hp;
        hp = s2_hp;
        ipsum = 20'(hp.ipsum_a) + 20'(hp.ipsum_b);
        usum  = 20'(hp.usum_a) + 20'(hp.usum_b);
        // The ones'-complement sum of the ten words is 0xFFFF exactly when the plain sum
        // S = 65536 H + L (H <= 9) has H + L = 0xFFFF, i.e. L = {12'hFFF, ~H[3:0]}: no fold.
        csum_ok = ipsum[15:4] == 12'hFFF && ipsum[3:0] == ~ipsum[19:16];
        mac_ok  = hp.mac_eq || hp.mac_bc || hp.mac_mc;
        dip_ok  = hp.dip_eq || hp.dip_bc || hp.dip_sn || hp.dip_mc;
        h2.mac_ok = mac_ok;
        h2.cand = mac_ok && hp.is_ipv4 && hp.ver_ok && hp.ihl_ok && !hp.frag && csum_ok &&
                  hp.proto_ok && dip_ok && hp.port_ok && hp.lenh_ok;
        // Every ARP frame asks for the CPU buffer: whether it is consumed depends on its length.
        h2.cpu_class = mac_ok && (
            hp.is_arp || !hp.is_ipv4 ||
            (hp.ver_ok && !hp.ihl_ok) ||
            (hp.ver_ok && hp.ihl_ok && !hp.frag && csum_ok && !hp.proto_ok) ||
            (hp.ver_ok && hp.ihl_ok && !hp.frag && csum_ok && hp.proto_ok &&
             dip_ok && !hp.port_ok));
        h2.arp_ok = hp.arp_req || hp.arp_rep;
        h2.need = N14;
        if (!mac_ok)              h2.code = fhg_rx_pkg::V_DST_MAC;
        else if (hp.is_arp)       h2.code = C_ARP;
        else if (!hp.is_ipv4)     h2.code = cfg.cpu_rx_en ? fhg_rx_pkg::V_CPU : fhg_rx_pkg::V_ETHERTYPE;
        else begin
            h2.need = N34;
            if (!hp.ver_ok)       h2.code = fhg_rx_pkg::V_IP_VERSION;
            else if (!hp.ihl_ok)  h2.code = cfg.cpu_rx_en ? fhg_rx_pkg::V_CPU : fhg_rx_pkg::V_IP_OPTIONS;
            else if (hp.frag)     h2.code = fhg_rx_pkg::V_IP_FRAGMENT;
            else if (!csum_ok)    h2.code = fhg_rx_pkg::V_IP_CHECKSUM;
            else if (!hp.proto_ok) h2.code = cfg.cpu_rx_en ? fhg_rx_pkg::V_CPU : fhg_rx_pkg::V_IP_PROTOCOL;
            else if (!dip_ok)     h2.code = fhg_rx_pkg::V_DST_IP;
            else begin
                h2.need = N42;
                if (!hp.port_ok)  h2.code = cfg.cpu_rx_en ? fhg_rx_pkg::V_CPU : fhg_rx_pkg::V_DST_PORT;
                else if (!hp.lenh_ok) h2.code = fhg_rx_pkg::V_LENGTH;
                else begin
                    h2.need = NIP;
                    h2.code = fhg_rx_pkg::V_PEND;
                end
            end
        end
        h2.m       = hp.m;
        h2.lastb   = hp.lastb;
        h2.sha     = hp.sha;
        h2.spa     = hp.spa;
        h2.arp_rep = hp.arp_rep;
        h2.cpu_rx  = cfg.cpu_rx_en;
        h2_meta    = {hp.addr, usum};
    end

    // The words' places against the frame's payload word count, and the frame's length
    // against every threshold, while the header flags are finished beside them.
    logic [8:0]  m_lat2, m2;
    logic [15:0] iplen_lat2, iplen2;
    logic        a_body2, a_last2, b_body2, b_last2;
    logic [3:0]  short2;            // shorter than 14, 34, 42, IP length + 14
    always_comb begin
        m2     = s2_h ? s2_hp.m : m_lat2;
        iplen2 = s2_h ? s2_hp.iplen : iplen_lat2;
        a_body2 = 9'(s2_ia) + 9'd1 < m2;
        a_last2 = 9'(s2_ia) + 9'd1 == m2;
        b_body2 = 9'(s2_ib) + 9'd1 < m2;
        b_last2 = 9'(s2_ib) + 9'd1 == m2;
        short2[N14] = s2_len < 15'd14;
        short2[N34] = s2_len < 15'd34;
        short2[N42] = s2_len < 15'd42;
        short2[NIP] = 17'(iplen2) + 17'd14 > 17'(s2_len);
    end
    always_ff @(posedge clk) if (s2_h) begin
        m_lat2     <= s2_hp.m;
        iplen_lat2 <= s2_hp.iplen;
    end

    // ================================================================ stage 3
    hflags_t       s3_hf, hf;
    logic [116:0]  s3_meta;
    logic          s3_ea, s3_eb, s3_h, s3_r0, s3_r1, s3_eop, s3_err, s3_big;
    logic          s3_a_body, s3_a_last, s3_b_body, s3_b_last;
    logic [3:0]    s3_short;
    logic [7:0]    s3_w;
    logic [1023:0] s3_da, s3_db, s3_c, s3_r;
    logic [14:0]   s3_len;
    logic [2:0]    s3_tag;
    always_ff @(posedge clk) begin
        s3_ea <= s2_ea; s3_eb <= s2_eb; s3_da <= s2_da; s3_db <= s2_db; s3_h <= s2_h;
        s3_r0 <= s2_r0; s3_r1 <= s2_r1; s3_w <= s2_w; s3_c <= s2_c; s3_r <= s2_r;
        s3_eop <= s2_eop; s3_err <= s2_err; s3_big <= s2_big; s3_len <= s2_len;
        s3_tag <= s2_tag;
        s3_hf <= h2; s3_meta <= h2_meta;
        s3_a_body <= a_body2; s3_a_last <= a_last2; s3_b_body <= b_body2; s3_b_last <= b_last2;
        s3_short <= short2;
        if (rst) begin
            s3_ea <= 1'b0; s3_eb <= 1'b0; s3_h <= 1'b0; s3_r0 <= 1'b0; s3_r1 <= 1'b0;
            s3_eop <= 1'b0;
        end
    end

    // The header flags of the frame in stage 3, from its header time on: taken from stage 2
    // when its header is there (a lane's next frame reaches stage 2 only after this one's
    // end has left stage 3, or in that very cycle, when this one no longer needs them).
    always_ff @(posedge clk) if (s2_h) hf <= h2;

    // Per-frame decisions taken at header time, valid for the rest of the frame.
    localparam int CW = $clog2(FIFO_DEPTH) + 1;
    logic          acc_lat, claim_lat, trunc, disabled_lat, noroom_lat, arp_room_lat;
    logic          cpu_tl_lat;
    logic          accepted, claimed, disabled, noroom, arp_room_f, acc_now;
    logic [1023:0] held_d;
    logic [CW-1:0] lf_count;
    logic          free2, free3, free4;   // the lane FIFO has 2 (3, 4) free entries

    // The FIFO counts a push a cycle after it (pushes are registered here): up to two
    // entries are on their way and not yet counted.
    assign free2 = lf_count <= CW'(FIFO_DEPTH - 2 - 2);
    assign free3 = lf_count <= CW'(FIFO_DEPTH - 3 - 2);
    assign free4 = lf_count <= CW'(FIFO_DEPTH - 4 - 2);

    assign hdr_evt  = s3_h;
    assign hdr_tag  = s3_tag;
    assign acc_now  = s3_h && s3_hf.cand && cfg.fabric_en && acc_room && free2;
    assign cpu_want = s3_h && s3_hf.cpu_class && cfg.cpu_rx_en;

    always_comb begin
        accepted   = s3_h ? acc_now : acc_lat;
        claimed    = s3_h ? (cpu_want && cpu_grant) : claim_lat;
        disabled   = s3_h ? (s3_hf.cand && !cfg.fabric_en) : disabled_lat;
        noroom     = s3_h ? (s3_hf.cand && cfg.fabric_en && !acc_now) : noroom_lat;
        arp_room_f = s3_h ? arp_room : arp_room_lat;
    end

    // ---------------------------------------------------------------- lane FIFO pushes
    // Emissions below the last payload word are body words; the last one waits for the end.
    logic data_a, hold_a, data_b, hold_b, trunc_body, trunc_eff;
    logic p0, p1;
    logic [1023:0] pd0, pd1;
    always_comb begin
        data_a = s3_ea && accepted && s3_a_body;
        hold_a = s3_ea && accepted && s3_a_last;
        data_b = s3_eb && accepted && s3_b_body;
        hold_b = s3_eb && accepted && s3_b_last;
        p0 = 1'b0; p1 = 1'b0; pd0 = s3_da; pd1 = s3_db; trunc_body = 1'b0;
        if (accepted && !trunc && !s3_eop) begin
            // each body word needs a free entry beyond the one kept for the end entry
            if (data_a) begin
                if (free3) p0 = 1'b1;
                else trunc_body = 1'b1;
            end
            if (data_b && !trunc_body) begin
                if (p0 ? free4 : free3) begin
                    if (p0) p1 = 1'b1;
                    else begin p0 = 1'b1; pd0 = s3_db; end
                end else trunc_body = 1'b1;
            end
        end
        // At the end a second-to-last word may still come with the last one: two entries.
        trunc_eff = trunc || trunc_body || (s3_eop && accepted && data_a && !free2);
    end

    // ---------------------------------------------------------------- end verdict
    // v = the filter's verdict: FCS error first, then any length check that fails before the
    // deciding header check, then that check's code completed with what only the end knows
    // (each kind of header verdict worked out beside the others, then one chosen).
    logic       short, tl_eff, place_cpu, arp_take, end_ok, cpu_toolong;
    logic [4:0] code, v, cpu_code, pend_code;
    logic       is_arp_c, is_cpu_c, is_pend_c;
    always_comb begin
        short  = s3_short[hf.need];
        tl_eff = cpu_tl_lat || cpu_toolong;
        is_arp_c  = hf.code == C_ARP;
        is_pend_c = hf.code == fhg_rx_pkg::V_PEND;
        arp_take  = !s3_short[N42] && arp_room_f && hf.arp_ok;
        // a frame for the CPU (by its header, or an ARP frame not consumed with cpu_rx on)
        is_cpu_c  = hf.code == fhg_rx_pkg::V_CPU || (is_arp_c && !arp_take && hf.cpu_rx);
        cpu_code  = (s3_big || tl_eff) ? fhg_rx_pkg::V_LENGTH
                  : !claimed ? fhg_rx_pkg::V_CPU_BUSY : fhg_rx_pkg::V_CPU;
        pend_code = disabled ? fhg_rx_pkg::V_DISABLED
                  : (noroom || trunc_eff) ? fhg_rx_pkg::V_OVERRUN
                  : s3_big ? fhg_rx_pkg::V_LENGTH : fhg_rx_pkg::V_PEND;
        if (is_cpu_c)       code = cpu_code;
        else if (is_pend_c) code = pend_code;
        else if (is_arp_c)  code = arp_take ? fhg_rx_pkg::V_ARP : fhg_rx_pkg::V_ARP_DROP;
        else                code = hf.code;
        v = s3_err ? fhg_rx_pkg::V_FCS : short ? fhg_rx_pkg::V_LENGTH : code;
        place_cpu = is_cpu_c && !s3_big && !tl_eff && !s3_err && !short;
        // A datagram's end is good when the header passed and nothing at the end failed;
        // written out on its own so it does not wait for the whole verdict.
        end_ok = is_pend_c && !s3_err && !short && !s3_big && !disabled && !noroom &&
                 !trunc_eff;
    end

    logic          q0, q1;
    logic [FW-1:0] qd0, qd1;
    logic [1023:0] last_d;
    always_comb begin
        last_d = hold_b ? s3_db : hold_a ? s3_da : held_d;
        q0 = p0; q1 = p1;
        qd0 = {8'hFF, 1'b0, 1'b0, pd0};
        qd1 = {8'hFF, 1'b0, 1'b0, pd1};
        if (s3_eop && accepted) begin
            // The entries do not depend on the verdict, only the end's `ok` bit does (the
            // merger discards a datagram whose last entry says not ok).
            if (data_a && !trunc_eff) begin
                q0 = 1'b1; qd0 = {8'hFF, 1'b0, 1'b0, s3_da};
                q1 = 1'b1; qd1 = {hf.lastb, 1'b1, end_ok, last_d};
            end else begin
                q0 = 1'b1; qd0 = {hf.lastb, 1'b1, end_ok, last_d};
                q1 = 1'b0;
            end
        end
    end

    always_ff @(posedge clk) begin
        if (s3_h) begin
            acc_lat      <= acc_now;
            claim_lat    <= cpu_want && cpu_grant;
            disabled_lat <= s3_hf.cand && !cfg.fabric_en;
            noroom_lat   <= s3_hf.cand && cfg.fabric_en && !acc_now;
            arp_room_lat <= arp_room;
            cpu_tl_lat   <= 1'b0;
        end
        if (trunc_body) trunc <= 1'b1;
        if (cpu_toolong) cpu_tl_lat <= 1'b1;
        if (hold_a) held_d <= s3_da;
        if (hold_b) held_d <= s3_db;
        if (s3_eop || rst) begin
            acc_lat <= 1'b0; claim_lat <= 1'b0; trunc <= 1'b0; cpu_tl_lat <= 1'b0;
        end
    end

    // ---------------------------------------------------------------- CPU words
    // Rows beyond the 16 KiB buffer make the frame too long for it (rx_drop_length).
    logic [7:0] w_next;
    assign w_next      = s3_w + 8'd1;
    assign cpu_toolong = claim_lat && ((s3_r0 && s3_w[7]) || (s3_r1 && w_next[7]));
    always_comb begin
        cpu_wr.we0   = claimed && s3_r0 && !s3_w[7];
        cpu_wr.row0  = s3_w[6:0];
        cpu_wr.data0 = s3_c;
        cpu_wr.we1   = claimed && s3_r1 && !w_next[7];
        cpu_wr.row1  = w_next[6:0];
        cpu_wr.data1 = s3_r;
    end

    // ---------------------------------------------------------------- registered outputs
    // The verdict and what follows from it leave through registers, one cycle later.
    always_ff @(posedge clk) begin
        acc_push      <= acc_now;
        acc_meta      <= s3_meta;
        acc_tag       <= s3_tag;
        cpu_end       <= s3_eop && claimed;
        cpu_end_ok    <= place_cpu;
        cpu_len       <= s3_len[13:0];
        arp_evt       <= s3_eop && is_arp_c && arp_take && !s3_err && !short;
        arp_evt_reply <= hf.arp_rep;
        arp_sha       <= hf.sha;
        arp_spa       <= hf.spa;
        ev_tag        <= s3_tag;
        vd_valid      <= s3_eop;
        vd_code       <= v;
        vd_bytes      <= s3_eop ? s3_len : 15'd0;
        if (rst) begin
            acc_push <= 1'b0; cpu_end <= 1'b0; arp_evt <= 1'b0; vd_valid <= 1'b0;
        end
    end

    // ================================================================ lane FIFO
    // Pushes are registered on their way in (the FIFO's write logic starts from registers).
    logic          f_q0, f_q1;
    logic [FW-1:0] f_qd0, f_qd1;
    always_ff @(posedge clk) begin
        f_q0 <= q0; f_q1 <= q1; f_qd0 <= qd0; f_qd1 <= qd1;
        if (rst) begin
            f_q0 <= 1'b0; f_q1 <= 1'b0;
        end
    end
    fhg_rx_lane_fifo #(.WIDTH(FW), .DEPTH(FIFO_DEPTH)) u_fifo (
        .clk(clk), .rst(rst),
        .push0(f_q0), .data0(f_qd0), .push1(f_q1), .data1(f_qd1),
        .count(lf_count),
        .rd_valid(lf_valid), .rd_data(lf_data), .rd_pop(lf_pop)
    );

    logic unused_ok;
    assign unused_ok = &{1'b0, s1_hdr[383:336], h_b20[7:6], h_sha[0], h_spa[0]};
endmodule
