// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_packer — reads committed frames from the TX buffer and drives the DCMAC's
// segmented TX client bus (MAC clock domain).
//
// Contract
//   * The buffer holds a stream of 16-byte segments in wire order (fhg_tx_writer); each
//     frame is described by a header-queue entry {start_seg, nseg, mty, len, drop, hdr}
//     from fhg_tx_header. The packer merges the 42-byte header over the frame's first
//     bytes and emits the frames back to back on the 8 x 128-bit segment bus:
//     segments filled in order without gaps, the next frame's SOP in the segment right
//     after the previous EOP, at most 2 SOPs per cycle (frames are >= 4 segments), a frame
//     that starts after an idle (or after a hole in the buffer) starts on segment 0, and
//     tvalid stays high from SOP to EOP: a frame is started only when every buffer word it
//     occupies is final and its words are fetched (or enough of them are on their way for
//     the one-word-per-cycle prefetch to stay ahead of the bus).
//   * tready low holds the bus unchanged (PG369 "Almost Full" behaviour). With USE_TAF the
//     packer starts no new frame while taf is high; without it, taf is ignored and only
//     tready stalls the bus (both are compliant; see docs/design/core.md §2).
//   * Frames flagged `drop` (no ARP entry) are skipped without touching the bus.
//   * Control frames (hardware ARP replies, CPU frames; ctl_*) go out between data frames:
//     a waiting control frame is sent as soon as the data frame in progress has ended, so
//     it waits at most one data frame. It starts on segment 0 and occupies whole cycles;
//     its source must present one word per cycle (ctl_word_valid) once ctl_valid is high.
//   * Throughput: up to 8 segments per cycle, i.e. the DCMAC's own pacing is the limit.
//   * Structure, for a short loop: a header-queue entry is prepared in two registered
//     steps (its end, last word and whether it directly follows the previous frame); the
//     first five entries sit in registers with "may start" flags computed a cycle ahead
//     (never optimistic: buffer words only become final, fetched words only grow until a
//     refetch, after which nothing is sent before the words arrive); the per-cycle decision
//     then only chooses among values prepared from registers — a full cycle of 8 segments,
//     up to the end of the first frame, or up to the end of the second — and the segment
//     marks (SOP/EOP/MTY, where headers go) are worked out in the next stage (`j_*`).
//   * Latency: header entry → first segment on the bus >= RD_LATENCY + 6 cycles; the
//     decision → bus 3 registers (j, k, bus), all held while tready is low.
module fhg_tx_packer #(
    parameter int BUF_WORDS  = 512,
    parameter int RD_LATENCY = 2,        // buffer RAM read latency (cycles)
    parameter bit USE_TAF    = 1'b0,
    localparam int AW      = $clog2(BUF_WORDS),
    localparam int WP      = AW + 1,
    localparam int SP      = AW + 4,
    localparam int LEN_W   = 14,
    localparam int NSEG_W  = 10,
    localparam int HQ_W    = SP + NSEG_W + 4 + LEN_W + 1 + 336,
    localparam int HQ_DEPTH = 32,      // deep enough to ride out the header module's
                                       // latency while frames of < 8 segments drain it
    localparam int HQ_AW    = $clog2(HQ_DEPTH)
) (
    input  wire                 clk,
    input  wire                 rst,

    input  wire                 hq_valid,
    input  wire  [HQ_W-1:0]     hq_data,
    output logic [4:0]          hq_room,     // free queue slots (saturated at 31)

    output logic                rd0_en,
    output logic [AW-2:0]       rd0_addr,
    input  wire  [1023:0]       rd0_data,
    output logic                rd1_en,
    output logic [AW-2:0]       rd1_addr,
    input  wire  [1023:0]       rd1_data,
    input  wire  [WP-1:0]       final_word,  // words below are final (synchronised)
    output logic [WP-1:0]       rd_word,     // words below are no longer needed

    input  wire                 hold,        // start no new frame (drain for a reset)

    input  wire                 ctl_valid,   // a control frame is ready
    input  wire  [NSEG_W-1:0]   ctl_nseg,
    input  wire  [3:0]          ctl_mty,
    input  wire  [1023:0]       ctl_word,    // its next word, wire order
    input  wire                 ctl_word_valid,
    output logic                ctl_pop,     // ctl_word taken this cycle
    output logic                ctl_done,    // ...and it was the frame's last
    output logic                between_frames, // no frame partly sent, bus empty

    output logic                tx_tvalid,
    input  wire                 tx_tready,
    input  wire                 tx_taf,
    output fhg_bus_pkg::seg_bus_t tx_seg,

    output logic                idle,        // nothing queued, nothing on the bus
    output logic [1:0]          stat_frames,    // frames completed on the bus this cycle
    output logic [LEN_W+1:0]    stat_bytes,     // their bytes (FCS excluded)
    output logic [LEN_W+1:0]    stat_payload,   // their UDP payload bytes
    output logic                stat_arp_miss,  // a frame was skipped (no ARP entry)
    output logic                stat_ctl_frame, // a control frame completed on the bus
    output logic [LEN_W+1:0]    stat_ctl_bytes,
    output logic                stat_underrun   // must never fire: a frame's words missing
);
    // ------------------------------------------------------------------ pointer helpers
    function automatic logic before_w(input logic [WP-1:0] a, input logic [WP-1:0] b);
        logic [WP-1:0] d;
        d = a - b;
        before_w = d[WP-1];
    endfunction
    function automatic logic [4:0] sat31(input logic [SP-1:0] x);
        sat31 = (x > SP'(31)) ? 5'd31 : 5'(x);
    endfunction

    // ------------------------------------------------------------------ header queue
    typedef struct packed {
        logic [SP-1:0]     start;
        logic [NSEG_W-1:0] nseg;
        logic [3:0]        mty;
        logic [LEN_W-1:0]  len;
        logic              drop;
        logic [335:0]      hdr;
    } hq_t;

    // What the decision needs of a frame, prepared before it enters the queue.
    typedef struct packed {
        logic [SP-1:0]     start;
        logic [SP-1:0]     fend;       // segment after the frame's last
        logic [WP-1:0]     lastw;      // word of the frame's last segment
        logic [NSEG_W-1:0] nseg;
        logic [4:0]        nseg_s;     // nseg, saturated at 31
        logic [3:0]        mty;
        logic [LEN_W-1:0]  len;
        logic [LEN_W+1:0]  bytes;      // frame bytes on the bus (FCS excluded)
        logic              drop;
        logic              cont;       // starts where the frame before it ends
        logic [4:0]        nle;        // nseg <= 4 + j, j = 0..4
        logic [4:0]        neq;        // nseg == 4 + j
    } dec_t;

    hq_t hq_in;
    assign hq_in = hq_data;

    // Step 1: the frame's end.
    logic          p1_v;
    hq_t           p1_e;
    logic [SP-1:0] p1_end;
    always_ff @(posedge clk) begin
        p1_v <= hq_valid;
        if (hq_valid) begin
            p1_e   <= hq_in;
            p1_end <= hq_in.start + SP'(hq_in.nseg);
        end
        if (rst) p1_v <= 1'b0;
    end

    // Step 2: last word, contiguity, bytes; the entry is written into the queue.
    logic          p2_v;
    hq_t           p2_e;
    dec_t          p2_d;
    logic [SP-1:0] last_end;         // end of the newest entry
    logic [WP-1:0] last_endw;        // the word after the newest entry's last word
    always_ff @(posedge clk) begin
        p2_v <= p1_v;
        if (p1_v) begin
            p2_e         <= p1_e;
            p2_d.start   <= p1_e.start;
            p2_d.fend    <= p1_end;
            p2_d.lastw   <= WP'((p1_end - SP'(1)) >> 3);
            p2_d.nseg    <= p1_e.nseg;
            p2_d.nseg_s  <= (p1_e.nseg > NSEG_W'(31)) ? 5'd31 : 5'(p1_e.nseg);
            p2_d.mty     <= p1_e.mty;
            p2_d.len     <= p1_e.len;
            p2_d.bytes   <= (LEN_W+2)'({p1_e.nseg, 4'b0000}) - (LEN_W+2)'(p1_e.mty);
            p2_d.drop    <= p1_e.drop;
            p2_d.cont    <= p1_e.start == last_end;
            for (int j = 0; j < 5; j++) begin
                p2_d.nle[j] <= p1_e.nseg <= NSEG_W'(4 + j);
                p2_d.neq[j] <= p1_e.nseg == NSEG_W'(4 + j);
            end
            last_end     <= p1_end;
            last_endw    <= p1_end[SP-1:3] + WP'(p1_end[2:0] != 3'd0);
        end
        if (rst) p2_v <= 1'b0;
    end

    hq_t  hq_mem [HQ_DEPTH];
    dec_t dq_mem [HQ_DEPTH];
    logic [HQ_AW-1:0] hq_head, hq_tail;
    logic [HQ_AW:0]   hq_count;
    logic [1:0]       npop;             // entries retired this cycle
    always_ff @(posedge clk) begin
        if (p2_v) begin
            hq_mem[hq_tail] <= p2_e;
            dq_mem[hq_tail] <= p2_d;
            hq_tail <= hq_tail + HQ_AW'(1);
        end
        if (rst) hq_tail <= '0;
    end
    // Room the header module may fill, registered: the entries in the two preparation
    // steps and the one the header module hands over now are counted as taken.
    logic [HQ_AW+1:0] hq_taken;
    assign hq_taken = (HQ_AW+2)'(hq_count) + (HQ_AW+2)'(p1_v) + (HQ_AW+2)'(p2_v)
                      + (HQ_AW+2)'(hq_valid);
    always_ff @(posedge clk)
        hq_room <= (hq_taken >= (HQ_AW+2)'(HQ_DEPTH)) ? '0
                   : (hq_taken == '0) ? 5'd31 : 5'((HQ_AW+2)'(HQ_DEPTH) - hq_taken);

    // ------------------------------------------------------------------ decision window
    // W[k] = entry head+k (k < 5), in registers; cs[k] = it may start (k < 3).
    localparam int NW = 5;
    dec_t      W [NW];
    logic [2:0] cs;
    logic [2:1] go;                  // slot k may follow the one before it in one cycle
    logic      v0, v1, v2;
    assign v0 = hq_count >= (HQ_AW+1)'(1);
    assign v1 = hq_count >= (HQ_AW+1)'(2);
    assign v2 = hq_count >= (HQ_AW+1)'(3);

    // Next-window candidates for a pop of n: slot k takes entry n+k, from the window,
    // from memory (n+k >= 5) or from the entry written this cycle.
    dec_t  cand [3][NW];
    logic  cs_cand [NW];
    dec_t  mem5, mem6;
    always_comb begin
        mem5 = dq_mem[hq_head + HQ_AW'(5)];
        mem6 = dq_mem[hq_head + HQ_AW'(6)];
        for (int n = 0; n < 3; n++)
            for (int k = 0; k < NW; k++) begin
                if (p2_v && hq_count == (HQ_AW+1)'(n + k)) cand[n][k] = p2_d;
                else if (n + k < NW)                        cand[n][k] = W[(n + k) % NW];
                else if (n + k == NW)                       cand[n][k] = mem5;
                else                                        cand[n][k] = mem6;
            end
    end

    // ------------------------------------------------------------------ word prefetch
    localparam int WQ = 8;           // >= RD_LATENCY + 5
    logic [1023:0] wq_mem [WQ];
    logic [2:0]    wq_head, wq_tail;
    logic [3:0]    wq_count;          // words present
    logic [WP-1:0] wq_base;           // buffer index of the word at wq_head
    logic [WP-1:0] wq_end;            // wq_base + wq_count: the word after the last present
    logic [WP-1:0] wq_end1, wq_end_nx; // wq_end + 1; wq_end after this cycle (but a refetch)
    logic [WP-1:0] fa;                // next word to fetch
    logic [RD_LATENCY-1:0] fl_v;      // fetches in flight (shift register)
    logic [RD_LATENCY-1:0] fl_bank;
    logic [2:0]    fl_n;
    logic [3:0]    have_q;            // words present or in flight, a cycle ago
    logic          flush;             // from the decision: restart fetching at flush_to
    logic [WP-1:0] flush_to;
    logic          wq_pop;

    always_comb begin
        fl_n = '0;
        for (int i = 0; i < RD_LATENCY; i++) fl_n = fl_n + 3'(fl_v[i]);
    end

    // A fetch issued in the cycle of a refetch is discarded with the words in flight.
    logic fetch;
    assign fetch = v0 && before_w(fa, final_word) && before_w(fa, last_endw)
                   && (4'(wq_count) + 4'(fl_n) < 4'(WQ));

    assign rd0_en   = fetch && !fa[0];
    assign rd1_en   = fetch &&  fa[0];
    assign rd0_addr = fa[AW-1:1];
    assign rd1_addr = fa[AW-1:1];

    logic arrive;
    logic [1023:0] arrive_data;
    assign arrive      = fl_v[RD_LATENCY-1];
    assign arrive_data = fl_bank[RD_LATENCY-1] ? rd1_data : rd0_data;

    logic [3:0] wqc_keep, wqc_pop;   // the count after this cycle without and with a pop
    assign wqc_keep = wq_count + 4'(arrive);
    assign wqc_pop  = wq_count + 4'(arrive) - 4'd1;
    always_ff @(posedge clk) begin
        fl_v    <= {fl_v[RD_LATENCY-2:0], fetch};
        fl_bank <= {fl_bank[RD_LATENCY-2:0], fa[0]};
        have_q  <= 4'(wq_count) + 4'(fl_n);
        if (fetch) fa <= fa + WP'(1);
        if (arrive) begin
            wq_mem[wq_tail] <= arrive_data;
            wq_tail <= wq_tail + 3'd1;
            wq_end  <= wq_end1;
            wq_end1 <= wq_end1 + WP'(1);
        end
        if (wq_pop) begin
            wq_head <= wq_head + 3'd1;
            wq_base <= wq_base + WP'(1);
        end
        wq_count <= wq_pop ? wqc_pop : wqc_keep;
        if (flush) begin
            // Words in flight belong to the old position: drop them with the queue.
            fl_v     <= '0;
            fa       <= flush_to;
            wq_head  <= '0;
            wq_tail  <= '0;
            wq_count <= '0;
            wq_base  <= flush_to;
            wq_end   <= flush_to;
            wq_end1  <= flush_to + WP'(1);
        end
        if (rst) begin
            fl_v     <= '0;
            fa       <= '0;
            wq_head  <= '0;
            wq_tail  <= '0;
            wq_count <= '0;
            wq_base  <= '0;
            wq_end   <= '0;
            wq_end1  <= WP'(1);
        end
    end
    assign wq_end_nx = arrive ? wq_end1 : wq_end;

    // A frame may start only if the bus will never wait for it: every word it occupies is
    // final, and either it ends inside the words already fetched or enough fetches are
    // present or in flight for the prefetch to stay ahead of the bus. Judged for the next
    // cycle, when the flag is used: the fetched words as they will be then (a refetch makes
    // them fewer, but then nothing starts before words arrive), the count a cycle late, so
    // one more than the prefetch needs.
    always_comb
        for (int j = 0; j < NW; j++)
            cs_cand[j] = before_w(W[j].lastw, final_word)
                         && ((({wq_end_nx, 3'b000} - W[j].fend) < SP'(1 << (SP - 1)))
                             || have_q >= 4'(RD_LATENCY + 4));

    // ------------------------------------------------------------------ emission decision
    logic          ce;                // the bus pipeline may take a new cycle
    logic [SP-1:0] rp, rp8;           // next segment to send; rp + 8
    logic          started;           // W[0] has sent its SOP
    logic          at0;               // rp is W[0]'s first segment
    logic [SP-1:0] d0;                // segments W[0] still has from rp
    logic [3:0]    d0s;               // d0, saturated at 15
    logic [1:0]    hs0;               // header segments of W[0] already sent (3: all)
    logic          ctl_act;           // a control frame is partly sent
    logic [NSEG_W-1:0] ctl_left, ctl_n;
    logic [3:0]    ctl_m;
    logic [3:0]    ctl_mty_q;
    logic          j_valid, k_valid;
    assign ce = !tx_tvalid || tx_tready;
    assign rd_word = rp[SP-1:3];

    logic          hold_any, c1, c2, le8_0, le8_1, d1_eq8, ctl_block, aligned, wq_on0;
    logic          ctl_seen;
    logic [5:0]    d1s;               // segments to W[1]'s end (when W[1] follows W[0])
    logic [2:0]    sh;
    logic          cls_e0, cls_e1, cls_f, need_two, avail_ok, may_start;
    logic          do_skip, do_jump, do_emit, do_ctl;
    logic [1:0]    n_f;               // frames a full cycle completes
    always_comb begin
        hold_any = hold || (USE_TAF && tx_taf);
        // A control frame that has just arrived stops the run a cycle later (ctl_seen): at
        // most the frame then starting goes before it, as when it arrived between frames.
        c1 = go[1] && !hold_any && !ctl_seen;
        c2 = c1 && go[2];
        le8_0 = d0s <= 4'd8;
        d1s   = 6'(d0s) + 6'(W[1].nseg_s);
        // d0 + nseg(W[1]) <= 8 (== 8) from W[1]'s flags, without an adder (nseg >= 4)
        le8_1 = 1'b0;
        d1_eq8 = 1'b0;
        for (int d = 0; d <= 4; d++)
            if (d0s == 4'(d)) begin
                le8_1  = W[1].nle[4 - d];
                d1_eq8 = W[1].neq[4 - d];
            end
        sh    = rp[2:0];
        // The cycle ends at W[0]'s end (E0), at W[1]'s end (E1), or is full (F).
        cls_e0 = !c1 && le8_0;
        cls_e1 = c1 && !c2 && le8_1;
        cls_f  = !cls_e0 && !cls_e1;
        n_f    = !le8_0 ? 2'd0 : ((c2 && le8_1) ? 2'd2 : 2'd1);
        // The words the cycle needs are present (the first, and the second if it reaches it).
        // (the frame's last segment lies in the next word)
        need_two = cls_f ? (sh != 3'd0)
                 : cls_e0 ? (W[0].lastw != rp[SP-1:3]) : (W[1].lastw != rp[SP-1:3]);
        aligned  = wq_base == rp[SP-1:3];
        avail_ok = aligned && wq_count != 4'd0 && (!need_two || wq_count >= 4'd2);
        wq_on0   = wq_base == W[0].start[SP-1:3];

        ctl_block = ctl_act || (!started && ctl_valid);
        may_start = started || (cs[0] && !hold_any);
        do_skip = v0 && !ctl_block && !started && W[0].drop;
        do_jump = v0 && !ctl_block && !started && !W[0].drop && !(at0 && aligned);
        // A started frame goes on every cycle the bus takes one: its words are there by
        // construction (a frame starts only with its words final and fetched or fetching,
        // and the prefetch keeps ahead); stat_underrun checks it.
        do_emit = ce && v0 && !ctl_block && !started && !W[0].drop && at0 && aligned
                  && may_start && avail_ok
                  || ce && v0 && !ctl_act && started;
        flush    = do_jump && !wq_on0;
        flush_to = W[0].start[SP-1:3];

        // Control frames: started between data frames, then sent to their end.
        do_ctl = ce && ctl_word_valid && (ctl_act || (!started && ctl_valid && !hold));
        ctl_n  = ctl_act ? ctl_left : ctl_nseg;
        ctl_m  = (ctl_n > NSEG_W'(8)) ? 4'd8 : 4'(ctl_n);
    end

    assign npop   = do_skip ? 2'd1 : !do_emit ? 2'd0 : cls_e0 ? 2'd1 : cls_e1 ? 2'd2 : n_f;
    // (the cycle ends at or past the end of rp's word)
    assign wq_pop = do_emit && (cls_f || (cls_e0 ? (W[0].fend[SP-1:3] != rp[SP-1:3])
                                                  : (W[1].fend[SP-1:3] != rp[SP-1:3])));

    // Candidates of the next state, from registers; the decision only picks one.
    logic [SP-1:0] f_d0 [3];          // a full cycle that leaves W[n] first: W[n].end - rp8
    logic [3:0]    f_d0s [3];
    logic [1:0]    f_hs0 [3];
    logic [SP-1:0] rp16, e0_8, e1_8, s0_8;
    always_comb begin
        for (int n = 0; n < 3; n++) f_d0[n] = W[n].fend - rp8;
        // saturated: W[0] continues (d0 > 8); W[1] started at d0s; W[2] at d1s
        f_d0s[0] = (d0 > SP'(23)) ? 4'd15 : 4'(d0 - SP'(8));
        f_d0s[1] = (d1s > 6'd23) ? 4'd15 : 4'(d1s - 6'd8);
        f_d0s[2] = (7'(d1s) + 7'(W[2].nseg_s) > 7'd23) ? 4'd15
                   : 4'(7'(d1s) + 7'(W[2].nseg_s) - 7'd8);
        f_hs0[0] = 2'd3;
        f_hs0[1] = (d0s <= 4'd5) ? 2'd3 : 2'(4'd8 - d0s);
        f_hs0[2] = (d1s <= 6'd5) ? 2'd3 : 2'(6'd8 - d1s);
        rp16 = rp + SP'(16);
        e0_8 = W[0].fend + SP'(8);
        e1_8 = W[1].fend + SP'(8);
        s0_8 = W[0].start + SP'(8);
    end

    // The frame that becomes W[0] after one (two) pops: possibly the one arriving now.
    dec_t nx1, nx2;
    assign nx1 = cand[1][0];
    assign nx2 = cand[2][0];

    logic d0_eq8;
    assign d0_eq8 = d0s == 4'd8;

    always_ff @(posedge clk) begin
        stat_arp_miss <= do_skip;
        if (do_skip) begin
            rp <= W[0].fend;   rp8 <= e0_8;
            d0 <= SP'(nx1.nseg); d0s <= 4'(nx1.nseg_s > 5'd15 ? 5'd15 : nx1.nseg_s);
            at0 <= nx1.cont;   hs0 <= '0;
        end else if (do_jump) begin
            rp <= W[0].start;  rp8 <= s0_8;
            d0 <= SP'(W[0].nseg); d0s <= 4'(W[0].nseg_s > 5'd15 ? 5'd15 : W[0].nseg_s);
            at0 <= 1'b1;       hs0 <= '0;
        end else if (do_emit) begin
            if (cls_e0) begin
                rp <= W[0].fend;  rp8 <= e0_8;
                d0 <= SP'(nx1.nseg); d0s <= 4'(nx1.nseg_s > 5'd15 ? 5'd15 : nx1.nseg_s);
                at0 <= nx1.cont;  hs0 <= '0;
                started <= 1'b0;
            end else if (cls_e1) begin
                rp <= W[1].fend;  rp8 <= e1_8;
                d0 <= SP'(nx2.nseg); d0s <= 4'(nx2.nseg_s > 5'd15 ? 5'd15 : nx2.nseg_s);
                at0 <= nx2.cont;  hs0 <= '0;
                started <= 1'b0;
            end else begin
                rp <= rp8;        rp8 <= rp16;
                d0 <= f_d0[n_f];  d0s <= f_d0s[n_f];
                at0 <= 1'b1;      hs0 <= f_hs0[n_f];
                // Still inside a frame after this cycle, unless one ends exactly with it.
                started <= !(d0_eq8 || (c1 && d1_eq8));
            end
        end else if (!v0 && p2_v) begin
            // A frame arrives in an empty queue: where it stands from here.
            d0  <= SP'(p2_d.nseg);
            d0s <= 4'(p2_d.nseg_s > 5'd15 ? 5'd15 : p2_d.nseg_s);
            at0 <= p2_d.start == rp;
            hs0 <= '0;
        end
        if (rst) begin
            rp <= '0; rp8 <= SP'(8);
            started <= 1'b0;
            at0 <= 1'b0;
            stat_arp_miss <= 1'b0;
        end
    end

    // "May start" of the entries in slots 0..2 after a pop of n: computed this cycle for an
    // entry that exists now (not for one arriving now: it gets its flag next cycle).
    logic cs_next [3][3];
    logic go_next [3][3];
    always_comb
        for (int n = 0; n < 3; n++)
            for (int k = 0; k < 3; k++) begin
                dec_t e;
                e = cand[n][k];
                cs_next[n][k] = (n + k < NW) && hq_count > (HQ_AW+1)'(n + k)
                                && cs_cand[(n + k) % NW];
                go_next[n][k] = cs_next[n][k] && !e.drop && e.cont;
            end

    // Queue and window update by the pops.
    logic [HQ_AW:0] cnt_after [3];
    always_comb
        for (int n = 0; n < 3; n++)
            cnt_after[n] = hq_count + (HQ_AW+1)'(p2_v) - (HQ_AW+1)'(n);
    always_ff @(posedge clk) begin
        hq_head  <= hq_head + HQ_AW'(npop);
        hq_count <= cnt_after[npop];
        for (int k = 0; k < NW; k++) W[k] <= cand[npop][k];
        // "may start" of the entries that stay in slots 0..2, computed this cycle; an entry
        // that arrives now gets its flag in the next cycle.
        for (int k = 0; k < 3; k++)
            cs[k] <= cs_next[npop][k];
        for (int k = 1; k < 3; k++)
            go[k] <= go_next[npop][k];
        if (rst) begin
            hq_head  <= '0;
            hq_count <= '0;
            cs       <= '0;
            go       <= '0;
        end
    end

    // State update of the control frames.
    // The frame's last cycle: judged on each source before the choice between them.
    logic ctl_last, ctl_left_le8;
    assign ctl_last = ctl_act ? ctl_left_le8 : (ctl_nseg <= NSEG_W'(8));
    assign ctl_pop  = do_ctl;
    assign ctl_done = do_ctl && ctl_last;
    logic [NSEG_W-1:0] ctl_n8;
    assign ctl_n8 = ctl_n - NSEG_W'(8);
    always_ff @(posedge clk) begin
        if (do_ctl) begin
            if (!ctl_act) ctl_mty_q <= ctl_mty;
            ctl_act      <= !ctl_last;
            ctl_left     <= ctl_n8;
            ctl_left_le8 <= ctl_n8 <= NSEG_W'(8);
        end
        if (rst) ctl_act <= 1'b0;
    end

    always_ff @(posedge clk) ctl_seen <= ctl_valid && !rst;

    // ------------------------------------------------------------------ stage j
    // What this cycle sends, registered: the window's eight segments from rp (shifted
    // here), the frames involved and where the cycle ends.
    logic [1023:0] j_data;
    logic          j_ctl, j_ctl_first, j_ctl_done;
    logic [3:0]    j_ctl_m, j_ctl_mty;
    logic [1023:0] j_ctl_word;
    logic          j_started, j_c1, j_c2, j_e0, j_e1;
    logic [3:0]    j_m, j_d0s;
    logic [5:0]    j_d1s;
    logic [1:0]    j_hs0, j_done;
    logic [3:0]    j_mty [2];
    logic [LEN_W+1:0] j_bytes [2];
    logic [LEN_W-1:0] j_len [2];
    logic [335:0]  j_hdr [3];
    logic [1023:0] win_lo, win_hi;
    logic [2047:0] win;
    hq_t           head_e [3];
    always_comb begin
        for (int k = 0; k < 3; k++) head_e[k] = hq_mem[hq_head + HQ_AW'(k)];
        win_lo = wq_mem[wq_head];
        win_hi = wq_mem[wq_head + 3'd1];
        win    = {win_hi, win_lo};
    end
    always_ff @(posedge clk) begin
        if (ce) begin
            j_valid     <= do_emit || do_ctl;
            j_ctl       <= do_ctl;
            j_ctl_first <= !ctl_act;
            j_ctl_done  <= do_ctl && ctl_done;
            j_ctl_m     <= ctl_m;
            j_ctl_mty   <= ctl_act ? ctl_mty_q : ctl_mty;
            j_ctl_word  <= ctl_word;
            for (int i = 0; i < 8; i++)
                j_data[128*i +: 128] <= win[128 * (32'(sh) + i) +: 128];
            j_started <= started;
            j_c1      <= c1;
            j_c2      <= c2;
            j_e0      <= le8_0;
            j_e1      <= c1 && le8_1;
            j_m       <= cls_e0 ? d0s : cls_e1 ? 4'(d1s) : 4'd8;
            j_d0s     <= d0s;
            j_d1s     <= d1s;
            j_hs0     <= hs0;
            j_done    <= do_emit ? (cls_e0 ? 2'd1 : cls_e1 ? 2'd2 : n_f) : 2'd0;
            j_mty[0]  <= W[0].mty;
            j_mty[1]  <= W[1].mty;
            j_bytes[0] <= W[0].bytes;
            j_bytes[1] <= W[1].bytes;
            j_len[0]  <= W[0].len;
            j_len[1]  <= W[1].len;
            for (int k = 0; k < 3; k++) j_hdr[k] <= head_e[k].hdr;
        end
        if (rst) j_valid <= 1'b0;
    end

    // ------------------------------------------------------------------ stage k
    // Per segment: enable, SOP, EOP, MTY and which header piece (if any) goes over it.
    logic          k_ctl, k_ctl_done;
    logic [7:0]    k_sop, k_eop, k_ena, k_hsel;
    logic [1:0]    k_hoff [8];
    logic [31:0]   k_mty;
    logic [1023:0] k_data, k_hpiece;
    logic [1:0]    k_done;
    logic [LEN_W+1:0] k_bytes, k_payload;
    always_ff @(posedge clk) begin
        if (ce) begin
            k_valid    <= j_valid;
            k_ctl      <= j_ctl;
            k_ctl_done <= j_ctl_done;
            k_data     <= j_ctl ? j_ctl_word : j_data;
            for (int i = 0; i < 8; i++) begin
                logic en, sop, eop, hs;
                logic [1:0] hoff, hf;
                logic [3:0] mty;
                logic [5:0] r1, r2;
                logic [3:0] r0;
                if (j_ctl) begin
                    en  = 4'(i) < j_ctl_m;
                    sop = i == 0 && j_ctl_first;
                    eop = j_ctl_done && 4'(i) == j_ctl_m - 4'd1;
                    mty = eop ? j_ctl_mty : 4'd0;
                    hs  = 1'b0; hoff = '0; hf = '0;
                end else begin
                    en  = j_valid && 4'(i) < j_m;
                    sop = (!j_started && i == 0) || (j_c1 && 4'(i) == j_d0s)
                          || (j_c2 && 6'(i) == j_d1s);
                    eop = 1'b0; mty = '0;
                    if (j_e0 && 4'(i) == j_d0s - 4'd1) begin
                        eop = 1'b1; mty = j_mty[0];
                    end else if (j_e1 && 6'(i) == j_d1s - 6'd1) begin
                        eop = 1'b1; mty = j_mty[1];
                    end
                    // Header segments: W[0]'s first three (some may have gone last cycle),
                    // then those of the frames that start inside this cycle.
                    r0 = 4'(i) + (j_started ? 4'(j_hs0) : 4'd0);
                    r1 = 6'(i) - 6'(j_d0s);
                    r2 = 6'(i) - j_d1s;
                    hs = 1'b0; hoff = '0; hf = '0;
                    if ((!j_started || j_hs0 != 2'd3) && r0 < 4'd3) begin
                        hs = 1'b1; hf = 2'd0; hoff = 2'(r0);
                    end else if (j_c1 && 6'(i) >= 6'(j_d0s) && r1 < 6'd3) begin
                        hs = 1'b1; hf = 2'd1; hoff = 2'(r1);
                    end else if (j_c2 && 6'(i) >= j_d1s && r2 < 6'd3) begin
                        hs = 1'b1; hf = 2'd2; hoff = 2'(r2);
                    end
                    case (hoff)
                        2'd0:    k_hpiece[128*i +: 128] <= j_hdr[hf][127:0];
                        2'd1:    k_hpiece[128*i +: 128] <= j_hdr[hf][255:128];
                        default: k_hpiece[128*i +: 128] <= {48'b0, j_hdr[hf][335:256]};
                    endcase
                end
                k_ena[i]  <= en;
                k_sop[i]  <= sop && en;
                k_eop[i]  <= eop && en;
                k_mty[4*i +: 4] <= (eop && en) ? mty : 4'd0;
                k_hsel[i] <= hs && en;
                k_hoff[i] <= hoff;
            end
            k_done    <= j_done;
            k_bytes   <= ((j_done != 2'd0) ? j_bytes[0] : '0) + ((j_done == 2'd2) ? j_bytes[1] : '0);
            k_payload <= ((j_done != 2'd0) ? (LEN_W+2)'(j_len[0]) : '0)
                         + ((j_done == 2'd2) ? (LEN_W+2)'(j_len[1]) : '0);
        end
        if (rst) begin
            k_valid <= 1'b0;
            k_ctl_done <= 1'b0;
        end
    end

    // Bytes of a control frame, counted when it completes.
    logic [LEN_W+1:0] ctl_total;
    always_ff @(posedge clk) if (do_ctl && !ctl_act)
        ctl_total <= (LEN_W+2)'(16 * ctl_nseg) - (LEN_W+2)'(ctl_mty);

    // ------------------------------------------------------------------ bus register
    always_ff @(posedge clk) begin
        stat_frames  <= 2'd0;
        stat_bytes   <= '0;
        stat_payload <= '0;
        stat_ctl_frame <= 1'b0;
        if (ce) begin
            tx_tvalid  <= k_valid;
            tx_seg.ena <= k_ena;
            tx_seg.sop <= k_sop;
            tx_seg.eop <= k_eop;
            tx_seg.err <= '0;
            tx_seg.mty <= k_mty;
            for (int i = 0; i < 8; i++) begin
                logic [127:0] seg;
                seg = k_data[128*i +: 128];
                if (k_hsel[i])
                    seg = (k_hoff[i] == 2'd2) ? {seg[127:80], k_hpiece[128*i +: 80]}
                                              : k_hpiece[128*i +: 128];
                tx_seg.tdata[128*i +: 128] <= k_ena[i] ? seg : 128'b0;
            end
            stat_frames  <= k_done;
            stat_bytes   <= k_bytes;
            stat_payload <= k_payload;
            stat_ctl_frame <= k_ctl_done;
        end
        if (rst) begin
            tx_tvalid  <= 1'b0;
            tx_seg.ena <= '0;
            tx_seg.sop <= '0;
            tx_seg.eop <= '0;
        end
    end

    // A started frame that cannot go on is a gap inside it (never expected); registered.
    // (its parts registered first, then combined: it is only a check)
    logic un_go, un_two, un_al, un_c1, un_c2, un_ctl;
    always_ff @(posedge clk) begin
        un_go  <= v0 && started && ce && !ctl_act;
        un_two <= need_two;
        un_al  <= aligned;
        un_c1  <= wq_count >= 4'd1;
        un_c2  <= wq_count >= 4'd2;
        un_ctl <= ctl_act && ce && !ctl_word_valid;
        stat_underrun <= (un_go && !(un_al && un_c1 && (!un_two || un_c2))) || un_ctl;
        if (rst) begin
            un_go <= 1'b0; un_ctl <= 1'b0; stat_underrun <= 1'b0;
        end
    end

    assign idle = !v0 && !p1_v && !p2_v && !j_valid && !k_valid && !tx_tvalid;
    assign between_frames = !started && !ctl_act && !j_valid && !k_valid && !tx_tvalid;
    assign stat_ctl_bytes = ctl_total;

    logic unused_ok;
    assign unused_ok = &{1'b0, W[3].drop, W[4].drop, k_ctl};
endmodule
