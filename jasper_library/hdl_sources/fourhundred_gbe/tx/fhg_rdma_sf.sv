// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rdma_sf — store-and-forward datagram FIFO at the head of the RDMA mode's transmit
// path (user_clk): the framer learns each datagram's length before its first word, which
// it needs for the packets' headers (lengths, opcodes, padding).
//
// Contract
//   * User port `tx` as docs/design/core.md §1 (one word per cycle, byte_enable on the last
//     word, no bubbles needed), `tx_st` as fhg_tx_writer's. Words are stored in wire order (first byte in bits 7:0),
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
//   * o_tag, valid with a datagram's first word: its slot's geometry for the framer, so the
//     framer's per-datagram arithmetic is done here, off its per-word paths. With the slot
//     t = 8 + length bytes (sequence number and datagram) and M the path MTU (cfg_mtu_sel as
//     fhg_rdma_framer's), MSB first: {slot words - 1 [7], slot is one word, two words,
//     slot words > datagram words, bytes of the slot's last word [8], packets - 1 [4], one
//     packet, two packets, last packet's RDMA length [13], its pad bytes [2], its UDP length
//     without ImmDt [14], with ImmDt [14]} (the UDP length: BTH/RETH (+ImmDt), data, pad,
//     ICRC).
//   * Latency: a datagram is visible to the reader 6 cycles after its tx_end_of_frame, then
//     RD_LATENCY + 1 cycles to o_valid.
//   * Timing: every decision is taken from registers (fhg_tx_intake's byte count from where
//     the enables end and its length checks a stage ahead, room and queue-full flags a
//     cycle early and conservative by one word).
module fhg_rdma_sf #(
    parameter int DEPTH       = 256,      // words (power of two, >= 2 maximum datagrams)
    parameter int MAX_PAYLOAD = 8972,
    parameter int RD_LATENCY  = 2,
    parameter int LQ_DEPTH    = 64,       // datagrams waiting (length queue)
    localparam int AW    = $clog2(DEPTH),
    localparam int LEN_W = 14,
    localparam int TAG_W = 67
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 accept,
    input  wire  [LEN_W-1:0]    cfg_max_len,
    input  wire  [1:0]          cfg_mtu_sel,      // the framer's path MTU (for o_tag)

    input  fhg_bus_pkg::tx_user_t    tx,      // dest_ip/dest_port unused (the ring's)
    output fhg_bus_pkg::tx_user_st_t tx_st,

    output logic                o_valid,
    input  wire                 o_ready,
    output logic [1023:0]       o_data,
    output logic                o_first,
    output logic                o_last,
    output logic [TAG_W-1:0]    o_tag,

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
        if (RD_LATENCY != 2) $error("fhg_rdma_sf: the tags take exactly two read stages");
    end

    // ------------------------------------------------------------------ stages 1 and 2
    // Wire order, the byte count and the datagram's length so far: fhg_tx_intake (the UDP
    // mode's writer takes its words the same way). A dropped datagram's later words are
    // discarded whatever the length says.
    logic             s1_none;
    logic [6:0]       u_words;             // whole words of this datagram before this one
    logic [1023:0]    s2_data;
    logic             s2_valid, s2_eof, s2_too_long, s2_oversize;
    logic [LEN_W:0]   s2_len_next;
    logic [6:0]       s2_wm1;
    logic             room_low;            // less than a maximum datagram and the slack free
    logic             tx_afull, tx_overflow, stat_word, stat_frame_drop, stat_afull_rise;
    logic [7:0]       stat_words_lost;
    assign tx_st = {tx_afull, tx_overflow, stat_word, stat_frame_drop, stat_words_lost,
                    stat_afull_rise};
    fhg_tx_intake #(.MAX_PAYLOAD(MAX_PAYLOAD)) u_intake (
        .clk(clk), .rst(rst),
        .tx_data(tx.data), .tx_valid(tx.valid), .tx_byte_enable(tx.byte_enable),
        .tx_end_of_frame(tx.end_of_frame), .tx_side(1'b0), .limit(cfg_max_len),
        .accept(accept), .room_low(room_low),
        .tx_afull(tx_afull), .stat_afull_rise(stat_afull_rise),
        .s1_valid(), .s1_eof(), .s1_none(s1_none), .s1_m(), .s1_words(u_words),
        .s2_valid(s2_valid), .s2_eof(s2_eof), .s2_data(s2_data), .s2_side(),
        .s2_len_next(s2_len_next), .s2_too_long(s2_too_long), .s2_over_limit(s2_oversize)
    );
    always_ff @(posedge clk) begin
        // Words minus one: a last word without bytes ends the datagram at the word before
        // (a zero-length datagram still has its one word).
        s2_wm1 <= (s1_none && u_words != 7'd0) ? u_words - 7'd1 : u_words;
    end

    // ------------------------------------------------------------------ write side
    logic [AW:0]    wp, fsp, cwp, ra;      // write, frame start, committed, next fetch
    // What the reader may see: the commit two cycles late, once the RAM holds the last word
    // (its write leaves the write register one cycle after the commit).
    logic [AW:0]    cwp_r1, cwp_r;
    logic           in_frame, dropping;
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

    logic [LEN_W+6:0] lq_mem [LQ_DEPTH];  // {words - 1, length}

    // Room and queue space from last cycle's pointers, one word more conservative: the
    // write pointer moves by at most one a cycle and the read pointers only forward.
    logic no_room, lq_full, drop_now;
    always_ff @(posedge clk) begin
        no_room <= (wp + (AW+1)'(2) - ra) > (AW+1)'(DEPTH - 4);
        lq_full <= (lq_wp + (LQ_AW+1)'(1) - lq_rp) >= (LQ_AW+1)'(LQ_DEPTH);
    end
    assign drop_now = no_room || s2_too_long || s2_oversize || !accept || (!in_frame && lq_full);

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
            in_frame <= 1'b0; dropping <= 1'b0;
            lq_wp <= '0;
            tx_overflow <= 1'b0;
        end else if (s2_valid) begin
            stat_word <= 1'b1;
            if (dropping || drop_now) begin
                stat_words_lost <= 8'd1;
                if (!dropping) begin
                    // What the datagram wrote is given back; it never becomes visible.
                    wp <= fsp;
                    if (s2_oversize && !s2_too_long && !no_room && accept
                        && !(!in_frame && lq_full))
                        stat_oversize <= 1'b1;
                    else begin
                        stat_frame_drop <= 1'b1;
                        tx_overflow <= 1'b1;
                    end
                end
                dropping <= !s2_eof;
                in_frame <= 1'b0;
            end else begin
                ram_we <= 1'b1;
                ram_wa <= wp[AW-1:0];
                ram_wd <= s2_data;
                in_frame <= !s2_eof;
                if (s2_eof) begin
                    wp  <= wp + (AW+1)'(1);
                    fsp <= wp + (AW+1)'(1);
                    cwp <= wp + (AW+1)'(1);
                    lq_mem[lq_wp[LQ_AW-1:0]] <= {s2_wm1, s2_len_next[LEN_W-1:0]};
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
    logic [6:0]    f_left;                 // words of the datagram still to fetch
    logic          f_active;
    logic [RD_LATENCY-1:0] fl_v, fl_first, fl_last;
    logic [$clog2(OQ):0] oq_count;
    logic [2:0]    fl_n;
    always_comb begin
        fl_n = '0;
        for (int i = 0; i < RD_LATENCY; i++) fl_n = fl_n + 3'(fl_v[i]);
    end
    logic        o_pop;
    assign o_pop = o_valid && o_ready;

    logic [LEN_W-1:0] h_len;               // the datagram at the length queue's head
    logic [6:0]       h_wm1;               // ...its words minus one
    assign {h_wm1, h_len} = lq_mem[lq_rp[LQ_AW-1:0]];
    logic lq_nonempty;
    assign lq_nonempty = lq_wp_r != lq_rp;

    assign fetch = (ra != cwp_r) && (f_active || lq_nonempty)
                   && (($clog2(OQ)+1)'(oq_count) + ($clog2(OQ)+1)'(fl_n) < ($clog2(OQ)+1)'(OQ));

    logic          fetch_first, fetch_last;
    always_comb begin
        fetch_first = !f_active;
        fetch_last  = f_active ? (f_left == 7'd1) : (h_wm1 == 7'd0);
    end

    // The tags, over the two read stages: the slot's bytes minus one, then what follows.
    logic [LEN_W-1:0] fl_tm1;
    logic [6:0]       fl_wm1;
    logic [TAG_W-1:0] fl_tag;
    logic [12:0]      mtu_mask;
    always_ff @(posedge clk) begin
        case (cfg_mtu_sel)
            2'd0:    mtu_mask <= 13'd1023;
            2'd1:    mtu_mask <= 13'd2047;
            default: mtu_mask <= 13'd4095;
        endcase
    end
    always_ff @(posedge clk) begin
        logic [6:0]  nout_m1;
        logic [3:0]  npk_m1;
        logic [12:0] low;
        fl_tm1 <= h_len + LEN_W'(7);
        fl_wm1 <= h_wm1;
        nout_m1 = fl_tm1[13:7];
        low     = fl_tm1[12:0] & mtu_mask;
        case (mtu_mask)
            13'd1023: npk_m1 = 4'(fl_tm1[13:10]);
            13'd2047: npk_m1 = 4'(fl_tm1[13:11]);
            default:  npk_m1 = 4'(fl_tm1[13:12]);
        endcase
        fl_tag <= {nout_m1, nout_m1 == 7'd0, nout_m1 == 7'd1, nout_m1 > fl_wm1,
                   8'(fl_tm1[6:0]) + 8'd1, npk_m1, npk_m1 == 4'd0, npk_m1 == 4'd1,
                   low + 13'd1, ~fl_tm1[1:0],
                   14'(low | 13'd3) + 14'd33, 14'(low | 13'd3) + 14'd37};
    end

    always_ff @(posedge clk) begin
        fl_v     <= {fl_v[RD_LATENCY-2:0], fetch};
        fl_first <= {fl_first[RD_LATENCY-2:0], fetch_first};
        fl_last  <= {fl_last[RD_LATENCY-2:0], fetch_last};
        if (fetch) begin
            ra <= ra + (AW+1)'(1);
            if (!f_active) begin
                lq_rp    <= lq_rp + (LQ_AW+1)'(1);
                f_left   <= h_wm1;
                f_active <= h_wm1 != 7'd0;
            end else begin
                f_left   <= f_left - 7'd1;
                f_active <= f_left != 7'd1;
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
    logic [TAG_W+1:0] oq_tag [OQ];           // {first, last, tag}
    logic [$clog2(OQ)-1:0] oq_head, oq_tail;
    always_ff @(posedge clk) begin
        if (fl_v[RD_LATENCY-1]) begin
            oq_data[oq_tail] <= rd_data;
            oq_tag[oq_tail]  <= {fl_first[RD_LATENCY-1], fl_last[RD_LATENCY-1], fl_tag};
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
    assign {o_first, o_last, o_tag} = oq_tag[oq_head];

    // ------------------------------------------------------------------ almost full
    assign room_low = ((wp - ra) > (AW+1)'(DEPTH - MAX_WORDS - 2 * SLACK))
                      || ((lq_wp - lq_rp) >= (LQ_AW+1)'(LQ_DEPTH - SLACK));
endmodule
