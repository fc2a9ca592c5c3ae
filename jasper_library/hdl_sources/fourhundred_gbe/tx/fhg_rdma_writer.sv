// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rdma_writer — places the RDMA mode's RoCEv2 packets in the TX buffer (user_clk), in
// the layout fhg_tx_writer uses for UDP frames, so the header stage and the packer send
// them unchanged.
//
// Contract
//   * Input: fhg_rdma_framer's packet words (valid/ready; the first word of a packet with
//     its 28 or 32 bytes of BTH + RETH (+ ImmDt), w_nbytes valid bytes per word, zero
//     beyond). A stall (ready low) never loses anything; w_ready is a register (one word may
//     still be taken in the cycle after it falls) and the words pass a register slice.
//   * Buffer layout (fhg_tx_writer's): a stream of 16-byte segments in wire order, frame k
//     starting on the segment after frame k-1 ends. A packet's frame is a 42-byte gap (the
//     packer merges the Ethernet/IPv4/UDP header there), the BTH/RETH/ImmDt bytes, the
//     payload, 0-3 pad bytes and 4 zero bytes where fhg_tx_icrc puts the ICRC.
//   * Descriptor per packet, pushed with its last word: {start_seg, UDP payload length,
//     cfg_dst_ip, 4791, checksum 0} (RoCEv2 leaves the UDP checksum 0; the core's header
//     stage does so in the RDMA mode).
//   * final_word / rd_word as fhg_tx_writer: words below final_word are never written
//     again; a partly filled word between packets is sealed when the reader waits for it.
//     The bank writes and the sealing follow fhg_tx_buf_pkg's rules, as fhg_tx_writer's do,
//     and the buffer is the same bundle pair (to_buf, from_buf).
//   * Each input word is written as it comes (one or two buffer words, consecutive, so the
//     even and odd banks take them); the first word of a packet that starts in the second
//     half of a word and ends in the next-but-one needs three and takes one extra cycle.
//     Otherwise one word per cycle. Back-pressure: ready is low while the buffer lacks room
//     for a maximum packet or the descriptor queue is nearly full.
module fhg_rdma_writer #(
    parameter int BUF_WORDS  = 512,
    parameter int DESC_SLOTS = 512,
    parameter int MAX_PAYLOAD = 8972,     // largest datagram: bounds a packet below the MTU
    localparam int AW     = $clog2(BUF_WORDS),
    localparam int WP     = AW + 1,
    localparam int SP     = AW + 4,
    localparam int LEN_W  = fhg_tx_buf_pkg::LEN_W,
    localparam int DESC_W = SP + fhg_tx_buf_pkg::DESC_TAIL_W
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire  [31:0]         cfg_dst_ip,

    input  wire                 w_valid,
    output logic                w_ready,
    input  wire  [1023:0]       w_data,
    input  wire  [7:0]          w_nbytes,
    input  wire                 w_sop,
    input  wire                 w_eop,
    input  wire  [255:0]        w_hdr,
    input  wire                 w_imm,
    input  wire  [1:0]          w_pad,
    input  wire  [LEN_W-1:0]    w_udp_len,

    output fhg_tx_buf_pkg::buf_wr_t to_buf,
    input  fhg_tx_buf_pkg::buf_rd_t from_buf
);
    localparam int MAX_DATA      = (MAX_PAYLOAD + 8 < 4096) ? MAX_PAYLOAD + 8 : 4096;
    // BTH + RETH + ImmDt, the data, pad and ICRC after the header gap.
    localparam int MAX_PKT_WORDS = fhg_tx_buf_pkg::frame_words(32 + MAX_DATA + 3 + 4);
    localparam int DESC_MARGIN   = fhg_tx_buf_pkg::DESC_MARGIN;
    localparam logic [15:0] ROCE_PORT = 16'd4791;

    initial begin
        if (BUF_WORDS < 2 * MAX_PKT_WORDS + 8 || (BUF_WORDS & (BUF_WORDS - 1)) != 0)
            $error("fhg_rdma_writer: BUF_WORDS must be a power of two holding two packets");
        if (AW > fhg_tx_buf_pkg::MAX_AW)
            $error("fhg_rdma_writer: BUF_WORDS beyond fhg_tx_buf_pkg::MAX_AW address bits");
    end

    fhg_tx_buf_pkg::bank_wr_t    wr;        // the bank write ports
    logic [WP-1:0]               rd_word;
    logic [WP-1:0]               final_word;
    logic [$clog2(DESC_SLOTS):0] desc_used;
    logic                        desc_valid;
    logic [DESC_W-1:0]           desc_data;
    assign rd_word   = from_buf.rd_word[WP-1:0];
    assign desc_used = from_buf.desc_used[$clog2(DESC_SLOTS):0];
    assign to_buf    = fhg_tx_buf_pkg::to_buffer(wr, final_word, desc_valid,
                                                 desc_data[DESC_W-1 -: SP],
                                                 desc_data[fhg_tx_buf_pkg::DESC_TAIL_W-1:0]);

    // A word as the placement takes it: [header (hl bytes), data] (q_vec), and where the
    // frame ends relative to the frame start's segment s, k = hl + 42 + data bytes + pad +
    // 4 bytes past 16 s, in segments (q_kseg = ceil(k / 16)) and as k > 192 / k > 176 (a
    // one-word packet then spills into a third buffer word when s is 4 / 5): all prepared
    // in the input slice, from the framer's registers.
    logic           q_valid, q_sop, q_eop, q_kA, q_kB;
    logic [1279:0]  q_vec;
    logic [3:0]     q_kseg;
    logic [LEN_W-1:0] q_udp_len;
    logic [1023:0]  pw;              // partial word (bytes below the fill level)
    logic [WP-1:0]  pw_idx;
    logic           in_pkt;
    logic [SP-1:0]  f_start;         // the packet's frame start
    logic           flush_pending;   // a third word of the last cycle still to write
    logic [WP-1:0]  flush_idx;

    // ------------------------------------------------------------------ placement
    // Word j of a packet lands at (F + j) * 128 + 16 s + 42 + hl, F the frame start's word
    // and s its segment: relative to B = F + j the offset is the same for every word. The
    // header bytes sit right before the first word's data, so [header, data] shifted by
    // 16 s + 42 into the three words B, B+1, B+2 places both.
    // {B, s} of the next word to place is a register, kept ready: between packets where
    // the next frame starts (the buffer layout's start segment), inside one B advancing by
    // a word per word with s the packet's. The placement starts from it, not from a choice.
    logic [WP-1:0]  b;
    logic [2:0]     s;
    logic [SP-1:0]  cur;
    assign b = cur[SP-1:3];
    assign s = cur[2:0];
    logic [WP-1:0]  bp [4];          // B + 0..3
    always_comb for (int k = 0; k < 4; k++) bp[k] = b + WP'(k);

    // The partial word is word B whenever a packet starts (a frame's end and the sealing
    // step both leave it where the next frame starts); inside a packet it is B exactly when
    // the last word's data started in B (hi_half low), which pw_b keeps.
    logic          pw_b, pw_at_b;
    assign pw_at_b = q_sop || pw_b;
    logic [3071:0] win, base3;
    logic          hi_half;          // the data starts in word B+1
    assign hi_half = s[2];           // 16 s + 42 + hl >= 128 exactly when s >= 4
    always_comb begin
        // What is already in the words: the partial word is B (first word of a packet, or
        // s < 4) or B+1.
        base3 = pw_at_b ? {2048'd0, pw} : {1024'd0, pw, 1024'd0};
        win   = base3 | (({1792'd0, q_vec} << 336) << (128 * s));
    end

    // Where this word ends, relative to the data's first buffer word lo = B + hi_half: the
    // frame's end (pad and ICRC included) lies 16 s + k bytes past word B.
    logic [WP-1:0] lo, lo1;
    logic [4:0]    end_seg_rel;
    assign lo  = hi_half ? bp[1] : bp[0];
    assign lo1 = hi_half ? bp[2] : bp[1];
    assign end_seg_rel = 5'(s) + 5'(q_kseg) - (hi_half ? 5'd8 : 5'd0);
    // The word after the frame's end, from lo: 0, 1 (end in lo or at its end) or 2.
    logic [WP-1:0] lo_end;
    always_comb begin
        logic [1:0] d;
        d = (end_seg_rel > 5'd8) ? ((end_seg_rel == 5'd16) ? 2'd2 : 2'd1)
                                 : ((end_seg_rel == 5'd8) ? 2'd1 : 2'd0);
        lo_end = bp[2'(hi_half) + d];
    end

    logic three;                     // header word B, data words B+1 and B+2
    assign three = q_sop && q_eop && ((s == 3'd4 && q_kA) || (s == 3'd5 && q_kB));
    logic hdr_word;                  // the first word also writes word B (header in it)
    assign hdr_word = q_sop && (s == 3'd4 || s == 3'd5);

    // Room: a whole maximum packet beyond the partial word, and descriptor slots.
    // Registered, from last cycle's pointers: the partial word moves on by at most three
    // words a cycle and one descriptor is pushed at most, so the margins grow by that much.
    logic room;
    always_ff @(posedge clk)
        room <= ((pw_idx - rd_word) <= WP'(BUF_WORDS - MAX_PKT_WORDS - 7))
                && (desc_used < ($clog2(DESC_SLOTS)+1)'(DESC_SLOTS - DESC_MARGIN - 1));

    logic          reader_near;
    logic [WP-1:0] next_w;           // the word after the partial word
    assign reader_near = (pw_idx - rd_word) <= WP'(MAX_PKT_WORDS + 2);
    assign next_w      = pw_idx + WP'(1);

    logic [1023:0] w_lo, w_hi, w_b;
    assign w_b  = win[1023:0];
    assign w_lo = hi_half ? win[2047:1024] : win[1023:0];
    assign w_hi = hi_half ? win[3071:2048] : win[2047:1024];
    logic [1023:0] flush_data;
    logic [WP-1:0] flush_final;

    logic take;
    assign take = q_valid && room && !flush_pending && !rst;

    // Input register slice: the placement works on registered words, and w_ready is a
    // register (a skid register takes the one word that may come after it falls).
    logic          s_valid, s_sop, s_eop, s_kA, s_kB;
    logic [1279:0] s_vec;
    logic [3:0]    s_kseg;
    logic [LEN_W-1:0] s_udp_len;
    logic          in_hl32;          // the packet arriving has ImmDt (32 header bytes)
    logic          x_hl32;
    logic [1279:0] x_vec;
    logic [8:0]    x_k;
    always_comb begin
        logic [255:0] h;
        x_hl32 = w_sop ? w_imm : in_hl32;
        h = w_sop ? w_hdr : '0;
        x_vec = x_hl32 ? {w_data, h} : {32'd0, w_data, h[223:0]};
        x_k = (x_hl32 ? 9'd74 : 9'd70) + 9'(w_nbytes) + 9'(w_pad) + 9'd4;
    end
    always_ff @(posedge clk) begin
        logic acc, q_free;
        acc    = w_valid && w_ready;
        q_free = take || !q_valid;
        if (acc && w_sop) in_hl32 <= w_imm;
        if (q_free) begin
            if (s_valid) begin
                {q_vec, q_kseg, q_kA, q_kB, q_sop, q_eop, q_udp_len} <=
                    {s_vec, s_kseg, s_kA, s_kB, s_sop, s_eop, s_udp_len};
                q_valid <= 1'b1;
                s_valid <= 1'b0;
            end else begin
                {q_vec, q_kseg, q_kA, q_kB, q_sop, q_eop, q_udp_len} <=
                    {x_vec, 4'((x_k + 9'd15) >> 4), x_k > 9'd192, x_k > 9'd176, w_sop, w_eop,
                     w_udp_len};
                q_valid <= acc;
            end
        end else if (acc) begin
            {s_vec, s_kseg, s_kA, s_kB, s_sop, s_eop, s_udp_len} <=
                {x_vec, 4'((x_k + 9'd15) >> 4), x_k > 9'd192, x_k > 9'd176, w_sop, w_eop,
                 w_udp_len};
            s_valid <= 1'b1;
        end
        w_ready <= !(q_free ? 1'b0 : (s_valid || acc));
        if (rst) begin
            q_valid <= 1'b0;
            s_valid <= 1'b0;
            w_ready <= 1'b0;
        end
    end

    // This cycle's buffer writes, two consecutive words at most: the third word of the last
    // cycle (flush); else lo, and lo + 1 when the packet ends past lo; a first word with its
    // header in word B writes B and lo = B + 1 (and flushes B + 2 next cycle when the
    // packet ends there).
    always_ff @(posedge clk) begin
        wr <= fhg_tx_buf_pkg::bank_writes(wr, flush_pending || take,
                                          take && (hdr_word || (q_eop && end_seg_rel > 5'd8)),
                                          flush_pending ? flush_idx : hdr_word ? b : lo,
                                          hdr_word ? lo : lo1,
                                          flush_pending ? flush_data : hdr_word ? w_b : w_lo,
                                          hdr_word ? w_lo : w_hi);
        if (rst) begin
            wr.en0 <= 1'b0;
            wr.en1 <= 1'b0;
        end
    end

    always_ff @(posedge clk) begin
        desc_valid <= 1'b0;
        if (rst) begin
            cur           <= '0;
            pw            <= '0;
            pw_idx        <= '0;
            final_word    <= '0;
            in_pkt        <= 1'b0;
            flush_pending <= 1'b0;
        end else if (flush_pending) begin
            flush_pending <= 1'b0;
            final_word    <= flush_final;
        end else if (take) begin
            if (q_sop) f_start <= cur;
            pw_b <= !hi_half;
            if (!q_eop) begin
                cur        <= {bp[1], s};
                in_pkt     <= 1'b1;
                pw         <= w_hi;
                pw_idx     <= lo1;
                final_word <= lo1;
            end else begin
                in_pkt     <= 1'b0;
                desc_valid <= 1'b1;
                desc_data  <= {q_sop ? cur : f_start, q_udp_len, cfg_dst_ip, ROCE_PORT, 16'd0};
                // The next frame starts after this one's end: {B, s} + k in segments.
                cur        <= cur + SP'(q_kseg);
                pw_idx     <= lo_end;
                if (end_seg_rel > 5'd8) begin
                    pw     <= (end_seg_rel == 5'd16) ? '0 : w_hi;
                    if (three) begin
                        // Word B and lo now, lo + 1 next cycle: final only once written.
                        flush_pending <= 1'b1;
                        flush_idx     <= lo1;
                        flush_data    <= w_hi;
                        flush_final   <= lo_end;
                        final_word    <= lo1;
                    end else begin
                        final_word <= lo_end;
                    end
                end else begin
                    pw         <= (end_seg_rel == 5'd8) ? '0 : w_lo;
                    final_word <= lo_end;
                end
            end
        end else if (fhg_tx_buf_pkg::seal_due(in_pkt, cur[2:0], reader_near)) begin
            // The next packet, and a fresh partial word, start on the word after it.
            cur        <= {next_w, 3'b000};
            pw         <= '0;
            pw_idx     <= next_w;
            final_word <= next_w;
        end
    end
endmodule
