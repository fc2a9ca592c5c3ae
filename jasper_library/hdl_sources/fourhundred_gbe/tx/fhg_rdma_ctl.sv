// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rdma_ctl — the RDMA mode's registers across the core's clock domains: configuration
// out to the user and MAC clocks, status and counts back into the register clock, network
// credits into the credit register.
//
// Contract
//   * AXI side (axil_clk): the rdma_* register values in; `restart` pulses when rdma_ctrl.en
//     changes (the core resets the transmit path with it, which also selects the mode);
//     credit_we/credit_next write rdma_credit when a credit datagram moves it forward
//     ((new - current) mod 2^32 in 1 .. 2^31 - 1; stale or repeated credits are ignored)
//     and names a chunk the framer has finished ((new - st_chunk) mod 2^32 >= 2^31, i.e. at
//     most st_chunk - 1). A credit beyond that is refused and counted: the consumer cannot
//     have released a chunk it has not been sent, and the window a credit opens (chunk c
//     may be written when c - credit - 1 < R) then reaches at most one ring past the last
//     chunk written, whatever a spoofed or corrupted datagram says.
//     st_psn/st_chunk are the framer's status; cnt_v/cnt_d are exact counter deltas
//     (fhg_cdc_delta) in the order {credit_rejected, icrc_frames, credit_frames, oversize,
//     chunks_sent, chunks_dropped, datagrams, datagrams_dropped} (bit 7 .. 0, cnt_d 16 bits
//     each).
//   * user_clk: u_en and u_cfg (fhg_rdma_tx's cfg vector) as consistent snapshots
//     (fhg_cfg_sync); u_st and u_stat from fhg_rdma_tx.
//   * tx_mac_clk: m_en (synchronised rdma_ctrl.en); m_icrc frames given an ICRC per cycle.
//   * rx_mac_clk: r_src_ip/r_port for fhg_rx_rdma_credit, and its credits back.
//   * CDC only through fhg_cfg_sync, fhg_sync_bits, fhg_cdc_delta and fhg_async_fifo.
module fhg_rdma_ctl #(
    localparam int RCFG_W = 1 + 2 + 24 + 24 + 32 + 64 + 24 + 24 + 24 + 32 + 32
) (
    input  wire                 axil_clk,
    input  wire                 axil_rst,
    input  wire                 a_en,
    input  wire                 a_flow_ctrl,
    input  wire  [1:0]          a_mtu,
    input  wire  [23:0]         a_qpn,
    input  wire  [23:0]         a_psn,
    input  wire  [31:0]         a_rkey,
    input  wire  [63:0]         a_va,
    input  wire  [23:0]         a_slot_size,
    input  wire  [23:0]         a_slots,
    input  wire  [23:0]         a_chunks,
    input  wire  [31:0]         a_dst_ip,
    input  wire  [31:0]         a_credit,
    input  wire  [15:0]         a_credit_port,
    output logic                restart,
    output logic                credit_we,
    output logic [31:0]         credit_next,
    output logic [23:0]         st_psn,
    output logic [31:0]         st_chunk,
    output logic [7:0]          cnt_v,
    output logic [16*8-1:0]     cnt_d,

    input  wire                 user_clk,
    output logic                u_en,
    output logic [RCFG_W-1:0]   u_cfg,
    input  wire  [55:0]         u_st,
    input  wire  [4:0]          u_stat,          // {oversize, chunk_done, chunk_dropped,
                                                 //  dgram, dgram_dropped}

    input  wire                 tx_mac_clk,
    input  wire                 tx_mac_rst,
    output logic                m_en,
    input  wire  [1:0]          m_icrc,

    input  wire                 rx_mac_clk,
    input  wire                 rx_mac_rst,
    output logic [31:0]         r_src_ip,
    output logic [15:0]         r_port,
    input  wire                 r_credit_valid,
    input  wire  [31:0]         r_credit_value,
    input  wire  [1:0]          r_credit_count
);
    // ------------------------------------------------------------------ configuration
    logic en_q;
    always_ff @(posedge axil_clk) begin
        en_q    <= a_en;
        restart <= a_en != en_q;
        if (axil_rst) begin
            en_q    <= 1'b0;
            restart <= 1'b0;
        end
    end

    fhg_cfg_sync #(.WIDTH(RCFG_W)) u_cfg_user (
        .src_clk(axil_clk), .src_rst(axil_rst),
        .src_data({a_flow_ctrl, a_mtu, a_qpn, a_psn, a_rkey, a_va, a_slot_size, a_slots,
                   a_chunks, a_credit, a_dst_ip}),
        .dst_clk(user_clk), .dst_rst(1'b0), .dst_data(u_cfg), .dst_update(), .dst_valid()
    );
    fhg_sync_bits #(.WIDTH(1)) u_en_user (.clk(user_clk), .rst(1'b0), .d(a_en), .q(u_en));
    fhg_sync_bits #(.WIDTH(1)) u_en_mac (.clk(tx_mac_clk), .rst(1'b0), .d(a_en), .q(m_en));
    fhg_cfg_sync #(.WIDTH(48)) u_cfg_rx (
        .src_clk(axil_clk), .src_rst(axil_rst), .src_data({a_dst_ip, a_credit_port}),
        .dst_clk(rx_mac_clk), .dst_rst(rx_mac_rst), .dst_data({r_src_ip, r_port}),
        .dst_update(), .dst_valid()
    );

    // ------------------------------------------------------------------ status
    fhg_cfg_sync #(.WIDTH(56)) u_st_sync (
        .src_clk(user_clk), .src_rst(1'b0), .src_data(u_st),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_data({st_psn, st_chunk}),
        .dst_update(), .dst_valid()
    );

    // ------------------------------------------------------------------ network credits
    logic        cq_valid, cq_full;
    logic [31:0] cq_data;
    fhg_async_fifo #(.WIDTH(32), .DEPTH(4)) u_credit_cdc (
        .wr_clk(rx_mac_clk), .wr_rst(rx_mac_rst), .wr_en(r_credit_valid && !cq_full),
        .wr_data(r_credit_value), .full(cq_full), .wr_count(),
        .rd_clk(axil_clk), .rd_rst(axil_rst), .rd_valid(cq_valid), .rd_data(cq_data),
        .rd_ready(cq_valid), .rd_count()
    );
    // Compared with the value about to be written too, so two credits in a row keep order.
    // `past` is negative (mod 2^32) exactly when the credit is at most the last chunk the
    // framer finished; st_chunk lags the framer by a snapshot crossing, far less than the
    // round trip a chunk's packets and the consumer's credit take.
    logic [31:0] ahead, past;
    logic        refused;
    assign ahead = cq_data - (credit_we ? credit_next : a_credit);
    assign past  = cq_data - st_chunk;
    always_ff @(posedge axil_clk) begin
        credit_we   <= cq_valid && ahead != 32'd0 && !ahead[31] && past[31];
        credit_next <= cq_data;
        refused     <= cq_valid && !past[31];
        if (axil_rst) begin
            credit_we <= 1'b0;
            refused   <= 1'b0;
        end
    end
    assign cnt_v[7]          = refused;
    assign cnt_d[16*7 +: 16] = 16'd1;

    // ------------------------------------------------------------------ counts
    fhg_cdc_delta #(.INCR_W(2)) u_icrc (
        .src_clk(tx_mac_clk), .src_rst(tx_mac_rst), .src_incr(m_icrc),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(cnt_v[6]), .dst_delta(cnt_d[16*6 +: 16]));
    fhg_cdc_delta #(.INCR_W(2)) u_credits (
        .src_clk(rx_mac_clk), .src_rst(rx_mac_rst), .src_incr(r_credit_count),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(cnt_v[5]), .dst_delta(cnt_d[16*5 +: 16]));
    for (genvar k = 0; k < 5; k++) begin : g_user
        fhg_cdc_delta #(.INCR_W(1)) u_cnt (
            .src_clk(user_clk), .src_rst(1'b0), .src_incr(u_stat[k]),
            .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_valid(cnt_v[k]),
            .dst_delta(cnt_d[16*k +: 16]));
    end
endmodule
