// SPDX-License-Identifier: GPL-3.0-or-later
// Test top for fhg_rdma_tx, the RDMA mode's transmit chain (store-and-forward, framer,
// writer): the user port and the ring configuration as plain ports, the TX buffer's write
// ports, pointers and descriptors as fhg_tx_path's buffer and queue see them. Not for
// synthesis.
module fhg_rdma_tx_tb #(
    parameter int BUF_WORDS   = 128,
    parameter int DESC_SLOTS  = 32,
    parameter int MAX_PAYLOAD = 8972,
    localparam int AW     = $clog2(BUF_WORDS),
    localparam int WP     = AW + 1,
    localparam int SP     = AW + 4,
    localparam int DESC_W = SP + fhg_tx_buf_pkg::DESC_TAIL_W
) (
    input  wire                 user_clk,
    input  wire                 rst,
    input  wire                 accept,

    input  wire  [1023:0]       tx_data,
    input  wire                 tx_valid,
    input  wire  [127:0]        tx_byte_enable,
    input  wire  [31:0]         tx_dest_ip,
    input  wire  [15:0]         tx_dest_port,
    input  wire                 tx_end_of_frame,
    output wire                 tx_afull,
    output wire                 tx_overflow,

    input  wire                 cfg_flow_ctrl,
    input  wire  [1:0]          cfg_mtu,
    input  wire  [23:0]         cfg_qpn,
    input  wire  [23:0]         cfg_psn,
    input  wire  [31:0]         cfg_rkey,
    input  wire  [63:0]         cfg_va,
    input  wire  [23:0]         cfg_slot_size,
    input  wire  [23:0]         cfg_slots,
    input  wire  [23:0]         cfg_chunks,
    input  wire  [31:0]         cfg_credit,
    input  wire  [31:0]         cfg_dst_ip,

    output wire                 wr0_en,
    output wire  [AW-2:0]       wr0_addr,
    output wire  [1023:0]       wr0_data,
    output wire                 wr1_en,
    output wire  [AW-2:0]       wr1_addr,
    output wire  [1023:0]       wr1_data,
    input  wire  [WP-1:0]       rd_word,
    output wire  [WP-1:0]       final_word,
    output wire                 desc_valid,
    output wire  [DESC_W-1:0]   desc_data,
    input  wire  [$clog2(DESC_SLOTS):0] desc_used,

    output wire  [23:0]         st_psn,
    output wire  [31:0]         st_chunk,
    output wire                 stat_oversize,
    output wire                 stat_chunk_done,
    output wire                 stat_chunk_dropped,
    output wire                 stat_dgram,
    output wire                 stat_dgram_dropped
);
    fhg_bus_pkg::tx_user_st_t tx_st;
    assign tx_afull    = tx_st.afull;
    assign tx_overflow = tx_st.overflow;
    fhg_tx_buf_pkg::buf_wr_t to_buf;
    fhg_tx_buf_pkg::buf_rd_t from_buf;
    assign {wr0_en, wr0_addr, wr0_data} = {to_buf.wr.en0, to_buf.wr.addr0[AW-2:0], to_buf.wr.data0};
    assign {wr1_en, wr1_addr, wr1_data} = {to_buf.wr.en1, to_buf.wr.addr1[AW-2:0], to_buf.wr.data1};
    assign final_word = to_buf.final_word[WP-1:0];
    assign desc_valid = to_buf.desc_valid;
    assign desc_data  = {to_buf.desc_seg[SP-1:0], to_buf.desc_tail};
    always_comb begin
        from_buf           = '0;
        from_buf.rd_word   = rd_word;
        from_buf.desc_used = desc_used;
    end
    fhg_rdma_tx #(
        .BUF_WORDS(BUF_WORDS), .DESC_SLOTS(DESC_SLOTS), .MAX_PAYLOAD(MAX_PAYLOAD)
    ) u_dut (
        .clk(user_clk), .rst(rst), .accept(accept),
        .cfg({cfg_flow_ctrl, cfg_mtu, cfg_qpn, cfg_psn, cfg_rkey, cfg_va, cfg_slot_size,
              cfg_slots, cfg_chunks, cfg_credit, cfg_dst_ip}),
        .tx({tx_data, tx_valid, tx_byte_enable, tx_dest_ip, tx_dest_port, tx_end_of_frame}),
        .tx_st(tx_st),
        .to_buf(to_buf), .from_buf(from_buf),
        .st({st_psn, st_chunk}), .stat_oversize(stat_oversize),
        .stat_chunk_done(stat_chunk_done), .stat_chunk_dropped(stat_chunk_dropped),
        .stat_dgram(stat_dgram), .stat_dgram_dropped(stat_dgram_dropped)
    );
endmodule
