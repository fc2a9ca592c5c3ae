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
//     occupies is final and the first two are already fetched, after which the prefetch
//     (one word per cycle, as fast as the bus consumes) cannot fall behind.
//   * tready low holds the bus unchanged (PG369 "Almost Full" behaviour). With USE_TAF the
//     packer starts no new frame while taf is high; without it, taf is ignored and only
//     tready stalls the bus (both are compliant; see docs/design/core.md §2).
//   * Frames flagged `drop` (no ARP entry) are skipped without touching the bus.
//   * Control frames (hardware ARP replies, CPU frames; ctl_*) go out between data frames:
//     a waiting control frame is sent as soon as the data frame in progress has ended, so
//     it waits at most one data frame. It starts on segment 0 and occupies whole cycles;
//     its source must present one word per cycle (ctl_word_valid) once ctl_valid is high.
//   * Throughput: up to 8 segments per cycle, i.e. the DCMAC's own pacing is the limit.
//   * Latency: header entry → first segment on the bus >= RD_LATENCY + 4 cycles.
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
    localparam int HQ_DEPTH = 16,
    localparam int HQ_AW    = $clog2(HQ_DEPTH)
) (
    input  wire                 clk,
    input  wire                 rst,

    input  wire                 hq_valid,
    input  wire  [HQ_W-1:0]     hq_data,
    output logic [HQ_AW:0]      hq_room,

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
    output logic [1023:0]       tx_tdata,    // segment i in bits 128i+127:128i
    output logic [7:0]          tx_ena,
    output logic [7:0]          tx_sop,
    output logic [7:0]          tx_eop,
    output logic [7:0]          tx_err,
    output logic [31:0]         tx_mty,      // segment i in bits 4i+3:4i

    output logic                idle,        // nothing queued, nothing on the bus
    output logic [1:0]          stat_frames,    // frames completed on the bus this cycle
    output logic [LEN_W+1:0]    stat_bytes,     // their bytes (FCS excluded)
    output logic [LEN_W+1:0]    stat_payload,   // their UDP payload bytes
    output logic                stat_arp_miss,  // a frame was skipped (no ARP entry)
    output logic                stat_ctl_frame, // a control frame completed on the bus
    output logic [LEN_W+1:0]    stat_ctl_bytes,
    output logic                stat_underrun   // must never fire: bus gap inside a frame
);
    // ------------------------------------------------------------------ pointer helpers
    function automatic logic before_w(input logic [WP-1:0] a, input logic [WP-1:0] b);
        logic [WP-1:0] d;
        d = a - b;
        before_w = d[WP-1];
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

    hq_t hq_mem [HQ_DEPTH];
    logic [HQ_AW-1:0] hq_head, hq_tail;
    logic [HQ_AW:0]   hq_count;
    logic [1:0] hq_pop;              // entries retired this cycle
    hq_t f0, f1;
    /* verilator lint_off UNUSEDSIGNAL */
    hq_t f2;                         // a third frame never completes inside 8 segments
    /* verilator lint_on UNUSEDSIGNAL */
    logic f0_v, f1_v, f2_v;

    always_comb begin
        f0 = hq_mem[hq_head];
        f1 = hq_mem[hq_head + HQ_AW'(1)];
        f2 = hq_mem[hq_head + HQ_AW'(2)];
        f0_v = hq_count >= (HQ_AW+1)'(1);
        f1_v = hq_count >= (HQ_AW+1)'(2);
        f2_v = hq_count >= (HQ_AW+1)'(3);
    end
    assign hq_room = (HQ_AW+1)'(HQ_DEPTH) - hq_count;

    logic [SP-1:0] hq_last_end;      // end segment of the newest queued frame
    hq_t hq_in;
    assign hq_in = hq_data;
    always_ff @(posedge clk) begin
        if (hq_valid) begin
            hq_mem[hq_tail] <= hq_in;
            hq_tail <= hq_tail + HQ_AW'(1);
            hq_last_end <= hq_in.start + SP'(hq_in.nseg);
        end
        hq_head  <= hq_head + HQ_AW'(hq_pop);
        hq_count <= hq_count + (HQ_AW+1)'(hq_valid) - (HQ_AW+1)'(hq_pop);
        if (rst) begin
            hq_head  <= '0;
            hq_tail  <= '0;
            hq_count <= '0;
        end
    end

    // ------------------------------------------------------------------ word prefetch
    localparam int WQ = 8;           // >= RD_LATENCY + 4
    logic [1023:0] wq_mem [WQ];
    logic [2:0]    wq_head, wq_tail;
    logic [3:0]    wq_count;          // words present
    logic [WP-1:0] wq_base;           // buffer index of the word at wq_head
    logic [WP-1:0] fa;                // next word to fetch
    logic [RD_LATENCY-1:0] fl_v;      // fetches in flight (shift register)
    logic [RD_LATENCY-1:0] fl_bank;
    logic [2:0]    fl_n;
    logic          flush;             // from the emission logic: restart fetching at flush_to
    logic [WP-1:0] flush_to;
    logic          wq_pop;

    always_comb begin
        fl_n = '0;
        for (int i = 0; i < RD_LATENCY; i++) fl_n = fl_n + 3'(fl_v[i]);
    end

    logic fetch;
    assign fetch = !flush && f0_v
                   && before_w(fa, final_word)
                   && before_w(fa, hq_last_end[SP-1:3] + WP'(hq_last_end[2:0] != 3'd0))
                   && (4'(wq_count) + 4'(fl_n) + 4'(1) <= 4'(WQ) + 4'(wq_pop));

    assign rd0_en   = fetch && !fa[0];
    assign rd1_en   = fetch &&  fa[0];
    assign rd0_addr = fa[AW-1:1];
    assign rd1_addr = fa[AW-1:1];

    logic arrive;
    logic [1023:0] arrive_data;
    assign arrive      = fl_v[RD_LATENCY-1];
    assign arrive_data = fl_bank[RD_LATENCY-1] ? rd1_data : rd0_data;

    always_ff @(posedge clk) begin
        fl_v    <= {fl_v[RD_LATENCY-2:0], fetch};
        fl_bank <= {fl_bank[RD_LATENCY-2:0], fa[0]};
        if (fetch) fa <= fa + WP'(1);
        if (arrive) begin
            wq_mem[wq_tail] <= arrive_data;
            wq_tail <= wq_tail + 3'd1;
        end
        if (wq_pop) begin
            wq_head <= wq_head + 3'd1;
            wq_base <= wq_base + WP'(1);
        end
        wq_count <= wq_count + 4'(arrive) - 4'(wq_pop);
        if (flush) begin
            // Words in flight belong to the old position: drop them with the queue.
            fl_v     <= '0;
            fa       <= flush_to;
            wq_head  <= '0;
            wq_tail  <= '0;
            wq_count <= '0;
            wq_base  <= flush_to;
        end
        if (rst) begin
            fl_v     <= '0;
            fa       <= '0;
            wq_head  <= '0;
            wq_tail  <= '0;
            wq_count <= '0;
            wq_base  <= '0;
        end
    end

    // ------------------------------------------------------------------ emission decision
    logic          ce;                // the output register may take a new cycle
    logic [SP-1:0] rp;                // next segment to send
    logic          started;           // f0 has sent its SOP
    assign ce = !tx_tvalid || tx_tready;
    assign rd_word = rp[SP-1:3];

    logic [SP-1:0] e0, e1, e2;
    logic          c1, c2;            // f1 (f2) may follow in the same cycles
    logic [4:0]    avail;             // segments present in the window from rp
    logic [3:0]    m;                 // segments to send this cycle
    logic [2:0]    sh;
    logic          w0_ok, w1_ok;
    logic          do_jump, do_skip, do_emit, do_ctl;
    logic          ctl_act;           // a control frame is partly sent
    logic [NSEG_W-1:0] ctl_left, ctl_n;
    logic [3:0]    ctl_m;
    logic [3:0]    ctl_mty_q;

    function automatic logic last_word_final(input logic [SP-1:0] end_seg);
        logic [WP-1:0] last_word;
        last_word = WP'((end_seg - SP'(1)) >> 3);
        last_word_final = before_w(last_word, final_word);
    endfunction

    logic [SP-1:0] lim, span, nrp;
    logic [4:0]    room;

    // A frame may start only if the bus will never wait for it: every word it occupies is
    // final, and either it ends inside the words already fetched or enough fetches are
    // present or in flight for the one-word-per-cycle prefetch to stay ahead of the bus.
    logic [3:0] have;
    assign have = wq_count + 4'(fl_n);
    function automatic logic can_start(input logic [SP-1:0] end_seg);
        logic [SP-1:0] fetched_end;
        fetched_end = {wq_base, 3'b000} + SP'({wq_count, 3'b000});
        can_start = last_word_final(end_seg)
               && (((fetched_end - end_seg) < SP'(1 << (SP - 1)))
                   || have >= 4'(RD_LATENCY + 3));
    endfunction

    always_comb begin
        e0 = f0.start + SP'(f0.nseg);
        e1 = e0 + SP'(f1.nseg);
        e2 = e1 + SP'(f2.nseg);
        c1 = f1_v && !f1.drop && (f1.start == e0) && can_start(e1) && !hold
             && !(USE_TAF && tx_taf) && !ctl_valid;
        c2 = c1 && f2_v && !f2.drop && (f2.start == e1) && can_start(e2);
        sh = rp[2:0];
        w0_ok = (wq_count >= 4'd1) && (wq_base == rp[SP-1:3]);
        w1_ok = w0_ok && (wq_count >= 4'd2);
        avail = !w0_ok ? 5'd0 : (w1_ok ? 5'd16 : 5'd8) - 5'(sh);

        do_jump = 1'b0;
        do_skip = 1'b0;
        do_emit = 1'b0;
        m = '0;
        flush = 1'b0;
        flush_to = f0.start[SP-1:3];
        // Control frames: started between data frames, then sent to their end.
        do_ctl = ce && ctl_word_valid && (ctl_act || (!started && ctl_valid && !hold));
        ctl_n = ctl_act ? ctl_left : ctl_nseg;
        ctl_m = (ctl_n > NSEG_W'(8)) ? 4'd8 : 4'(ctl_n);
        if (ctl_act || (!started && ctl_valid)) begin
            // nothing for the data path this cycle
        end else if (f0_v && !started) begin
            if (f0.drop) begin
                do_skip = 1'b1;
            end else if (f0.start != rp || wq_base != f0.start[SP-1:3]) begin
                // Between frames, across a hole or a skipped frame: move to the frame's
                // first segment and refetch if the window is not on its word.
                do_jump = 1'b1;
                flush = wq_base != f0.start[SP-1:3];
            end
        end
        lim  = c2 ? e2 : (c1 ? e1 : e0);
        span = lim - rp;
        room = (span > SP'(8)) ? 5'd8 : 5'(span);
        if (avail < room) room = avail;
        if (f0_v && !do_skip && !do_jump && ce && !ctl_act && !(ctl_valid && !started)) begin
            // A cycle may end short only at a frame end.
            if (room == 5'd8 || (rp + SP'(room)) == lim) begin
                m = 4'(room);
            end else if (c1 && (rp + SP'(room)) >= e1 && e1 != rp) begin
                m = 4'(e1 - rp);
            end else if ((rp + SP'(room)) >= e0 && e0 != rp) begin
                m = 4'(e0 - rp);
            end
            // A new frame starts only when all its words are final and two are fetched.
            if (!started) begin
                if (!can_start(e0) || (USE_TAF && tx_taf) || hold)
                    m = '0;
            end
            do_emit = m != 4'd0;
        end
    end

    // Which segments of this cycle carry SOP/EOP/header bytes.
    logic [7:0]   c_sop, c_eop, c_ena;
    logic [31:0]  c_mty;
    logic [1:0]   c_hsel [8];        // 0: none, 1: f0, 2: f1, 3: f2
    logic [1:0]   c_hoff [8];
    logic [1:0]   n_done;
    logic [LEN_W+1:0] done_bytes, done_payload;
    always_comb begin
        n_done = '0;
        done_bytes = '0;
        done_payload = '0;
        for (int i = 0; i < 8; i++) begin
            logic [SP-1:0] q;
            q = rp + SP'(i);
            c_ena[i] = 4'(i) < m;
            c_sop[i] = 1'b0;
            c_eop[i] = 1'b0;
            c_mty[4*i +: 4] = '0;
            c_hsel[i] = 2'd0;
            c_hoff[i] = 2'd0;
            if (c_ena[i]) begin
                if (q - f0.start < SP'(3)) begin
                    c_hsel[i] = 2'd1; c_hoff[i] = 2'(q - f0.start);
                end else if (c1 && q - f1.start < SP'(3)) begin
                    c_hsel[i] = 2'd2; c_hoff[i] = 2'(q - f1.start);
                end else if (c2 && q - f2.start < SP'(3)) begin
                    c_hsel[i] = 2'd3; c_hoff[i] = 2'(q - f2.start);
                end
                c_sop[i] = (q == f0.start) || (c1 && q == f1.start)
                           || (c2 && q == f2.start);
                if (q == e0 - SP'(1)) begin
                    c_eop[i] = 1'b1; c_mty[4*i +: 4] = f0.mty;
                end else if (c1 && q == e1 - SP'(1)) begin
                    c_eop[i] = 1'b1; c_mty[4*i +: 4] = f1.mty;
                end else if (c2 && q == e2 - SP'(1)) begin
                    c_eop[i] = 1'b1; c_mty[4*i +: 4] = f2.mty;
                end
            end
        end
        nrp = rp + SP'(m);
        if (do_emit) begin
            // A frame is complete when the new position reached its end (differences
            // wrap to large values while the end is still ahead).
            if ((nrp - e0) < SP'(16)) begin
                n_done = 2'd1;
                done_bytes = (LEN_W+2)'(16 * f0.nseg - f0.mty);
                done_payload = (LEN_W+2)'(f0.len);
                if (c1 && (nrp - e1) < SP'(16)) begin
                    n_done = 2'd2;
                    done_bytes = done_bytes + (LEN_W+2)'(16 * f1.nseg - f1.mty);
                    done_payload = done_payload + (LEN_W+2)'(f1.len);
                end
            end
        end
    end

    // State update of the emission side.
    assign ctl_pop  = do_ctl;
    assign ctl_done = do_ctl && (ctl_n <= NSEG_W'(8));
    always_ff @(posedge clk) begin
        if (do_ctl) begin
            if (!ctl_act) ctl_mty_q <= ctl_mty;
            ctl_act  <= ctl_n > NSEG_W'(8);
            ctl_left <= ctl_n - NSEG_W'(ctl_m);
        end
        if (rst) ctl_act <= 1'b0;
    end

    always_ff @(posedge clk) begin
        stat_arp_miss <= 1'b0;
        if (do_skip) begin
            rp <= f0.start + SP'(f0.nseg);
            stat_arp_miss <= 1'b1;
        end else if (do_jump) begin
            rp <= f0.start;
        end else if (do_emit) begin
            rp <= rp + SP'(m);
            // Still inside a frame after this cycle?
            started <= !((rp + SP'(m)) == e0 || (c1 && (rp + SP'(m)) == e1)
                          || (c2 && (rp + SP'(m)) == e2));
        end
        if (rst) begin
            rp <= '0;
            started <= 1'b0;
            stat_arp_miss <= 1'b0;
        end
    end
    assign hq_pop = do_skip ? 2'd1 : (do_emit ? n_done : 2'd0);
    assign wq_pop = do_emit && ((4'(sh) + m) >= 4'd8);

    // ------------------------------------------------------------------ command register
    logic          k_valid;
    logic [2047:0] k_win;
    logic [2:0]    k_sh;
    logic [7:0]    k_sop, k_eop, k_ena;
    logic [31:0]   k_mty;
    logic [1:0]    k_hsel [8];
    logic [1:0]    k_hoff [8];
    logic [335:0]  k_hdr [3];
    logic [1:0]    k_done;
    logic [LEN_W+1:0] k_bytes, k_payload;
    logic          k_ctl, k_ctl_done;
    logic [1023:0] k_ctl_word;
    logic [7:0]    ctl_ena;
    logic [3:0]    ctl_last_mty;
    always_comb begin
        ctl_last_mty = ctl_act ? ctl_mty_q : ctl_mty;
        for (int i = 0; i < 8; i++) ctl_ena[i] = 4'(i) < ctl_m;
    end

    always_ff @(posedge clk) begin
        if (ce) begin
            k_valid   <= do_emit || do_ctl;
            k_win     <= {wq_mem[wq_head + 3'd1], wq_mem[wq_head]};
            k_sh      <= sh;
            k_ctl     <= do_ctl;
            k_ctl_word <= ctl_word;
            k_ctl_done <= do_ctl && ctl_done;
            if (do_ctl) begin
                k_sop <= {7'b0, !ctl_act};
                k_eop <= ctl_done ? (8'd1 << (ctl_m - 4'd1)) : 8'd0;
                k_ena <= ctl_ena;
                k_mty <= ctl_done ? (32'(ctl_last_mty) << (4 * (ctl_m - 4'd1))) : 32'd0;
            end else begin
                k_sop <= c_sop;
                k_eop <= c_eop;
                k_ena <= c_ena & {8{do_emit}};
                k_mty <= c_mty;
            end
            k_hsel    <= c_hsel;
            k_hoff    <= c_hoff;
            k_hdr[0]  <= f0.hdr;
            k_hdr[1]  <= f1.hdr;
            k_hdr[2]  <= f2.hdr;
            k_done    <= do_emit ? n_done : 2'd0;
            k_bytes   <= done_bytes;
            k_payload <= done_payload;
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
            tx_tvalid <= k_valid;
            tx_ena    <= k_ena;
            tx_sop    <= k_sop & k_ena;
            tx_eop    <= k_eop & k_ena;
            tx_err    <= '0;
            tx_mty    <= k_mty;
            for (int i = 0; i < 8; i++) begin
                logic [127:0] seg;
                logic [335:0] h;
                seg = k_ctl ? k_ctl_word[128*i +: 128] : k_win[128 * (32'(k_sh) + i) +: 128];
                case (k_hsel[i])
                    2'd2:    h = k_hdr[1];
                    2'd3:    h = k_hdr[2];
                    default: h = k_hdr[0];
                endcase
                if (k_hsel[i] != 2'd0 && !k_ctl) begin
                    case (k_hoff[i])
                        2'd0:    seg = h[127:0];
                        2'd1:    seg = h[255:128];
                        default: seg = {seg[127:80], h[335:256]};
                    endcase
                end
                tx_tdata[128*i +: 128] <= k_ena[i] ? seg : 128'b0;
            end
            stat_frames  <= k_done;
            stat_bytes   <= k_bytes;
            stat_payload <= k_payload;
            stat_ctl_frame <= k_ctl_done;
        end
        if (rst) begin
            tx_tvalid <= 1'b0;
            tx_ena    <= '0;
            tx_sop    <= '0;
            tx_eop    <= '0;
        end
    end

    assign idle = !f0_v && !k_valid && !tx_tvalid;
    assign between_frames = !started && !ctl_act && !k_valid && !tx_tvalid;
    assign stat_underrun = (f0_v && started && ce && !do_emit)
                           || (ctl_act && ce && !ctl_word_valid);
    assign stat_ctl_bytes = ctl_total;
endmodule
