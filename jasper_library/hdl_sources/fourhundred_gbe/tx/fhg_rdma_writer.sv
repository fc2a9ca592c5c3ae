// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rdma_writer — places the RDMA mode's RoCEv2 packets in the TX buffer (user_clk), in
// the layout fhg_tx_writer uses for UDP frames, so the header stage and the packer send
// them unchanged.
//
// Contract
//   * Input: fhg_rdma_framer's packet words (valid/ready; the first word of a packet with
//     its 28 or 32 bytes of BTH + RETH (+ ImmDt), w_nbytes valid bytes per word, zero
//     beyond). A stall (ready low) never loses anything.
//   * Buffer layout (fhg_tx_writer's): a stream of 16-byte segments in wire order, frame k
//     starting on the segment after frame k-1 ends. A packet's frame is a 42-byte gap (the
//     packer merges the Ethernet/IPv4/UDP header there), the BTH/RETH/ImmDt bytes, the
//     payload, 0-3 pad bytes and 4 zero bytes where fhg_tx_icrc puts the ICRC.
//   * Descriptor per packet, pushed with its last word: {start_seg, UDP payload length,
//     cfg_dst_ip, 4791, checksum 0} (RoCEv2 leaves the UDP checksum 0; the core's header
//     stage does so in the RDMA mode).
//   * final_word / rd_word as fhg_tx_writer: words below final_word are never written
//     again; a partly filled word between packets is sealed when the reader waits for it.
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
    localparam int LEN_W  = 14,
    localparam int DESC_W = SP + LEN_W + 32 + 16 + 16
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

    output logic                wr0_en,
    output logic [AW-2:0]       wr0_addr,
    output logic [1023:0]       wr0_data,
    output logic                wr1_en,
    output logic [AW-2:0]       wr1_addr,
    output logic [1023:0]       wr1_data,
    input  wire  [WP-1:0]       rd_word,
    output logic [WP-1:0]       final_word,

    output logic                desc_valid,
    output logic [DESC_W-1:0]   desc_data,
    input  wire  [$clog2(DESC_SLOTS):0] desc_used
);
    localparam int MAX_DATA      = (MAX_PAYLOAD + 8 < 4096) ? MAX_PAYLOAD + 8 : 4096;
    localparam int MAX_PKT_WORDS = (42 + 32 + MAX_DATA + 3 + 4 + 127) / 128 + 2;
    localparam int DESC_MARGIN   = 16;
    localparam logic [15:0] ROCE_PORT = 16'd4791;

    initial if (BUF_WORDS < 2 * MAX_PKT_WORDS + 8 || (BUF_WORDS & (BUF_WORDS - 1)) != 0)
        $error("fhg_rdma_writer: BUF_WORDS must be a power of two holding two packets");

    logic [SP-1:0]  start_seg;       // where the next frame starts
    logic [1023:0]  pw;              // partial word (bytes below the fill level)
    logic [WP-1:0]  pw_idx;
    logic           in_pkt;
    logic [WP-1:0]  b_cur;           // B of the next word (see below)
    logic [2:0]     s_q;             // segment of the frame start inside its word
    logic           hl32_q;
    logic [SP-1:0]  f_start;         // the packet's frame start
    logic           flush_pending;   // a third word of the last cycle still to write
    logic [WP-1:0]  flush_idx;

    // ------------------------------------------------------------------ placement
    // Word j of a packet lands at (F + j) * 128 + 16 s + 42 + hl, F the frame start's word
    // and s its segment: relative to B = F + j the offset is the same for every word. The
    // header bytes sit right before the first word's data, so [header, data] shifted by
    // 16 s + 42 into the three words B, B+1, B+2 places both.
    logic [WP-1:0]  b;
    logic [2:0]     s;
    logic           hl32;
    assign b    = w_sop ? start_seg[SP-1:3] : b_cur;
    assign s    = w_sop ? start_seg[2:0] : s_q;
    assign hl32 = w_sop ? w_imm : hl32_q;

    logic [1279:0] vec;              // header (hl bytes) then the 128 data bytes
    always_comb begin
        logic [255:0] h;
        h = w_sop ? w_hdr : '0;
        if (hl32) vec = {w_data, h};
        else      vec = {32'd0, w_data, h[223:0]};
    end

    logic [3071:0] win, base3;
    logic          hi_half;          // the data starts in word B+1
    assign hi_half = s[2];           // 16 s + 42 + hl >= 128 exactly when s >= 4
    always_comb begin
        // What is already in the words: the partial word is B (first word of a packet, or
        // s < 4) or B+1.
        base3 = (pw_idx == b) ? {2048'd0, pw} : {1024'd0, pw, 1024'd0};
        win   = base3 | (({1792'd0, vec} << 336) << (128 * s));
    end

    // Where this word ends, relative to the data's first buffer word lo = B + hi_half.
    logic [WP-1:0] lo;
    logic [6:0]    o;                // data offset inside lo
    logic [8:0]    e;                // end of the frame (pad and ICRC included) from lo
    logic [4:0]    end_seg_rel;
    assign lo = b + WP'(hi_half);
    assign o  = 7'(16 * s + (hl32 ? 74 : 70));
    assign e  = 9'(o) + 9'(w_nbytes) + 9'(w_pad) + 9'd4;
    assign end_seg_rel = 5'((e + 9'd15) >> 4);

    logic three;                     // header word B, data words B+1 and B+2
    assign three = w_sop && w_eop && (s == 3'd4 || s == 3'd5) && e > 9'd128;
    logic hdr_word;                  // the first word also writes word B (header in it)
    assign hdr_word = w_sop && (s == 3'd4 || s == 3'd5);

    // Room: a whole maximum packet beyond the partial word, and descriptor slots.
    logic room;
    assign room = ((pw_idx - rd_word) <= WP'(BUF_WORDS - MAX_PKT_WORDS - 4))
                  && (desc_used < ($clog2(DESC_SLOTS)+1)'(DESC_SLOTS - DESC_MARGIN));
    assign w_ready = room && !flush_pending && !rst;

    logic reader_near;
    assign reader_near = (pw_idx - rd_word) <= WP'(MAX_PKT_WORDS + 2);

    logic [1023:0] w_lo, w_hi, w_b;
    assign w_b  = win[1023:0];
    assign w_lo = hi_half ? win[2047:1024] : win[1023:0];
    assign w_hi = hi_half ? win[3071:2048] : win[2047:1024];
    logic [1023:0] flush_data;
    logic [WP-1:0] flush_final;

    logic take;
    assign take = w_valid && w_ready;

    // This cycle's buffer writes (at most two, to consecutive words).
    logic          pa_en, pb_en;
    logic [WP-1:0] pa_idx, pb_idx;
    logic [1023:0] pa_data, pb_data;
    always_comb begin
        pa_en = 1'b0; pa_idx = lo; pa_data = w_lo;
        pb_en = 1'b0; pb_idx = lo + WP'(1); pb_data = w_hi;
        if (flush_pending) begin
            pa_en = 1'b1; pa_idx = flush_idx; pa_data = flush_data;
        end else if (take) begin
            pa_en = 1'b1;
            if (hdr_word) begin
                pb_en = 1'b1; pb_idx = b; pb_data = w_b;
            end else if (w_eop && end_seg_rel > 5'd8) begin
                pb_en = 1'b1;
            end
        end
    end

    always_ff @(posedge clk) begin
        wr0_en <= 1'b0;
        wr1_en <= 1'b0;
        if (pa_en) begin
            if (pa_idx[0]) begin
                wr1_en <= 1'b1; wr1_addr <= pa_idx[AW-1:1]; wr1_data <= pa_data;
            end else begin
                wr0_en <= 1'b1; wr0_addr <= pa_idx[AW-1:1]; wr0_data <= pa_data;
            end
        end
        if (pb_en) begin
            if (pb_idx[0]) begin
                wr1_en <= 1'b1; wr1_addr <= pb_idx[AW-1:1]; wr1_data <= pb_data;
            end else begin
                wr0_en <= 1'b1; wr0_addr <= pb_idx[AW-1:1]; wr0_data <= pb_data;
            end
        end
        if (rst) begin
            wr0_en <= 1'b0;
            wr1_en <= 1'b0;
        end
    end

    always_ff @(posedge clk) begin
        desc_valid <= 1'b0;
        if (rst) begin
            start_seg     <= '0;
            pw            <= '0;
            pw_idx        <= '0;
            final_word    <= '0;
            in_pkt        <= 1'b0;
            flush_pending <= 1'b0;
        end else if (flush_pending) begin
            flush_pending <= 1'b0;
            final_word    <= flush_final;
        end else if (take) begin
            if (w_sop) begin
                s_q     <= start_seg[2:0];
                hl32_q  <= w_imm;
                f_start <= start_seg;
            end
            b_cur <= b + WP'(1);
            if (!w_eop) begin
                in_pkt     <= 1'b1;
                pw         <= w_hi;
                pw_idx     <= lo + WP'(1);
                final_word <= lo + WP'(1);
            end else begin
                in_pkt     <= 1'b0;
                desc_valid <= 1'b1;
                desc_data  <= {w_sop ? start_seg : f_start, w_udp_len, cfg_dst_ip, ROCE_PORT,
                               16'd0};
                start_seg  <= {lo, 3'b000} + SP'(end_seg_rel);
                if (end_seg_rel > 5'd8) begin
                    pw     <= (end_seg_rel == 5'd16) ? '0 : w_hi;
                    pw_idx <= lo + ((end_seg_rel == 5'd16) ? WP'(2) : WP'(1));
                    if (three) begin
                        // Word B and lo now, lo + 1 next cycle: final only once written.
                        flush_pending <= 1'b1;
                        flush_idx     <= lo + WP'(1);
                        flush_data    <= w_hi;
                        flush_final   <= lo + ((end_seg_rel == 5'd16) ? WP'(2) : WP'(1));
                        final_word    <= lo + WP'(1);
                    end else begin
                        final_word <= lo + ((end_seg_rel == 5'd16) ? WP'(2) : WP'(1));
                    end
                end else begin
                    pw         <= (end_seg_rel == 5'd8) ? '0 : w_lo;
                    pw_idx     <= lo + ((end_seg_rel == 5'd8) ? WP'(1) : WP'(0));
                    final_word <= lo + ((end_seg_rel == 5'd8) ? WP'(1) : WP'(0));
                end
            end
        end else if (!in_pkt && start_seg[2:0] != 3'd0 && reader_near) begin
            // Idle between packets while the MAC side may wait for the partly filled word.
            start_seg  <= {pw_idx + WP'(1), 3'b000};
            pw         <= '0;
            pw_idx     <= pw_idx + WP'(1);
            final_word <= pw_idx + WP'(1);
        end
    end
endmodule
