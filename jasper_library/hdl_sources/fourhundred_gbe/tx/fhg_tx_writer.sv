// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_writer — user-side half of the TX store-and-forward buffer (user_clk).
//
// Contract
//   * User port as docs/design/core.md §1: one 1024-bit word per cycle, first wire byte in
//     tx_data[1023:1016], tx_byte_enable (contiguous from bit 127) qualifies the last word,
//     tx_dest_ip/tx_dest_port sampled with tx_end_of_frame. Full rate: a word every cycle,
//     back-to-back frames, no bubbles required.
//   * Frames are written into the buffer as one continuous stream of 16-byte DCMAC
//     segments: frame k starts on the segment after frame k-1 ends, with a 42-byte gap at
//     its start where the MAC side later merges the Ethernet/IPv4/UDP header. Bytes are
//     stored in wire order, LSB-first inside a word (byte x of a word in bits 8x+7:8x), so
//     the MAC side forwards segments without reordering. Frames shorter than 60 bytes are
//     padded with zeros (their trailing bytes are zero in the buffer).
//   * Because a frame may end mid-word and the next one continue in the same word, a
//     user word touches two buffer words; at most two buffer writes happen per cycle, to
//     consecutive word addresses, so an even and an odd bank take them (wr0 = even bank,
//     wr1 = odd bank).
//   * When a frame has been written completely its descriptor (start segment, payload
//     length, destination, UDP payload checksum) is pushed out, CSUM_LAT+3 cycles after
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
//
// Latency: tx_data → buffer write 2 cycles; tx_end_of_frame → descriptor CSUM_LAT+3.
module fhg_tx_writer #(
    parameter int BUF_WORDS   = 512,    // buffer depth in 1024-bit words (power of two)
    parameter int MAX_PAYLOAD = 8972,   // largest UDP payload accepted (bytes)
    parameter int DESC_SLOTS  = 512,    // capacity of the descriptor queue behind us
    localparam int AW        = $clog2(BUF_WORDS),     // word address bits
    localparam int WP        = AW + 1,                // word pointer with wrap bit
    localparam int SP        = AW + 4,                // segment pointer with wrap bit
    localparam int LEN_W     = 14,
    localparam int DESC_W    = SP + LEN_W + 32 + 16 + 16
) (
    input  wire                 clk,
    input  wire                 rst,           // user reset or soft reset (synchronous)
    input  wire                 accept,        // fabric enabled and not resetting

    input  wire [1023:0]        tx_data,
    input  wire                 tx_valid,
    input  wire [127:0]         tx_byte_enable,
    input  wire [31:0]          tx_dest_ip,
    input  wire [15:0]          tx_dest_port,
    input  wire                 tx_end_of_frame,
    output logic                tx_afull,
    output logic                tx_overflow,

    // Buffer write ports: bank 0 holds even words, bank 1 odd words.
    output logic                wr0_en,
    output logic [AW-2:0]       wr0_addr,
    output logic [1023:0]       wr0_data,
    output logic                wr1_en,
    output logic [AW-2:0]       wr1_addr,
    output logic [1023:0]       wr1_data,

    input  wire  [WP-1:0]       rd_word,       // oldest word the MAC side still needs
    output logic [WP-1:0]       final_word,    // words below this are never written again

    output logic                desc_valid,
    output logic [DESC_W-1:0]   desc_data,     // {start_seg, payload_len, dst_ip, dst_port, csum}
    input  wire  [$clog2(DESC_SLOTS):0] desc_used,  // entries in the descriptor queue

    // Statistics, one-cycle increments in this clock domain.
    output logic                stat_word,         // a tx_valid word was accepted
    output logic                stat_frame_drop,   // a frame was dropped (overflow)
    output logic [7:0]          stat_words_lost,   // words discarded this cycle (0/1)
    output logic                stat_afull_rise
);
    localparam int CSUM_LAT   = 3;
    localparam int MAX_WORDS  = (MAX_PAYLOAD + 42 + 127) / 128 + 2;
    // Words of slack the pipeline may still write after tx_afull is seen by the user.
    localparam int AFULL_FREE = MAX_WORDS + 8;
    localparam int DESC_MARGIN = 16;

    initial begin
        if (BUF_WORDS < 2 * MAX_WORDS || (BUF_WORDS & (BUF_WORDS - 1)) != 0)
            $error("fhg_tx_writer: BUF_WORDS must be a power of two holding two maximum frames");
    end

    // ------------------------------------------------------------------ stage 1: register
    // Byte-reverse into wire order and zero the bytes the user did not enable.
    logic [1023:0] s1_data;
    logic          s1_valid, s1_eof;
    logic [7:0]    s1_nbytes;        // bytes in this word, 1..128
    logic [31:0]   s1_ip;
    logic [15:0]   s1_port;

    function automatic logic [7:0] count_ones(input logic [127:0] v);
        logic [7:0] n;
        n = '0;
        for (int i = 0; i < 128; i++) n = n + 8'(v[i]);
        count_ones = n;
    endfunction

    always_ff @(posedge clk) begin
        s1_valid <= tx_valid && !rst;
        s1_eof   <= tx_end_of_frame;
        s1_ip    <= tx_dest_ip;
        s1_port  <= tx_dest_port;
        s1_nbytes <= tx_end_of_frame ? count_ones(tx_byte_enable) : 8'd128;
        for (int i = 0; i < 128; i++)
            s1_data[8*i +: 8] <= (tx_end_of_frame && !tx_byte_enable[127-i]) ? 8'h00
                                 : tx_data[1023-8*i -: 8];
    end

    // ------------------------------------------------------------------ checksum pipeline
    // Ones'-complement sum of the payload as big-endian 16-bit words. The payload starts at
    // an even offset of the frame (42), so user words hold whole 16-bit words.
    logic [21:0] csum_word;
    logic        csum_valid, csum_sof, csum_eof;
    fhg_tx_csum_tree #(.LAT(CSUM_LAT)) u_csum (
        .clk      (clk),
        .data     (s1_data),
        .in_valid (s1_valid && !s1_drop_now),
        .in_sof   (s1_sof),
        .in_eof   (s1_eof),
        .sum      (csum_word),
        .out_valid(csum_valid),
        .out_sof  (csum_sof),
        .out_eof  (csum_eof)
    );

    // ------------------------------------------------------------------ stage 2: placement
    logic [SP-1:0]   start_seg;      // where the current (or next) frame starts
    logic [WP-1:0]   cur_w;          // buffer word receiving the low part of the next word
    logic [6:0]      off;            // byte offset of the next user word inside cur_w
    logic [1023:0]   pw;             // partial word: bytes below the fill level, zeros above
    logic [WP-1:0]   pw_idx;         // buffer word pw belongs to
    logic            in_frame;       // a word of the current frame has been accepted
    logic            dropping;       // discard until end of frame
    logic [LEN_W:0]  plen;           // payload bytes accepted so far in this frame
    logic            s1_sof;
    logic            s1_drop_now;

    assign s1_sof = !in_frame;

    // Placement of this word (frame start recomputes the offset from start_seg).
    logic [WP-1:0]  w_lo;
    logic [6:0]     o;
    logic [1023:0]  base;            // content below the offset in word w_lo
    logic [AW+7:0] x;                // byte position of the payload start in the buffer
    assign x = {1'b0, start_seg[SP-2:0], 4'b0000} + (AW+8)'(42);
    always_comb begin
        if (!in_frame) begin
            w_lo = {start_seg[SP-1], x[AW+6:7]} + WP'(x[AW+7] ? BUF_WORDS : 0);
            o    = x[6:0];
            // Same word as the frame start: keep the previous frame's tail bytes.
            base = (w_lo == pw_idx) ? pw : '0;
        end else begin
            w_lo = cur_w;
            o    = off;
            base = pw;
        end
    end

    // Shift the word into the two-word window: lo = word w_lo, hi = word w_lo+1. Frames
    // start on segment boundaries and the header is 42 bytes, so the offset is always
    // 16k + 10: a fixed 10-byte shift and an 8-way segment shift, not a 128-way one.
    logic [2047:0] window;
    always_comb window = ({1024'b0, s1_data} << 80) << (128 * o[6:4]);

    logic [1023:0] lo, hi;
    assign lo = base | window[1023:0];
    assign hi = window[2047:1024];

    // End of frame: end position inside the window (bytes), with runt padding to 60.
    logic [LEN_W:0]  plen_next;
    logic [8:0]      e_raw, e_pad;
    logic [4:0]      end_seg_rel;    // 1..16 segments from w_lo*8
    always_comb begin
        plen_next = plen + (LEN_W+1)'(s1_nbytes);
        e_raw     = 9'(o) + 9'(s1_nbytes);
        if (plen_next + 42 < 60) e_pad = e_raw + 9'(60 - 42 - plen_next);
        else                     e_pad = e_raw;
        end_seg_rel = 5'((e_pad + 9'd15) >> 4);
    end

    // The reader is close enough to the write position to be waiting for the last word.
    logic reader_near;
    assign reader_near = (pw_idx - rd_word) <= WP'(MAX_WORDS + 2);

    // Space: the highest word this cycle may write is w_lo+1.
    logic [WP-1:0] used_words;
    logic          no_space, too_long, desc_near_full;
    assign used_words     = (w_lo + WP'(1)) - rd_word;
    assign no_space       = used_words >= WP'(BUF_WORDS);
    assign too_long       = plen_next > (LEN_W+1)'(MAX_PAYLOAD);
    assign desc_near_full = desc_used >= ($clog2(DESC_SLOTS)+1)'(DESC_SLOTS - DESC_MARGIN);
    assign s1_drop_now    = dropping || (s1_valid && (no_space || too_long || !accept
                                                      || (!in_frame && desc_near_full)));

    // Descriptor fields travel with the checksum pipeline.
    logic [SP-1:0]  eof_start_seg;
    logic [LEN_W-1:0] eof_len;
    logic           eof_push;

    always_ff @(posedge clk) begin
        wr0_en <= 1'b0;
        wr1_en <= 1'b0;
        eof_push <= 1'b0;
        stat_word <= 1'b0;
        stat_frame_drop <= 1'b0;
        stat_words_lost <= '0;
        if (rst) begin
            start_seg   <= '0;
            cur_w       <= '0;
            off         <= '0;
            pw          <= '0;
            pw_idx      <= '0;
            in_frame    <= 1'b0;
            dropping    <= 1'b0;
            plen        <= '0;
            final_word  <= '0;
            tx_overflow <= 1'b0;
        end else if (s1_valid) begin
            stat_word <= 1'b1;
            if (s1_drop_now) begin
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
                    end
                end
                dropping <= !s1_eof;
                in_frame <= 1'b0;
                plen     <= '0;
            end else begin
                plen <= s1_eof ? '0 : plen_next;
                in_frame <= !s1_eof;
                // Low word is always written; with even/odd banking by address parity.
                if (w_lo[0]) begin
                    wr1_en <= 1'b1; wr1_addr <= w_lo[AW-1:1]; wr1_data <= lo;
                end else begin
                    wr0_en <= 1'b1; wr0_addr <= w_lo[AW-1:1]; wr0_data <= lo;
                end
                if (!s1_eof) begin
                    cur_w      <= w_lo + WP'(1);
                    off        <= o;
                    pw         <= hi;
                    pw_idx     <= w_lo + WP'(1);
                    final_word <= w_lo + WP'(1);
                end else begin
                    eof_push      <= 1'b1;
                    eof_start_seg <= start_seg;
                    eof_len       <= plen_next[LEN_W-1:0];
                    start_seg     <= {w_lo, 3'b000} + SP'(end_seg_rel);
                    if (end_seg_rel > 5'd8) begin
                        // The frame reaches into the next word: flush it as well.
                        if (w_lo[0]) begin
                            wr0_en <= 1'b1; wr0_addr <= w_lo[AW-1:1] + 1'b1; wr0_data <= hi;
                        end else begin
                            wr1_en <= 1'b1; wr1_addr <= w_lo[AW-1:1]; wr1_data <= hi;
                        end
                        pw         <= (end_seg_rel == 5'd16) ? '0 : hi;
                        pw_idx     <= w_lo + ((end_seg_rel == 5'd16) ? WP'(2) : WP'(1));
                        final_word <= w_lo + ((end_seg_rel == 5'd16) ? WP'(2) : WP'(1));
                    end else begin
                        pw         <= (end_seg_rel == 5'd8) ? '0 : lo;
                        pw_idx     <= w_lo + ((end_seg_rel == 5'd8) ? WP'(1) : WP'(0));
                        final_word <= w_lo + ((end_seg_rel == 5'd8) ? WP'(1) : WP'(0));
                    end
                end
            end
        end else if (!in_frame && start_seg[2:0] != 3'd0 && reader_near) begin
            // Idle between frames while the MAC side may be waiting for the partly filled
            // word: seal it so it becomes final. (With the reader far behind, sealing would
            // only leave holes that cost the packer its segment packing.)
            start_seg  <= {pw_idx + WP'(1), 3'b000};
            pw         <= '0;
            pw_idx     <= pw_idx + WP'(1);
            final_word <= pw_idx + WP'(1);
        end
        if (rst) begin
            wr0_en <= 1'b0;
            wr1_en <= 1'b0;
            eof_push <= 1'b0;
        end
    end

    // ------------------------------------------------------------------ descriptor
    // eof_push happens one cycle after stage 1; the checksum appears CSUM_LAT cycles after
    // stage 1. Delay the frame's fields to meet it, then fold the sum (2 cycles).
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
    always_ff @(posedge clk) if (s1_valid && s1_eof) begin
        eof_ip   <= s1_ip;
        eof_port <= s1_port;
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
    logic afull_q;
    always_ff @(posedge clk) begin
        afull_q  <= ((final_word - rd_word) > WP'(BUF_WORDS - AFULL_FREE))
                    || desc_near_full || !accept;
        stat_afull_rise <= afull_q && !tx_afull;
        tx_afull <= afull_q;
        if (rst) begin
            tx_afull <= 1'b1;
            stat_afull_rise <= 1'b0;
        end
    end
endmodule
