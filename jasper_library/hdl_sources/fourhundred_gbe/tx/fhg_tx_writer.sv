// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_writer — user-side half of the TX store-and-forward buffer (user_clk).
//
// Contract
//   * User port `tx` (fhg_bus_pkg::tx_user_t) as docs/design/core.md §1: one 1024-bit word
//     per cycle, first wire byte in data[1023:1016], byte_enable (contiguous from bit 127)
//     qualifies the last word, dest_ip/dest_port sampled with end_of_frame. Full rate: a
//     word every cycle, back-to-back frames, no bubbles required. `tx_st` returns tx_afull,
//     tx_overflow and the one-cycle statistics (fhg_bus_pkg::tx_user_st_t).
//   * Frames are written into the buffer as one continuous stream of 16-byte DCMAC
//     segments: frame k starts on the segment after frame k-1 ends, with a 42-byte gap at
//     its start where the MAC side later merges the Ethernet/IPv4/UDP header. Bytes are
//     stored in wire order, LSB-first inside a word (byte x of a word in bits 8x+7:8x), so
//     the MAC side forwards segments without reordering. Frames shorter than 60 bytes are
//     padded with zeros (their trailing bytes are zero in the buffer).
//   * Because a frame may end mid-word and the next one continue in the same word, a
//     user word touches two buffer words; at most two buffer writes happen per cycle, to
//     consecutive word addresses, so an even and an odd bank take them (wr0 = even bank,
//     wr1 = odd bank). The layout's rules (bank writes, sealing) and the buffer's bundles
//     are fhg_tx_buf_pkg's, which fhg_rdma_writer places its packets by too.
//   * When a frame has been written completely its descriptor (start segment, payload
//     length, destination, UDP payload checksum) is pushed out, CSUM_LAT+4 cycles after
//     tx_end_of_frame. `final_word` tells the MAC side which words will not be written
//     again (all words below it).
//   * Words below `final_word` are never written again, so the MAC side reads only those
//     and no read ever collides with a write of the same word across the two clocks. A
//     word becomes final when the stream moves past it; when the user pauses between
//     frames the writer seals the partly filled word (the next frame starts on the next
//     word), which leaves a hole the MAC side skips using the descriptors' start segments.
//   * A frame that does not fit (buffer or descriptor queue full, longer than
//     MAX_PAYLOAD, or `accept` low) is dropped whole: what it wrote stays as a hole, no
//     descriptor is pushed, `tx_overflow` becomes sticky until rst, and it is counted.
//   * tx_afull asks the user to stop after the current frame: it is high while less than
//     one maximum-size frame (plus the pipeline's slack) is free.
//   * The byte count of the last word is the position of its last enabled byte (the enables
//     are contiguous from the top; none enabled counts as no byte).
//   * Stages, all registered: A takes the word (wire order, disabled bytes zeroed, the byte
//     count); B adds up the frame's length and what its end will need (too long, the number
//     of segments the last word reaches); C places the word in the buffer. A and B are
//     fhg_tx_intake's, shared with the RDMA mode. C's loop only chooses among values
//     prepared from registers: where the next frame would start (its word, segment offset
//     and whether it shares the partial word) is kept ready.
//
// Latency: tx_data → buffer write 3 cycles; tx_end_of_frame → descriptor CSUM_LAT+4.
module fhg_tx_writer #(
    parameter int BUF_WORDS   = 512,    // buffer depth in 1024-bit words (power of two)
    parameter int MAX_PAYLOAD = 8972,   // largest UDP payload accepted (bytes)
    parameter int DESC_SLOTS  = 512,    // capacity of the descriptor queue behind us
    localparam int AW        = $clog2(BUF_WORDS),     // word address bits
    localparam int WP        = AW + 1,                // word pointer with wrap bit
    localparam int SP        = AW + 4,                // segment pointer with wrap bit
    localparam int LEN_W     = fhg_tx_buf_pkg::LEN_W,
    localparam int DESC_W    = SP + fhg_tx_buf_pkg::DESC_TAIL_W
) (
    input  wire                 clk,
    input  wire                 rst,           // user reset or soft reset (synchronous)
    input  wire                 accept,        // fabric enabled and not resetting

    input  fhg_bus_pkg::tx_user_t    tx,
    output fhg_bus_pkg::tx_user_st_t tx_st,   // tx_afull, tx_overflow and the statistics

    // The buffer: the bank writes, final_word and the descriptors out, the reader's
    // rd_word and the descriptor queue's fill back.
    output fhg_tx_buf_pkg::buf_wr_t to_buf,
    input  fhg_tx_buf_pkg::buf_rd_t from_buf
);
    localparam int CSUM_LAT   = 3;
    localparam int MAX_WORDS  = fhg_tx_buf_pkg::frame_words(MAX_PAYLOAD);
    // Words of slack the pipeline may still write after tx_afull is seen by the user.
    localparam int AFULL_FREE = MAX_WORDS + 8;
    localparam int DESC_MARGIN = fhg_tx_buf_pkg::DESC_MARGIN;

    initial begin
        if (BUF_WORDS < 2 * MAX_WORDS || (BUF_WORDS & (BUF_WORDS - 1)) != 0)
            $error("fhg_tx_writer: BUF_WORDS must be a power of two holding two maximum frames");
        if (AW > fhg_tx_buf_pkg::MAX_AW)
            $error("fhg_tx_writer: BUF_WORDS beyond fhg_tx_buf_pkg::MAX_AW address bits");
    end

    fhg_tx_buf_pkg::bank_wr_t    wr;        // the bank write ports
    logic [WP-1:0]               rd_word;   // oldest word the MAC side still needs
    logic [WP-1:0]               final_word;    // words below this are never written again
    logic [$clog2(DESC_SLOTS):0] desc_used;     // entries in the descriptor queue
    logic                        desc_valid;
    logic [DESC_W-1:0]           desc_data; // {start_seg, payload_len, dst_ip, dst_port, csum}
    assign rd_word   = from_buf.rd_word[WP-1:0];
    assign desc_used = from_buf.desc_used[$clog2(DESC_SLOTS):0];
    assign to_buf    = fhg_tx_buf_pkg::to_buffer(wr, final_word, desc_valid,
                                                 desc_data[DESC_W-1 -: SP],
                                                 desc_data[fhg_tx_buf_pkg::DESC_TAIL_W-1:0]);

    // ------------------------------------------------------------------ stages A and B
    // Wire order, the byte count and the frame's length: fhg_tx_intake (the RDMA mode's
    // FIFO takes its words the same way). The length as the user gives it; a dropped
    // frame's remaining words are discarded anyway, so it may run on through them.
    logic           a_none;
    logic [6:0]     a_m;             // bytes in this word minus one (unless a_none)
    logic [6:0]     u_words;         // whole words of this user frame before the current one
    logic [1023:0]  b_data;
    logic           b_valid, b_eof, b_too_long;
    logic [LEN_W:0] b_plen_next;
    logic [47:0]    b_dest;          // {ip, port}
    logic           room_low;        // less than a maximum frame and the slack free
    logic           tx_afull, tx_overflow, stat_word, stat_frame_drop, stat_afull_rise;
    logic [7:0]     stat_words_lost;
    assign tx_st = {tx_afull, tx_overflow, stat_word, stat_frame_drop, stat_words_lost,
                    stat_afull_rise};
    fhg_tx_intake #(.MAX_PAYLOAD(MAX_PAYLOAD), .SIDE_W(48)) u_intake (
        .clk(clk), .rst(rst),
        .tx_data(tx.data), .tx_valid(tx.valid), .tx_byte_enable(tx.byte_enable),
        .tx_end_of_frame(tx.end_of_frame), .tx_side({tx.dest_ip, tx.dest_port}),
        .limit(LEN_W'(MAX_PAYLOAD)), .accept(accept),
        .room_low(room_low),
        .tx_afull(tx_afull), .stat_afull_rise(stat_afull_rise),
        .s1_valid(), .s1_eof(), .s1_none(a_none), .s1_m(a_m), .s1_words(u_words),
        .s2_valid(b_valid), .s2_eof(b_eof), .s2_data(b_data), .s2_side(b_dest),
        .s2_len_next(b_plen_next), .s2_too_long(b_too_long), .s2_over_limit()
    );

    logic           a_short;         // the frame is one word of under 18 bytes (padded to 60)
    logic [3:0]     b_kq;            // segments the end reaches past the payload's offset
    always_comb a_short = u_words == 7'd0 && (a_none || a_m < 7'd17);
    always_ff @(posedge clk) begin
        // The payload starts at offset 16*o3 + 10 in its word, so its end lies
        // ceil((16*o3 + 10 + bytes) / 16) = o3 + (bytes + 25) / 16 segments from the word;
        // with bytes = 16h + l + 1 (m = 16h + l) that is o3 + h + 1 + (l >= 6).
        b_kq <= a_short ? 4'd2 : 4'(a_m[6:4]) + 4'd1 + 4'(a_m[3:0] >= 4'd6);
    end

    // ------------------------------------------------------------------ checksum pipeline
    // Ones'-complement sum of the payload as big-endian 16-bit words. The payload starts at
    // an even offset of the frame (42), so user words hold whole 16-bit words.
    logic [21:0] csum_word;
    logic        csum_valid, csum_sof, csum_eof;
    fhg_tx_csum_tree #(.LAT(CSUM_LAT)) u_csum (
        .clk      (clk),
        .data     (b_data),
        .in_valid (b_valid && !drop_now),
        .in_sof   (!in_frame),
        .in_eof   (b_eof),
        .sum      (csum_word),
        .out_valid(csum_valid),
        .out_sof  (csum_sof),
        .out_eof  (csum_eof)
    );

    // ------------------------------------------------------------------ stage C: placement
    logic [SP-1:0]   start_seg;      // where the current (or next) frame starts
    logic [WP-1:0]   cur_w;          // buffer word receiving the low part of the next word
    logic [2:0]      off3;           // segment offset of the payload in the frame's words
    logic [1023:0]   pw;             // partial word: bytes below the fill level, zeros above
    logic [WP-1:0]   pw_idx;         // buffer word pw belongs to
    logic            in_frame;       // a word of the current frame has been accepted
    logic            dropping;       // discard until end of frame
    logic            drop_now;
    // Kept ready for the next frame's first word (from start_seg and pw_idx):
    logic [WP-1:0]   nf_w;           // its buffer word: start_seg's word, one more from
                                     // segment 6 on (the 42-byte header fills 2.6 segments)
    logic [2:0]      nf_o3;          // its payload's segment offset: start_seg + 2 (mod 8)
    logic            nf_same;        // it shares the partial word pw
    // ...and where the words may go: w+1 and w+2 of both candidates.
    logic [WP-1:0]   cur_w1, cur_w2, nf_w1, nf_w2;
    logic            ns_cur, ns_nf;  // no space for the candidate's next two words
    logic            reader_near, desc_near_full;
    logic [WP-1:0]   seal_w;         // the word after the partial word
    assign seal_w = pw_idx + WP'(1);

    // o3 + kq as a table (7 inputs: two LUT levels, where an adder would add a carry chain
    // in front of everything the end decides).
    // Each entry: {r, r > 8, r == 8, r == 16, r >= 14, r >= 6, (r mod 8) < 6}.
    typedef struct packed {
        logic [4:0] r;
        logic       gt8, eq8, eq16, ge14, ge6, same;
    } end_t;
    end_t end_tab [128];
    initial
        for (int i = 0; i < 128; i++) begin
            logic [4:0] v;
            v = 5'(i >> 4) + 5'(i & 15);
            end_tab[i] = {v, v > 5'd8, v == 5'd8, v == 5'd16, v >= 5'd14, v >= 5'd6,
                          v[2:0] < 3'd6};
        end
    end_t e_cur, e_nf, e;             // the frame's end for either placement, and the one used

    // Placement of this word.
    logic [WP-1:0]  w_lo, w_lo1, w_lo2;
    logic [2:0]     o3;
    logic [1023:0]  base;            // content below the offset in word w_lo
    logic [4:0]     r;               // segments from w_lo*8 to the frame's end (1..16)
    always_comb begin
        w_lo  = in_frame ? cur_w  : nf_w;
        w_lo1 = in_frame ? cur_w1 : nf_w1;
        w_lo2 = in_frame ? cur_w2 : nf_w2;
        o3    = in_frame ? off3   : nf_o3;
        base  = (in_frame || nf_same) ? pw : '0;
        e_cur = end_tab[{off3, b_kq}];
        e_nf  = end_tab[{nf_o3, b_kq}];
        e     = in_frame ? e_cur : e_nf;
        r     = e.r;
    end

    // Shift the word into the two-word window: lo = word w_lo, hi = word w_lo+1. Frames
    // start on segment boundaries and the header is 42 bytes, so the offset is always
    // 16k + 10: a fixed 10-byte shift and an 8-way segment shift, not a 128-way one.
    logic [2047:0] window;
    always_comb window = ({1024'b0, b_data} << 80) << (128 * o3);

    logic [1023:0] lo, hi;
    assign lo = base | window[1023:0];
    assign hi = window[2047:1024];

    // Space: the highest word this cycle may write is w_lo+1.
    logic no_space;
    assign no_space = in_frame ? ns_cur : ns_nf;
    assign drop_now = dropping || (b_valid && (no_space || b_too_long || !accept
                                               || (!in_frame && desc_near_full)));

    // Descriptor fields travel with the checksum pipeline.
    logic [SP-1:0]  eof_start_seg;
    logic [LEN_W-1:0] eof_len;
    logic           eof_push;

    // Where the next frame starts after an end at segment r of word w_lo.
    logic [WP-1:0] end_w, end_nf_w;
    always_comb begin
        end_w    = e.eq16 ? w_lo2 : (e.gt8 || e.eq8) ? w_lo1 : w_lo;
        end_nf_w = e.ge14 ? w_lo2 : e.ge6 ? w_lo1 : w_lo;
    end

    // This cycle's writes: the low word always, the high word when the frame ends in it.
    logic placing;
    assign placing = b_valid && !drop_now;

    always_ff @(posedge clk) begin
        wr <= fhg_tx_buf_pkg::bank_writes(wr, placing, placing && b_eof && e.gt8, w_lo, w_lo1,
                                          lo, hi);
        eof_push <= 1'b0;
        stat_word <= 1'b0;
        stat_frame_drop <= 1'b0;
        stat_words_lost <= '0;
        if (rst) begin
            start_seg   <= '0;
            cur_w       <= '0;
            off3        <= '0;
            pw          <= '0;
            pw_idx      <= '0;
            in_frame    <= 1'b0;
            dropping    <= 1'b0;
            final_word  <= '0;
            tx_overflow <= 1'b0;
            nf_w        <= '0;
            nf_o3       <= 3'd2;
            nf_same     <= 1'b1;
        end else if (b_valid) begin
            stat_word <= 1'b1;
            if (drop_now) begin
                stat_words_lost <= 8'd1;
                if (!dropping) begin
                    stat_frame_drop <= 1'b1;
                    tx_overflow <= 1'b1;
                    if (in_frame) begin
                        // What the frame wrote becomes a hole; its partial word holds no
                        // committed byte, so the next frame starts on that word.
                        start_seg <= {cur_w, 3'b000};
                        pw        <= '0;
                        pw_idx    <= cur_w;
                        nf_w      <= cur_w;
                        nf_o3     <= 3'd2;
                        nf_same   <= 1'b1;
                    end
                end
                dropping <= !b_eof;
                in_frame <= 1'b0;
            end else begin
                in_frame <= !b_eof;
                if (!b_eof) begin
                    cur_w      <= w_lo1;
                    off3       <= o3;
                    pw         <= hi;
                    pw_idx     <= w_lo1;
                    final_word <= w_lo1;
                end else begin
                    eof_push      <= 1'b1;
                    eof_start_seg <= start_seg;
                    eof_len       <= b_plen_next[LEN_W-1:0];
                    start_seg     <= {end_w, r[2:0]};
                    nf_w          <= end_nf_w;
                    nf_o3         <= r[2:0] + 3'd2;
                    nf_same       <= e.same;
                    // Reaching into the next word (written as well), or ending in this one.
                    if (e.gt8) pw <= e.eq16 ? '0 : hi;
                    else       pw <= e.eq8 ? '0 : lo;
                    pw_idx     <= end_w;
                    final_word <= end_w;
                end
            end
        end else if (fhg_tx_buf_pkg::seal_due(in_frame, start_seg[2:0], reader_near)) begin
            // The next frame, and a fresh partial word, start on the word after it.
            start_seg  <= {seal_w, 3'b000};
            pw         <= '0;
            pw_idx     <= seal_w;
            final_word <= seal_w;
            nf_w       <= seal_w;
            nf_o3      <= 3'd2;
            nf_same    <= 1'b1;
        end
        if (rst) begin
            wr.en0   <= 1'b0;
            wr.en1   <= 1'b0;
            eof_push <= 1'b0;
        end
    end

    // Prepared from registers for the next cycle (a cycle late where that is conservative:
    // the reader only moves on, and a seal a cycle late changes nothing).
    always_comb begin
        cur_w1 = cur_w + WP'(1);
        cur_w2 = cur_w + WP'(2);
        nf_w1  = nf_w + WP'(1);
        nf_w2  = nf_w + WP'(2);
        // The word after w_lo must not reach the oldest word the reader still needs.
        ns_cur = !before_w(cur_w1, rd_word + WP'(BUF_WORDS));
        ns_nf  = !before_w(nf_w1, rd_word + WP'(BUF_WORDS));
    end
    function automatic logic before_w(input logic [WP-1:0] a, input logic [WP-1:0] b);
        logic [WP-1:0] d;
        d = a - b;
        before_w = d[WP-1];
    endfunction
    always_ff @(posedge clk) begin
        // The reader is close enough to the write position to be waiting for the last word.
        reader_near    <= (pw_idx - rd_word) <= WP'(MAX_WORDS + 2);
        desc_near_full <= desc_used >= ($clog2(DESC_SLOTS)+1)'(DESC_SLOTS - DESC_MARGIN - 1);
    end

    // ------------------------------------------------------------------ descriptor
    // eof_push happens one cycle after stage B; the checksum appears CSUM_LAT cycles after
    // stage B. Delay the frame's fields to meet it, then fold the sum (2 cycles).
    localparam int FIELD_W = SP + LEN_W + 48;
    logic [FIELD_W-1:0] fields_q [CSUM_LAT];
    logic [CSUM_LAT-1:0] push_q;
    always_ff @(posedge clk) begin
        fields_q[0] <= {eof_start_seg, eof_len, eof_ip, eof_port};
        push_q[0]   <= eof_push;
        for (int i = 1; i < CSUM_LAT; i++) begin
            fields_q[i] <= fields_q[i-1];
            push_q[i]   <= push_q[i-1];
        end
        if (rst) push_q <= '0;
    end

    logic [31:0] eof_ip;
    logic [15:0] eof_port;
    always_ff @(posedge clk) if (b_valid && b_eof) begin
        {eof_ip, eof_port} <= b_dest;
    end

    // Per-frame accumulation of the tree's output.
    logic [31:0] acc;
    logic [31:0] acc_final;
    always_ff @(posedge clk) begin
        if (csum_valid) begin
            if (csum_eof) acc_final <= (csum_sof ? 32'd0 : acc) + 32'(csum_word);
            acc <= (csum_sof ? 32'd0 : acc) + 32'(csum_word);
        end
    end

    // Fold 32 → 16 bits (two end-around-carry steps), aligned with the fields.
    logic [16:0] fold1;
    logic [15:0] fold2;
    logic [FIELD_W-1:0] f1, f2;
    logic p1, p2;
    always_ff @(posedge clk) begin
        fold1 <= 17'(acc_final[31:16]) + 17'(acc_final[15:0]);
        f1    <= fields_q[CSUM_LAT-1];
        p1    <= push_q[CSUM_LAT-1];
        fold2 <= fold1[15:0] + 16'(fold1[16]);
        f2    <= f1;
        p2    <= p1;
        if (rst) begin
            p1 <= 1'b0;
            p2 <= 1'b0;
        end
    end

    assign desc_valid = p2;
    assign desc_data  = {f2, fold2};

    // ------------------------------------------------------------------ almost full
    assign room_low = ((final_word - rd_word) > WP'(BUF_WORDS - AFULL_FREE)) || desc_near_full;
endmodule
