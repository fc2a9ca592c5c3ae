// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rdma_framer — the RDMA mode's ring logic (user_clk): each datagram becomes the data of
// one slot of the remote chunk ring, cut into RoCEv2 RDMA WRITE packets.
//
// Contract
//   * Input: whole datagrams from fhg_rdma_sf (length known with the first word). Output:
//     the packets' words for fhg_rdma_writer, one per cycle at most (valid/ready), each
//     packet's first word with its BTH + RETH (+ ImmDt) bytes.
//   * Ring (docs/design/core.md §6): datagram n (counted from 0 since the last reset) is
//     slot s = n mod S of chunk c = n div S (S slots per chunk), and chunk c lives at ring
//     index c mod R (R chunks in the ring): VA = base + (ring index * S + s) * slot size.
//     The slot's bytes are the 64-bit sequence number n (big-endian) followed by the
//     datagram; they go out as UC RDMA WRITE ONLY packets of at most the path MTU
//     (1024/2048/4096), each with its own RETH (VA, R_Key, its own length), the PSN
//     counting up by one per packet from the start PSN (mod 2^24). The last packet of a
//     chunk's last slot is WRITE ONLY with Immediate (solicited), the immediate being
//     {chunks dropped so far mod 256, chunk number mod 2^24}.
//   * Flow control (cfg_flow_ctrl): the credit is the number of the last chunk the consumer
//     released. Chunk c may be written when c - credit - 1 < R (mod 2^32), i.e. its ring
//     place has been released. The decision is made at the chunk's first slot and holds for
//     the whole chunk: a chunk that may not be written is dropped whole (no packet, PSNs do
//     not advance), counted, and the dropped count travels in the next immediate.
//   * Reset: the ring restarts at datagram 0, chunk 0, the base VA and the start PSN as
//     configured at that moment (configuration is quasi-static; the core resets the TX
//     path whenever the RDMA mode is switched on).
//   * Throughput: one output word per cycle; a datagram whose slot (8 + length bytes) needs
//     one word more than the datagram takes one extra cycle; with flow control on, the first
//     datagram of a chunk waits until the chunk's credit check (two registered stages after
//     the chunk number moves) has settled: at most two cycles per chunk. Latency: 2 cycles
//     (the input slice and the output register).
//   * i_ready is a register (the input passes a register slice whose skid register takes
//     the word accepted while it falls); w_ready is the writer's register likewise.
//   * Timing: the slot's geometry comes precomputed with the datagram's first word (i_tag,
//     fhg_rdma_sf); per word, counters with flags prepared a cycle ahead say where packets
//     and the slot end; the 64-bit addresses and sequence number are added in 32-bit halves,
//     the upper half taking a registered increment kept beside it, the lower half in 16-bit
//     halves whose upper one is added for both values of the carry, so the carry that picks
//     the upper half runs through at most 17 bits (the next slot's address takes one add
//     per datagram, and a one-word datagram can end every cycle); the address of a slot's
//     first packet's successor is kept ready. Configuration is derived in registered steps
//     and loaded during the reset and the cycles after it (the user side accepts data only
//     32 cycles after its reset).
module fhg_rdma_framer #(
    localparam int LEN_W = 14,
    localparam int TAG_W = 67
) (
    input  wire                 clk,
    input  wire                 rst,

    input  wire  [1:0]          cfg_mtu_sel,      // 0: 1024, 1: 2048, 2 (and 3): 4096
    input  wire  [23:0]         cfg_qpn,
    input  wire  [23:0]         cfg_psn,
    input  wire  [31:0]         cfg_rkey,
    input  wire  [63:0]         cfg_va,
    input  wire  [23:0]         cfg_slot_size,
    input  wire  [23:0]         cfg_slots,        // slots per chunk (>= 1)
    input  wire  [23:0]         cfg_chunks,       // chunks in the ring (>= 1)
    input  wire                 cfg_flow_ctrl,
    input  wire  [31:0]         cfg_credit,

    input  wire                 i_valid,
    output logic                i_ready,
    input  wire  [1023:0]       i_data,
    input  wire                 i_first,
    input  wire                 i_last,
    input  wire  [TAG_W-1:0]    i_tag,            // the slot's geometry (fhg_rdma_sf o_tag)

    output logic                w_valid,
    input  wire                 w_ready,
    output logic [1023:0]       w_data,           // wire order, bytes past w_nbytes zero
    output logic [7:0]          w_nbytes,         // 1..128
    output logic                w_sop,
    output logic                w_eop,
    output logic [255:0]        w_hdr,            // BTH, RETH, ImmDt in wire order (w_sop)
    output logic                w_imm,            // the packet carries ImmDt (32 header bytes)
    output logic [1:0]          w_pad,            // pad bytes after the payload
    output logic [LEN_W-1:0]    w_udp_len,        // UDP payload: header + data + pad + ICRC

    output logic [23:0]         st_psn,           // next PSN
    output logic [31:0]         st_chunk,         // chunk being filled
    output logic                stat_chunk_done,
    output logic                stat_chunk_dropped,
    output logic                stat_dgram,
    output logic                stat_dgram_dropped
);
    // ------------------------------------------------------------------ configuration
    // Derived in registered steps (it is quasi-static); the ring state loads it while
    // `init` is set, i.e. during the reset and the INIT cycles after it.
    localparam int INIT = 4;
    logic [12:0] mtu;
    logic [6:0]  wpp_m1;                   // words per packet minus one
    logic [13:0] udp_full;                 // UDP length of a full packet (no ImmDt)
    logic [23:0] slots_m1, slots_m2, chunks_m1, chunks_m2;
    logic [32:0] c_lo;                     // {carry, low half} of base VA + slot size
    logic [32:0] c_mlo, c_smlo;            // ... of base + MTU, base + slot size + MTU
    logic [31:0] c_hi1;                    // upper half of the base + 1
    logic [8:0]  slot_h1;                  // bits 23:16 of the slot size, + 1
    // The four loads of the slot address registers: {hi, hi + 1, lo} each.
    logic [95:0] ld_slot, ld_next, ld_mtu, ld_next_mtu;
    always_ff @(posedge clk) begin
        case (cfg_mtu_sel)
            2'd0:    begin mtu <= 13'd1024; wpp_m1 <= 7'd7;  end
            2'd1:    begin mtu <= 13'd2048; wpp_m1 <= 7'd15; end
            default: begin mtu <= 13'd4096; wpp_m1 <= 7'd31; end
        endcase
        udp_full  <= 14'(mtu) + 14'd32;
        slots_m1  <= cfg_slots - 24'd1;
        slots_m2  <= cfg_slots - 24'd2;
        chunks_m1 <= cfg_chunks - 24'd1;
        chunks_m2 <= cfg_chunks - 24'd2;
        c_lo      <= 33'(cfg_va[31:0]) + 33'(cfg_slot_size);
        c_mlo     <= 33'(cfg_va[31:0]) + 33'(mtu);
        c_smlo    <= c_lo + 33'(mtu);
        c_hi1     <= cfg_va[63:32] + 32'd1;
        slot_h1   <= 9'(cfg_slot_size[23:16]) + 9'd1;
        ld_slot     <= {cfg_va[63:32], c_hi1, cfg_va[31:0]};
        ld_mtu      <= c_mlo[32] ? {c_hi1, c_hi1 + 32'd1, c_mlo[31:0]}
                                 : {cfg_va[63:32], c_hi1, c_mlo[31:0]};
        ld_next     <= c_lo[32] ? {c_hi1, c_hi1 + 32'd1, c_lo[31:0]}
                                : {cfg_va[63:32], c_hi1, c_lo[31:0]};
        ld_next_mtu <= c_smlo[32] ? {c_hi1, c_hi1 + 32'd1, c_smlo[31:0]}
                                  : {cfg_va[63:32], c_hi1, c_smlo[31:0]};
    end
    logic [$clog2(INIT+1)-1:0] init_cnt;
    logic init;
    always_ff @(posedge clk) begin
        if (rst) init_cnt <= '0;
        else if (init) init_cnt <= init_cnt + 1'b1;
    end
    initial init_cnt = '0;
    assign init = rst || init_cnt != ($clog2(INIT+1))'(INIT);

    // A 64-bit register as {upper, upper + 1, lower}: adding x < 2^24 takes the lower sum's
    // carry to choose the upper half, and the upper's increment is kept ready beside it. The
    // lower half is added in 16-bit halves (carry select): its upper 16 bits are added to
    // both x[23:16] and x_h1 = x[23:16] + 1 (a register beside x), and the lower 16 bits'
    // carry picks one, so no carry chain is longer than 17 bits.
    function automatic logic [95:0] add64(input logic [95:0] r, input logic [23:0] x,
                                          input logic [8:0] x_h1);
        logic [16:0] lo, m0, m1;
        logic [15:0] mid;
        logic        co;
        lo  = 17'(r[15:0]) + 17'(x[15:0]);
        m0  = 17'(r[31:16]) + 17'(x[23:16]);
        m1  = 17'(r[31:16]) + 17'(x_h1);
        mid = lo[16] ? m1[15:0] : m0[15:0];
        co  = lo[16] ? m1[16] : m0[16];
        add64 = co ? {r[63:32], r[63:32] + 32'd1, mid, lo[15:0]}
                   : {r[95:64], r[63:32], mid, lo[15:0]};
    endfunction
    function automatic logic [63:0] val64(input logic [95:0] r);
        val64 = {r[95:64], r[31:0]};
    endfunction

    logic             f_valid, f_first, f_last;
    logic [1023:0]    f_data;
    logic [TAG_W-1:0] f_tag;

    // ------------------------------------------------------------------ ring state
    logic [95:0] seq;                      // datagram number
    logic [95:0] va_slot, va_slot_mtu;     // this slot's address, and + MTU
    logic [95:0] va_next, va_next_mtu;     // the next slot's (unless the ring wraps), + MTU
    logic [95:0] va_pkt;                   // the next packet's address inside the slot
    logic [95:0] va_pkt_mtu;               // ... + MTU (packets of a slot are >= 8 words apart)
    logic [23:0] slot, ring, psn;
    logic [31:0] chunk;
    logic [7:0]  drop_cum;
    logic        chunk_drop;
    logic        slot_last, ring_last, slot_zero;  // slot == S-1, ring == R-1, slot == 0

    // The credit check of the current chunk, two registered stages behind it: with flow
    // control on, a chunk's first datagram waits (cr_wait) until the check has seen it.
    logic [31:0] cr_diff;
    logic        cr_ok, cr_wait, cr_cnt;
    always_ff @(posedge clk) begin
        cr_diff <= chunk + ~cfg_credit;                    // chunk - credit - 1
        cr_ok   <= !cfg_flow_ctrl || cr_diff < {8'd0, cfg_chunks};
    end
    // ------------------------------------------------------------------ datagram in progress
    logic        active, skip, in_done, extra;
    logic [6:0]  wl;                       // slot words after the current one
    logic        lw;                       // the next word is the slot's last
    logic [6:0]  pos;                      // words of the current packet after this one
    logic        pe;                       // the next word is its packet's last (by size)
    logic        nsop;                     // the next word starts a packet
    logic [3:0]  pkl;                      // packets of the slot after the current one
    logic        lp;                       // the next packet is the slot's last
    logic [63:0] carry;
    // The slot's geometry, kept from its first word.
    logic [7:0]  g_lbytes;
    logic [12:0] g_llen;
    logic [1:0]  g_pad;
    logic [13:0] g_udp_n, g_udp_i;
    logic [1:0]  pkt_pad;
    logic        pkt_imm;
    logic [LEN_W-1:0] pkt_udp;

    logic [6:0]  t_nout_m1;
    logic        t_one, t_two, t_extra, t_onepkt, t_twopkt;
    logic [7:0]  t_lbytes;
    logic [3:0]  t_npk_m1;
    logic [12:0] t_llen;
    logic [1:0]  t_pad;
    logic [13:0] t_udp_n, t_udp_i;
    assign {t_nout_m1, t_one, t_two, t_extra, t_lbytes, t_npk_m1, t_onepkt, t_twopkt, t_llen,
            t_pad, t_udp_n, t_udp_i} = f_tag;

    assign st_psn   = psn;
    assign st_chunk = chunk;

    // Decisions for a datagram starting now (all from registers).
    logic start_skip;
    assign start_skip = slot_zero ? !cr_ok : chunk_drop;

    logic adv, starting, take_in, emit, dgram_end;
    assign adv      = !w_valid || w_ready;
    assign starting = !active && f_valid && f_first && !(slot_zero && cr_wait);
    always_comb begin
        take_in   = 1'b0;
        emit      = 1'b0;
        dgram_end = 1'b0;
        if (adv) begin
            if (starting) begin
                take_in   = 1'b1;
                emit      = !start_skip;
                dgram_end = f_last && (start_skip || t_one);
            end else if (active && skip) begin
                take_in   = f_valid;
                dgram_end = f_valid && f_last;
            end else if (active && !in_done) begin
                take_in   = f_valid;
                emit      = f_valid;
                dgram_end = f_valid && f_last && !extra;
            end else if (active) begin
                emit      = 1'b1;          // the slot's last word: the datagram's tail
                dgram_end = 1'b1;
            end
        end
    end

    // Input register slice: the datagram words come from registers, and i_ready is a
    // register (a skid register takes the one word that may come after it falls).
    logic             k_valid, k_first, k_last;
    logic [1023:0]    k_data;
    logic [TAG_W-1:0] k_tag;
    always_ff @(posedge clk) begin
        logic acc, f_free;
        acc    = i_valid && i_ready;
        f_free = take_in || !f_valid;
        if (f_free) begin
            if (k_valid) begin
                {f_data, f_first, f_last, f_tag} <= {k_data, k_first, k_last, k_tag};
                f_valid <= 1'b1;
                k_valid <= 1'b0;
            end else begin
                {f_data, f_first, f_last, f_tag} <= {i_data, i_first, i_last, i_tag};
                f_valid <= acc;
            end
        end else if (acc) begin
            {k_data, k_first, k_last, k_tag} <= {i_data, i_first, i_last, i_tag};
            k_valid <= 1'b1;
        end
        i_ready <= !(f_free ? 1'b0 : (k_valid || acc));
        if (rst) begin
            f_valid <= 1'b0;
            k_valid <= 1'b0;
            i_ready <= 1'b0;
        end
    end

    // This word: where it stands in its packet and slot.
    logic        sop, eop, last_pkt, imm, last_word;
    logic [12:0] dma_len;
    logic [1:0]  pad;
    logic [13:0] udp;
    logic [31:0] imm_val;
    logic [63:0] va_hdr;
    logic [255:0] hdr;
    always_comb begin
        logic [8*32-1:0] be;
        sop       = starting || nsop;
        last_word = starting ? t_one : lw;
        eop       = last_word || (!starting && pe);
        last_pkt  = starting ? t_onepkt : lp;
        dma_len   = last_pkt ? (starting ? t_llen : g_llen) : mtu;
        pad       = last_pkt ? (starting ? t_pad : g_pad) : 2'd0;
        imm       = last_pkt && slot_last;
        udp       = !last_pkt ? udp_full
                  : imm ? (starting ? t_udp_i : g_udp_i) : (starting ? t_udp_n : g_udp_n);
        imm_val   = {drop_cum, chunk[23:0]};
        va_hdr    = starting ? val64(va_slot) : val64(va_pkt);
        be = {8'(imm ? 8'h2B : 8'h2A), imm, 1'b0, pad, 4'd0, 16'hFFFF, 8'd0, cfg_qpn,
              8'd0, psn, va_hdr, cfg_rkey, 32'(dma_len), imm_val};
        for (int k = 0; k < 32; k++) hdr[8*k +: 8] = be[8*(31-k) +: 8];
    end

    // The slot is the sequence number followed by the datagram, so each output word is 8
    // bytes carried over plus 120 new ones.
    logic [63:0] seq_v, seq_wire;
    assign seq_v = val64(seq);
    always_comb for (int k = 0; k < 8; k++) seq_wire[8*k +: 8] = seq_v[63 - 8*k -: 8];

    always_ff @(posedge clk) begin
        stat_chunk_done    <= 1'b0;
        stat_chunk_dropped <= 1'b0;
        stat_dgram         <= 1'b0;
        stat_dgram_dropped <= 1'b0;
        if (adv) w_valid <= emit;
        if (emit) begin
            if (take_in) w_data <= {f_data[959:0], starting ? seq_wire : carry};
            else         w_data <= {960'd0, carry};
            w_nbytes <= last_word ? (starting ? t_lbytes : g_lbytes) : 8'd128;
            w_sop    <= sop;
            w_eop    <= eop;
            nsop     <= eop;
            wl       <= starting ? t_nout_m1 : wl - 7'd1;
            lw       <= starting ? t_two : wl == 7'd2;
            pos      <= sop ? wpp_m1 : pos - 7'd1;
            pe       <= sop ? wpp_m1 == 7'd1 : pos == 7'd2;
            if (sop) begin
                w_hdr     <= hdr;
                w_imm     <= imm;
                w_pad     <= pad;
                w_udp_len <= udp;
                pkt_pad   <= pad;
                pkt_imm   <= imm;
                pkt_udp   <= udp;
                pkl       <= starting ? t_npk_m1 : pkl - 4'd1;
                lp        <= starting ? t_twopkt : pkl == 4'd2;
                psn       <= psn + 24'd1;
                va_pkt    <= starting ? va_slot_mtu : va_pkt_mtu;
                stat_chunk_done <= imm;
            end else begin
                w_hdr     <= '0;
                w_imm     <= pkt_imm;
                w_pad     <= pkt_pad;
                w_udp_len <= pkt_udp;
            end
        end
        if (starting) begin
            g_lbytes <= t_lbytes;
            g_llen   <= t_llen;
            g_pad    <= t_pad;
            g_udp_n  <= t_udp_n;
            g_udp_i  <= t_udp_i;
        end
        if (take_in) carry <= f_data[1023:960];
        va_pkt_mtu <= add64(va_pkt, 24'(mtu), 9'd1);      // the MTU is below 2^16
        if (cr_wait) begin
            cr_cnt <= 1'b1;
            if (cr_cnt) cr_wait <= 1'b0;
        end

        if (starting && adv) begin
            active  <= !dgram_end;
            skip    <= start_skip;
            in_done <= f_last;
            extra   <= t_extra;
            if (slot_zero) begin
                chunk_drop <= !cr_ok;
                if (!cr_ok) begin
                    drop_cum <= drop_cum + 8'd1;
                    stat_chunk_dropped <= 1'b1;
                end
            end
        end else if (take_in && f_last) begin
            in_done <= 1'b1;
        end
        if (dgram_end) begin
            active <= 1'b0;
            stat_dgram         <= !(starting ? start_skip : skip);
            stat_dgram_dropped <= starting ? start_skip : skip;
            seq <= add64(seq, 24'd1, 9'd1);
            if (slot_last && ring_last) begin
                va_slot     <= ld_slot;
                va_slot_mtu <= ld_mtu;
                va_next     <= ld_next;
                va_next_mtu <= ld_next_mtu;
            end else begin
                va_slot     <= va_next;
                va_slot_mtu <= va_next_mtu;
                va_next     <= add64(va_next, cfg_slot_size, slot_h1);
                va_next_mtu <= add64(va_next_mtu, cfg_slot_size, slot_h1);
            end
            slot_zero <= slot_last;
            if (slot_last) begin
                slot        <= '0;
                slot_last   <= slots_m1 == 24'd0;
                chunk       <= chunk + 32'd1;
                cr_wait     <= cfg_flow_ctrl;
                cr_cnt      <= 1'b0;
                ring        <= ring_last ? '0 : ring + 24'd1;
                ring_last   <= ring_last ? chunks_m1 == 24'd0 : ring == chunks_m2;
            end else begin
                slot        <= slot + 24'd1;
                slot_last   <= slot == slots_m2;
            end
        end

        if (init) begin
            seq <= {32'd0, 32'd1, 32'd0};
            slot <= '0; ring <= '0; chunk <= '0; psn <= cfg_psn;
            slot_zero <= 1'b1;
            slot_last <= slots_m1 == 24'd0;
            ring_last <= chunks_m1 == 24'd0;
            va_slot <= ld_slot; va_slot_mtu <= ld_mtu;
            va_next <= ld_next; va_next_mtu <= ld_next_mtu;
            drop_cum <= '0; chunk_drop <= 1'b0;
            cr_wait <= cfg_flow_ctrl; cr_cnt <= 1'b0;
            active <= 1'b0; w_valid <= 1'b0;
            stat_chunk_done <= 1'b0; stat_chunk_dropped <= 1'b0;
            stat_dgram <= 1'b0; stat_dgram_dropped <= 1'b0;
        end
    end
    logic unused_ok;
    assign unused_ok = &{1'b0, seq[63:32], va_pkt[63:32], va_slot_mtu[63:32], va_next[63:32],
                         va_next_mtu[63:32], ld_slot[63:32]};
endmodule
