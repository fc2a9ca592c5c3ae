// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rdma_tx — the RDMA mode's user side (user_clk): datagram store-and-forward
// (fhg_rdma_sf), ring framing (fhg_rdma_framer) and buffer placement (fhg_rdma_writer).
// fhg_tx_path uses it instead of fhg_tx_writer while the RDMA mode is selected; the
// buffer, the descriptor queue, the header stage and the packer are shared.
//
// Contract
//   * User port (tx, tx_st) and the TX buffer (to_buf, from_buf) as fhg_tx_writer
//     (docs/design/core.md §1, §2); tx.dest_ip/dest_port are not used (the ring's
//     destination is cfg's).
//   * cfg: the ring configuration in user_clk, quasi-static, one vector (RCFG_W bits, MSB
//     first): {flow_ctrl, mtu_sel[1:0], qpn[23:0], start_psn[23:0], rkey[31:0], va[63:0],
//     slot_size[23:0], slots_per_chunk[23:0], chunks[23:0], credit[31:0], dst_ip[31:0]}.
//     The ring state is loaded at rst (docs/design/core.md §6).
//   * st: {psn[23:0], chunk[31:0]} (status); stat_*: one-cycle counts.
//   * Throughput: one user word per cycle in; out, one buffer word per cycle plus one cycle
//     per datagram whose slot needs a word more than the datagram. Back-pressure from the
//     buffer stalls the framer; the store-and-forward FIFO absorbs it, and tx_afull stops
//     the user before it fills.
module fhg_rdma_tx #(
    parameter int BUF_WORDS   = 512,
    parameter int DESC_SLOTS  = 512,
    parameter int MAX_PAYLOAD = 8972,
    localparam int SF_WORDS = 1 << $clog2(2 * ((MAX_PAYLOAD + 127) / 128) + 16),
    localparam int LEN_W  = fhg_tx_buf_pkg::LEN_W,
    localparam int RCFG_W = 1 + 2 + 24 + 24 + 32 + 64 + 24 + 24 + 24 + 32 + 32
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 accept,
    input  wire  [RCFG_W-1:0]   cfg,

    input  fhg_bus_pkg::tx_user_t    tx,
    output fhg_bus_pkg::tx_user_st_t tx_st,

    output fhg_tx_buf_pkg::buf_wr_t to_buf,
    input  fhg_tx_buf_pkg::buf_rd_t from_buf,

    output logic [55:0]         st,
    output logic                stat_oversize,
    output logic                stat_chunk_done,
    output logic                stat_chunk_dropped,
    output logic                stat_dgram,
    output logic                stat_dgram_dropped
);
    logic        c_flow;
    logic [1:0]  c_mtu;
    logic [23:0] c_qpn, c_psn, c_slot_size, c_slots, c_chunks;
    logic [31:0] c_rkey, c_credit, c_dst_ip;
    logic [63:0] c_va;
    assign {c_flow, c_mtu, c_qpn, c_psn, c_rkey, c_va, c_slot_size, c_slots, c_chunks,
            c_credit, c_dst_ip} = cfg;

    // Largest datagram a slot takes: the slot minus its 8-byte header (0 if none fits).
    logic [LEN_W-1:0] max_len;
    always_ff @(posedge clk)
        max_len <= (c_slot_size < 24'd8) ? '0
                 : (c_slot_size - 24'd8 > 24'(MAX_PAYLOAD)) ? LEN_W'(MAX_PAYLOAD)
                 : LEN_W'(c_slot_size - 24'd8);

    logic          sf_valid, sf_ready, sf_first, sf_last;
    logic [1023:0] sf_data;
    logic [66:0]   sf_tag;
    fhg_rdma_sf #(.DEPTH(SF_WORDS), .MAX_PAYLOAD(MAX_PAYLOAD)) u_sf (
        .clk(clk), .rst(rst), .accept(accept), .cfg_max_len(max_len), .cfg_mtu_sel(c_mtu),
        .tx(tx), .tx_st(tx_st),
        .o_valid(sf_valid), .o_ready(sf_ready), .o_data(sf_data), .o_first(sf_first),
        .o_last(sf_last), .o_tag(sf_tag), .stat_oversize(stat_oversize)
    );

    logic          w_valid, w_ready, w_sop, w_eop, w_imm;
    logic [1023:0] w_data;
    logic [7:0]    w_nbytes;
    logic [255:0]  w_hdr;
    logic [1:0]    w_pad;
    logic [LEN_W-1:0] w_udp_len;
    logic [23:0]   st_psn;
    logic [31:0]   st_chunk;
    fhg_rdma_framer u_framer (
        .clk(clk), .rst(rst),
        .cfg_mtu_sel(c_mtu), .cfg_qpn(c_qpn), .cfg_psn(c_psn), .cfg_rkey(c_rkey),
        .cfg_va(c_va), .cfg_slot_size(c_slot_size), .cfg_slots(c_slots),
        .cfg_chunks(c_chunks), .cfg_flow_ctrl(c_flow), .cfg_credit(c_credit),
        .i_valid(sf_valid), .i_ready(sf_ready), .i_data(sf_data), .i_first(sf_first),
        .i_last(sf_last), .i_tag(sf_tag),
        .w_valid(w_valid), .w_ready(w_ready), .w_data(w_data), .w_nbytes(w_nbytes),
        .w_sop(w_sop), .w_eop(w_eop), .w_hdr(w_hdr), .w_imm(w_imm), .w_pad(w_pad),
        .w_udp_len(w_udp_len),
        .st_psn(st_psn), .st_chunk(st_chunk),
        .stat_chunk_done(stat_chunk_done), .stat_chunk_dropped(stat_chunk_dropped),
        .stat_dgram(stat_dgram), .stat_dgram_dropped(stat_dgram_dropped)
    );
    assign st = {st_psn, st_chunk};

    fhg_rdma_writer #(
        .BUF_WORDS(BUF_WORDS), .DESC_SLOTS(DESC_SLOTS), .MAX_PAYLOAD(MAX_PAYLOAD)
    ) u_writer (
        .clk(clk), .rst(rst), .cfg_dst_ip(c_dst_ip),
        .w_valid(w_valid), .w_ready(w_ready), .w_data(w_data), .w_nbytes(w_nbytes),
        .w_sop(w_sop), .w_eop(w_eop), .w_hdr(w_hdr), .w_imm(w_imm), .w_pad(w_pad),
        .w_udp_len(w_udp_len),
        .to_buf(to_buf), .from_buf(from_buf)
    );
endmodule
