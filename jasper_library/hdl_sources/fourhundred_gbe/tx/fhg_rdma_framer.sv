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
//     one word more than the datagram takes one extra cycle. Latency: 1 cycle.
module fhg_rdma_framer #(
    localparam int LEN_W = 14
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
    input  wire  [LEN_W-1:0]    i_len,

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
    // ------------------------------------------------------------------ ring state
    logic [63:0] seq, va_slot, va_pkt;
    logic [63:0] va_slot_next;            // va_slot + slot size, kept ready

    // Configuration derived once (it is quasi-static), off the per-datagram paths.
    logic [23:0] slots_m1, chunks_m1;
    logic [63:0] va_plus;                 // the base VA + slot size
    always_ff @(posedge clk) begin
        slots_m1  <= cfg_slots - 24'd1;
        chunks_m1 <= cfg_chunks - 24'd1;
        va_plus   <= cfg_va + 64'(cfg_slot_size);
    end
    logic slot_last, ring_last;
    assign slot_last = slot == slots_m1;
    assign ring_last = ring == chunks_m1;
    logic [23:0] slot, ring, psn;
    logic [31:0] chunk;
    logic [7:0]  drop_cum;
    logic        chunk_drop;

    // Datagram in progress.
    logic           active, skip, in_done, extra;
    logic [6:0]     j, n_out;
    logic [LEN_W:0] left;                 // slot bytes from word j on
    logic [63:0]    carry;
    logic [1:0]     pkt_pad;
    logic           pkt_imm;
    logic [LEN_W-1:0] pkt_udp;

    logic [12:0] mtu;
    logic [6:0]  wpp;                     // words per packet
    always_comb begin
        case (cfg_mtu_sel)
            2'd0:    begin mtu = 13'd1024; wpp = 7'd8;  end
            2'd1:    begin mtu = 13'd2048; wpp = 7'd16; end
            default: begin mtu = 13'd4096; wpp = 7'd32; end
        endcase
    end

    assign st_psn   = psn;
    assign st_chunk = chunk;

    // Decisions for a datagram starting now.
    logic        first_of_chunk, writable, start_skip;
    logic [LEN_W:0] total0;
    logic [6:0]  n_out0, n_in0;
    assign first_of_chunk = slot == '0;
    assign writable   = !cfg_flow_ctrl || ((chunk - cfg_credit - 32'd1) < {8'd0, cfg_chunks});
    assign start_skip = first_of_chunk ? !writable : chunk_drop;
    assign total0 = (LEN_W+1)'(i_len) + (LEN_W+1)'(8);
    assign n_out0 = 7'((total0 + (LEN_W+1)'(127)) >> 7);
    assign n_in0  = (i_len == '0) ? 7'd1 : 7'((i_len + LEN_W'(127)) >> 7);

    logic adv, starting, take_in, emit, dgram_end;
    logic [6:0]  jj;                      // word index of this cycle
    logic [LEN_W:0] lf;                   // slot bytes from this word on
    assign adv      = !w_valid || w_ready;
    assign starting = !active && i_valid && i_first;
    assign jj = starting ? 7'd0 : j;
    assign lf = starting ? total0 : left;
    always_comb begin
        take_in   = 1'b0;
        emit      = 1'b0;
        dgram_end = 1'b0;
        if (adv) begin
            if (starting) begin
                take_in   = 1'b1;
                emit      = !start_skip;
                dgram_end = i_last && (start_skip || n_out0 == 7'd1);
            end else if (active && skip) begin
                take_in   = i_valid;
                dgram_end = i_valid && i_last;
            end else if (active && !in_done) begin
                take_in   = i_valid;
                emit      = i_valid;
                dgram_end = i_valid && i_last && !extra;
            end else if (active) begin
                emit      = 1'b1;          // the slot's last word: the datagram's tail
                dgram_end = 1'b1;
            end
        end
    end
    assign i_ready = take_in;

    // The packet starting at this word.
    logic        sop, eop, last_pkt, imm;
    logic [12:0] dma_len;
    logic [1:0]  pad;
    logic [31:0] imm_val;
    logic [255:0] hdr;
    always_comb begin
        logic [8*32-1:0] be;
        sop      = (jj & (wpp - 7'd1)) == 7'd0;
        eop      = lf <= (LEN_W+1)'(128) || ((jj + 7'd1) & (wpp - 7'd1)) == 7'd0;
        last_pkt = lf <= (LEN_W+1)'(mtu);
        dma_len  = last_pkt ? 13'(lf) : mtu;
        pad      = 2'(-dma_len);
        imm      = last_pkt && slot_last;
        imm_val  = {drop_cum, chunk[23:0]};
        be = {8'(imm ? 8'h2B : 8'h2A), imm, 1'b0, pad, 4'd0, 16'hFFFF, 8'd0, cfg_qpn,
              8'd0, psn, starting ? va_slot : va_pkt, cfg_rkey, 32'(dma_len), imm_val};
        for (int k = 0; k < 32; k++) hdr[8*k +: 8] = be[8*(31-k) +: 8];
    end

    // This cycle's word: the slot is the sequence number followed by the datagram, so each
    // output word is 8 bytes carried over plus 120 new ones.
    logic [63:0]   seq_wire;
    always_comb for (int k = 0; k < 8; k++) seq_wire[8*k +: 8] = seq[8*(7-k) +: 8];

    always_ff @(posedge clk) begin
        stat_chunk_done    <= 1'b0;
        stat_chunk_dropped <= 1'b0;
        stat_dgram         <= 1'b0;
        stat_dgram_dropped <= 1'b0;
        if (adv) w_valid <= emit;
        if (emit) begin
            if (take_in) w_data <= {i_data[959:0], starting ? seq_wire : carry};
            else         w_data <= {960'd0, carry};
            w_nbytes <= (lf >= (LEN_W+1)'(128)) ? 8'd128 : 8'(lf);
            w_sop    <= sop;
            w_eop    <= eop;
            if (sop) begin
                w_hdr     <= hdr;
                w_imm     <= imm;
                w_pad     <= pad;
                w_udp_len <= LEN_W'(imm ? 32 : 28) + LEN_W'(dma_len) + LEN_W'(pad) + LEN_W'(4);
                pkt_pad   <= pad;
                pkt_imm   <= imm;
                pkt_udp   <= LEN_W'(imm ? 32 : 28) + LEN_W'(dma_len) + LEN_W'(pad) + LEN_W'(4);
                psn       <= psn + 24'd1;
                va_pkt    <= (starting ? va_slot : va_pkt) + 64'(mtu);
                stat_chunk_done <= imm;
            end else begin
                w_hdr     <= '0;
                w_imm     <= pkt_imm;
                w_pad     <= pkt_pad;
                w_udp_len <= pkt_udp;
            end
            j    <= jj + 7'd1;
            left <= lf - (LEN_W+1)'(128);
        end
        if (take_in) carry <= i_data[1023:960];

        if (starting && adv) begin
            active  <= !dgram_end;
            skip    <= start_skip;
            in_done <= i_last;
            extra   <= n_out0 > n_in0;
            n_out   <= n_out0;
            if (first_of_chunk) begin
                chunk_drop <= !writable;
                if (!writable) begin
                    drop_cum <= drop_cum + 8'd1;
                    stat_chunk_dropped <= 1'b1;
                end
            end
        end else if (take_in && i_last) begin
            in_done <= 1'b1;
        end
        if (dgram_end) begin
            active <= 1'b0;
            stat_dgram         <= !(starting ? start_skip : skip);
            stat_dgram_dropped <= starting ? start_skip : skip;
            seq <= seq + 64'd1;
            if (slot_last && ring_last) begin
                va_slot      <= cfg_va;
                va_slot_next <= va_plus;
            end else begin
                va_slot      <= va_slot_next;
                va_slot_next <= va_slot_next + 64'(cfg_slot_size);
            end
            if (slot_last) begin
                slot  <= '0;
                chunk <= chunk + 32'd1;
                ring  <= ring_last ? '0 : ring + 24'd1;
            end else begin
                slot  <= slot + 24'd1;
            end
        end

        if (rst) begin
            seq <= '0; slot <= '0; ring <= '0; chunk <= '0; psn <= cfg_psn;
            va_slot <= cfg_va; va_slot_next <= cfg_va + 64'(cfg_slot_size);
            drop_cum <= '0; chunk_drop <= 1'b0;
            active <= 1'b0; w_valid <= 1'b0;
            stat_chunk_done <= 1'b0; stat_chunk_dropped <= 1'b0;
            stat_dgram <= 1'b0; stat_dgram_dropped <= 1'b0;
        end
    end
    logic unused_ok;
    assign unused_ok = &{1'b0, n_out};
endmodule
