// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rdma_sf — store-and-forward datagram FIFO at the head of the RDMA mode's transmit
// path (user_clk): the framer learns each datagram's length before its first word, which
// it needs for the packets' headers (lengths, opcodes, padding).
//
// Contract
//   * User port as docs/design/core.md §1 (one word per cycle, tx_byte_enable on the last
//     word, no bubbles needed). Words are stored in wire order (first byte in bits 7:0),
//     bytes past the datagram's end zeroed.
//   * A datagram becomes visible to the reader only once its last word is in (commit); a
//     datagram that does not fit is dropped whole and leaves nothing behind: no room
//     (buffer or length queue full) or longer than MAX_PAYLOAD → `tx_overflow` (sticky
//     until rst) and stat_frame_drop; longer than cfg_max_len (the slot minus its 8-byte
//     header) → stat_oversize. `accept` low drops like overflow. Zero-length datagrams are
//     kept (a slot with only its header).
//   * tx_afull: high while less than one maximum datagram (plus the pipeline's slack) is
//     free, or `accept` is low: the user stops after the datagram in progress.
//   * Reader: first-word-fall-through; o_first/o_last mark a datagram's words, o_len its
//     length in bytes (with every word). One word per cycle.
//   * Latency: a datagram is visible to the reader 5 cycles after its tx_end_of_frame, then
//     RD_LATENCY + 1 cycles to o_valid.
module fhg_rdma_sf #(
    parameter int DEPTH       = 256,      // words (power of two, >= 2 maximum datagrams)
    parameter int MAX_PAYLOAD = 8972,
    parameter int RD_LATENCY  = 2,
    parameter int LQ_DEPTH    = 64,       // datagrams waiting (length queue)
    localparam int AW    = $clog2(DEPTH),
    localparam int LEN_W = 14
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 accept,
    input  wire  [LEN_W-1:0]    cfg_max_len,

    input  wire  [1023:0]       tx_data,
    input  wire                 tx_valid,
    input  wire  [127:0]        tx_byte_enable,
    input  wire                 tx_end_of_frame,
    output logic                tx_afull,
    output logic                tx_overflow,

    output logic                o_valid,
    input  wire                 o_ready,
    output logic [1023:0]       o_data,
    output logic                o_first,
    output logic                o_last,
    output logic [LEN_W-1:0]    o_len,

    output logic                stat_word,
    output logic                stat_frame_drop,
    output logic [7:0]          stat_words_lost,
    output logic                stat_afull_rise,
    output logic                stat_oversize
);
    localparam int MAX_WORDS  = (MAX_PAYLOAD + 127) / 128;
    localparam int SLACK      = 8;
    localparam int LQ_AW      = $clog2(LQ_DEPTH);
    localparam int OQ         = 4;          // output queue entries (>= RD_LATENCY + 2)

    initial begin
        if (DEPTH < 2 * MAX_WORDS + 2 * SLACK || (DEPTH & (DEPTH - 1)) != 0)
            $error("fhg_rdma_sf: DEPTH must be a power of two holding two maximum datagrams");
        if (RD_LATENCY + 2 > OQ) $error("fhg_rdma_sf: output queue too small");
    end

    function automatic logic [7:0] count_ones(input logic [127:0] v);
        logic [7:0] n;
        n = '0;
        for (int i = 0; i < 128; i++) n = n + 8'(v[i]);
        count_ones = n;
    endfunction

    // ------------------------------------------------------------------ stage 1
    logic [1023:0] s1_data;
    logic          s1_valid, s1_eof;
    logic [7:0]    s1_nbytes;
    always_ff @(posedge clk) begin
        s1_valid  <= tx_valid && !rst;
        s1_eof    <= tx_end_of_frame;
        s1_nbytes <= tx_end_of_frame ? count_ones(tx_byte_enable) : 8'd128;
        for (int i = 0; i < 128; i++)
            s1_data[8*i +: 8] <= (tx_end_of_frame && !tx_byte_enable[127-i]) ? 8'h00
                                 : tx_data[1023-8*i -: 8];
    end

    // ------------------------------------------------------------------ write side
    logic [AW:0]    wp, fsp, cwp, ra;      // write, frame start, committed, next fetch
    // What the reader may see: the commit two cycles late, once the RAM holds the last word
    // (its write leaves the write register one cycle after the commit).
    logic [AW:0]    cwp_r1, cwp_r;
    logic           in_frame, dropping;
    logic [LEN_W:0] len;
    logic [LQ_AW:0] lq_wp, lq_rp, lq_wp_r1, lq_wp_r;
    always_ff @(posedge clk) begin
        cwp_r1   <= cwp;
        cwp_r    <= cwp_r1;
        lq_wp_r1 <= lq_wp;
        lq_wp_r  <= lq_wp_r1;
        if (rst) begin
            cwp_r1 <= '0; cwp_r <= '0; lq_wp_r1 <= '0; lq_wp_r <= '0;
        end
    end
    logic [LEN_W-1:0] lq_mem [LQ_DEPTH];

    logic [LEN_W:0] len_next;
    logic           no_room, lq_full, too_long, oversize, drop_now;
    assign len_next = len + (LEN_W+1)'(s1_nbytes);
    assign no_room  = (wp + (AW+1)'(1) - ra) > (AW+1)'(DEPTH - 4);
    assign lq_full  = (lq_wp - lq_rp) >= (LQ_AW+1)'(LQ_DEPTH);
    assign too_long = len_next > (LEN_W+1)'(MAX_PAYLOAD);
    assign oversize = len_next > (LEN_W+1)'(cfg_max_len);
    assign drop_now = no_room || too_long || oversize || !accept || (!in_frame && lq_full);

    logic          ram_we;
    logic [AW-1:0] ram_wa;
    logic [1023:0] ram_wd;
    always_ff @(posedge clk) begin
        ram_we          <= 1'b0;
        stat_word       <= 1'b0;
        stat_frame_drop <= 1'b0;
        stat_words_lost <= '0;
        stat_oversize   <= 1'b0;
        if (rst) begin
            wp <= '0; fsp <= '0; cwp <= '0;
            in_frame <= 1'b0; dropping <= 1'b0; len <= '0;
            lq_wp <= '0;
            tx_overflow <= 1'b0;
        end else if (s1_valid) begin
            stat_word <= 1'b1;
            if (dropping || drop_now) begin
                stat_words_lost <= 8'd1;
                if (!dropping) begin
                    // What the datagram wrote is given back; it never becomes visible.
                    wp <= fsp;
                    if (oversize && !too_long && !no_room && accept && !(!in_frame && lq_full))
                        stat_oversize <= 1'b1;
                    else begin
                        stat_frame_drop <= 1'b1;
                        tx_overflow <= 1'b1;
                    end
                end
                dropping <= !s1_eof;
                in_frame <= 1'b0;
                len      <= '0;
            end else begin
                ram_we <= 1'b1;
                ram_wa <= wp[AW-1:0];
                ram_wd <= s1_data;
                in_frame <= !s1_eof;
                len      <= s1_eof ? '0 : len_next;
                if (s1_eof) begin
                    wp  <= wp + (AW+1)'(1);
                    fsp <= wp + (AW+1)'(1);
                    cwp <= wp + (AW+1)'(1);
                    lq_mem[lq_wp[LQ_AW-1:0]] <= len_next[LEN_W-1:0];
                    lq_wp <= lq_wp + (LQ_AW+1)'(1);
                end else begin
                    wp <= wp + (AW+1)'(1);
                end
            end
        end
    end

    // ------------------------------------------------------------------ read side
    // Fetch the committed words in order, tagging each with its datagram's length.
    logic [1023:0] rd_data;
    logic          fetch;
    fhg_ram_sdp #(.WIDTH(1024), .DEPTH(DEPTH), .RD_LATENCY(RD_LATENCY)) u_ram (
        .wr_clk(clk), .wr_en(ram_we), .wr_addr(ram_wa), .wr_data(ram_wd),
        .rd_clk(clk), .rd_en(fetch), .rd_addr(ra[AW-1:0]), .rd_data(rd_data)
    );
    logic [LEN_W-1:0] f_len;               // length of the datagram being fetched
    logic [LEN_W-1:0] f_left;              // its words still to fetch, after this one
    logic          f_active;
    logic [RD_LATENCY-1:0] fl_v, fl_first, fl_last;
    logic [LEN_W-1:0] fl_len [RD_LATENCY];
    logic [$clog2(OQ):0] oq_count;
    logic [2:0]    fl_n;
    always_comb begin
        fl_n = '0;
        for (int i = 0; i < RD_LATENCY; i++) fl_n = fl_n + 3'(fl_v[i]);
    end
    logic        o_pop;
    assign o_pop = o_valid && o_ready;

    logic [LEN_W-1:0] h_len, h_words;      // the datagram at the length queue's head
    assign h_len   = lq_mem[lq_rp[LQ_AW-1:0]];
    assign h_words = (h_len == '0) ? LEN_W'(1) : LEN_W'((h_len + LEN_W'(127)) >> 7);
    logic lq_nonempty;
    assign lq_nonempty = lq_wp_r != lq_rp;

    assign fetch = (ra != cwp_r) && (f_active || lq_nonempty)
                   && (($clog2(OQ)+1)'(oq_count) + ($clog2(OQ)+1)'(fl_n) < ($clog2(OQ)+1)'(OQ));

    logic          fetch_first, fetch_last;
    logic [LEN_W-1:0] fetch_len;
    always_comb begin
        fetch_first = !f_active;
        fetch_len   = f_active ? f_len : h_len;
        fetch_last  = f_active ? (f_left == LEN_W'(1)) : (h_words == LEN_W'(1));
    end

    always_ff @(posedge clk) begin
        fl_v     <= {fl_v[RD_LATENCY-2:0], fetch};
        fl_first <= {fl_first[RD_LATENCY-2:0], fetch_first};
        fl_last  <= {fl_last[RD_LATENCY-2:0], fetch_last};
        fl_len[0] <= fetch_len;
        for (int i = 1; i < RD_LATENCY; i++) fl_len[i] <= fl_len[i-1];
        if (fetch) begin
            ra <= ra + (AW+1)'(1);
            if (!f_active) begin
                lq_rp    <= lq_rp + (LQ_AW+1)'(1);
                f_len    <= h_len;
                f_left   <= h_words - LEN_W'(1);
                f_active <= h_words != LEN_W'(1);
            end else begin
                f_left   <= f_left - LEN_W'(1);
                f_active <= f_left != LEN_W'(1);
            end
        end
        if (rst) begin
            fl_v <= '0;
            ra <= '0;
            lq_rp <= '0;
            f_active <= 1'b0;
        end
    end

    // Output queue.
    logic [1023:0]    oq_data [OQ];
    logic [LEN_W+1:0] oq_tag [OQ];           // {first, last, len}
    logic [$clog2(OQ)-1:0] oq_head, oq_tail;
    always_ff @(posedge clk) begin
        if (fl_v[RD_LATENCY-1]) begin
            oq_data[oq_tail] <= rd_data;
            oq_tag[oq_tail]  <= {fl_first[RD_LATENCY-1], fl_last[RD_LATENCY-1],
                                 fl_len[RD_LATENCY-1]};
            oq_tail <= oq_tail + 1'b1;
        end
        if (o_pop) oq_head <= oq_head + 1'b1;
        oq_count <= oq_count + ($clog2(OQ)+1)'(fl_v[RD_LATENCY-1]) - ($clog2(OQ)+1)'(o_pop);
        if (rst) begin
            oq_head <= '0;
            oq_tail <= '0;
            oq_count <= '0;
        end
    end
    assign o_valid = oq_count != '0;
    assign o_data  = oq_data[oq_head];
    assign {o_first, o_last, o_len} = oq_tag[oq_head];

    // ------------------------------------------------------------------ almost full
    logic afull_q;
    always_ff @(posedge clk) begin
        afull_q <= ((wp - ra) > (AW+1)'(DEPTH - MAX_WORDS - 2 * SLACK))
                   || ((lq_wp - lq_rp) >= (LQ_AW+1)'(LQ_DEPTH - SLACK)) || !accept;
        stat_afull_rise <= afull_q && !tx_afull;
        tx_afull <= afull_q;
        if (rst) begin
            tx_afull <= 1'b1;
            stat_afull_rise <= 1'b0;
        end
    end
endmodule
