// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_path — the UDP/IPv4 transmit path from the user port (user_clk) to the DCMAC
// segmented TX client bus (mac_clk).
//
//   user port ─► fhg_tx_writer ─► two-bank buffer (fhg_ram_sdp x2, user_clk → mac_clk)
//                     │ descriptors (fhg_async_fifo)
//                     ▼
//               fhg_tx_header (next hop via the ARP table, IPv4/UDP checksums)
//                     ▼
//               fhg_tx_packer ─► 8 x 128-bit segments, tready/taf
//                     ▲
//               fhg_tx_ctl_arb ◄─ hardware ARP replies, CPU TX buffer frames
//
// Contract
//   * Store and forward: a frame reaches the MAC only after it has been written whole;
//     frames leave whole or not at all (overflow and ARP misses drop whole frames and are
//     counted through the stat_* outputs).
//   * Configuration inputs (cfg, cfg_rdma_en) must already be in mac_clk; `accept` (fabric enable)
//     in user_clk.
//   * Reset (user_rst or soft_rst_user, both user_clk, synchronous): the user side stops
//     accepting at once (tx_afull high, words that still arrive are dropped and counted),
//     waits for its pipeline to empty, then asks the MAC side to drain. The MAC side
//     finishes the frame it is sending (no partial frame ever reaches the MAC), discards
//     every queued descriptor and returns to buffer position 0; then the user side
//     restarts at position 0 too. tx_overflow clears with the reset.
//   * Throughput: one 1024-bit user word per user_clk cycle in, up to 8 segments per
//     mac_clk cycle out.
module fhg_tx_path #(
    parameter int BUF_WORDS   = 512,
    parameter int MAX_PAYLOAD = 8972,
    parameter int DESC_DEPTH  = 512,
    parameter int RD_LATENCY  = 2,
    parameter bit USE_TAF     = 1'b0,
    parameter     BUF_RAM_STYLE = "block",
    localparam int AW     = $clog2(BUF_WORDS),
    localparam int WP     = AW + 1,
    localparam int SP     = AW + 4,
    localparam int LEN_W  = 14,
    localparam int RCFG_W = 1 + 2 + 24 + 24 + 32 + 64 + 24 + 24 + 24 + 32 + 32
) (
    // ---------------------------------------------------------------- user_clk
    input  wire                 user_clk,
    input  wire                 user_rst,
    input  wire                 soft_rst_user,   // one-cycle request, already in user_clk
    input  wire                 accept,
    input  fhg_bus_pkg::tx_user_t    tx,      // the user port (docs/design/core.md §1)
    output fhg_bus_pkg::tx_user_st_t tx_st,   // tx_afull, tx_overflow, user-side statistics
    // RDMA mode (fhg_rdma_tx): selected at the user side's reset, from rdma_en.
    input  wire                 rdma_en,
    input  wire  [RCFG_W-1:0]   rdma_cfg,
    output logic [55:0]         rdma_st,
    output logic [4:0]          rdma_stat,       // {oversize, chunk_done, chunk_dropped,
                                                 //  dgram, dgram_dropped}

    // ---------------------------------------------------------------- mac_clk
    input  wire                 mac_clk,
    input  wire                 mac_rst,
    input  fhg_bus_pkg::tx_cfg_t cfg,
    input  wire                 cfg_rdma_en,     // RDMA mode: UDP checksum 0
    output logic [7:0]          arp_addr,
    input  wire  [63:0]         arp_entry,
    output logic [15:0]         next_ip_id,

    // Control frames (mac_clk): ARP replies (one word) and CPU frames (fhg_tx_cpu).
    input  wire                 arp_valid,
    input  wire  [511:0]        arp_frame,
    output logic                arp_ready,
    input  wire                 cpu_valid,
    input  wire  [9:0]          cpu_nseg,
    input  wire  [3:0]          cpu_mty,
    input  wire  [1023:0]       cpu_word,
    input  wire                 cpu_word_valid,
    output logic                cpu_pop,
    output logic                cpu_done,

    output logic                tx_tvalid,
    input  wire                 tx_tready,
    input  wire                 tx_taf,
    output fhg_bus_pkg::seg_bus_t tx_seg,

    output logic [1:0]          stat_frames,
    output logic [LEN_W+1:0]    stat_bytes,
    output logic [LEN_W+1:0]    stat_payload,
    output logic                stat_arp_miss,
    output logic                stat_underrun,
    output logic                stat_arp_sent,
    output logic                stat_cpu_sent,
    output logic                stat_ctl_frame,     // a control frame left (on the bus)
    output logic [LEN_W+1:0]    stat_ctl_bytes
);
    localparam int DESC_W = SP + fhg_tx_buf_pkg::DESC_TAIL_W;
    localparam int HQ_W   = SP + 10 + 4 + LEN_W + 1 + 336;
    localparam int SETTLE = 32;      // user cycles for pointer synchronisers to settle

    // ================================================================ reset sequencing
    typedef enum logic [2:0] {U_RUN, U_QUIESCE, U_WAIT_MAC, U_RESET, U_SETTLE} ustate_t;
    ustate_t ust;
    logic [5:0] ucnt;
    logic       drain_req_u, drain_done_m, drain_done_u, drain_req_m;
    logic       w_rst, w_accept;

    always_ff @(posedge user_clk) begin
        drain_req_u <= 1'b0;
        case (ust)
            U_RUN: if (user_rst || soft_rst_user) begin
                ust  <= U_QUIESCE;
                ucnt <= '0;
            end
            U_QUIESCE: begin
                ucnt <= ucnt + 6'd1;
                if (ucnt == 6'd15) begin      // writer pipeline and descriptor push done
                    drain_req_u <= 1'b1;
                    ust <= U_WAIT_MAC;
                end
            end
            U_WAIT_MAC: if (drain_done_u) ust <= U_RESET;
            U_RESET: begin
                ust  <= U_SETTLE;
                ucnt <= '0;
            end
            default: begin               // U_SETTLE
                ucnt <= ucnt + 6'd1;
                if (ucnt == 6'(SETTLE - 1) && !user_rst) ust <= U_RUN;
            end
        endcase
    end
    // Power-up runs the same sequence, so the user side accepts data only once the MAC
    // clock runs and both sides start from position 0 (tx_afull stays high until then).
    initial ust = U_QUIESCE;
    initial ucnt = '0;

    assign w_rst    = (ust == U_RESET);
    assign w_accept = accept && (ust == U_RUN) && !user_rst && !soft_rst_user;

    fhg_pulse_sync u_drain_req (
        .clk_a(user_clk), .rst_a(1'b0), .pulse_a(drain_req_u), .busy_a(),
        .clk_b(mac_clk),  .rst_b(mac_rst), .pulse_b(drain_req_m)
    );
    fhg_pulse_sync u_drain_done (
        .clk_a(mac_clk),  .rst_a(mac_rst), .pulse_a(drain_done_m), .busy_a(),
        .clk_b(user_clk), .rst_b(1'b0),   .pulse_b(drain_done_u)
    );

    // MAC side: finish the current frame, discard queued descriptors, rewind.
    typedef enum logic [1:0] {M_RUN, M_FINISH, M_FLUSH} mstate_t;
    mstate_t mst;
    logic [3:0] mcnt;
    logic desc_rd_valid, m_flush_rst;
    always_ff @(posedge mac_clk) begin
        drain_done_m <= 1'b0;
        case (mst)
            M_RUN: if (drain_req_m) mst <= M_FINISH;
            M_FINISH: if (packer_between_frames) begin
                mst  <= M_FLUSH;
                mcnt <= '0;
            end
            default: begin               // M_FLUSH: pop the descriptor FIFO until empty
                mcnt <= desc_rd_valid ? 4'd0 : mcnt + 4'd1;
                if (mcnt == 4'd15) begin
                    drain_done_m <= 1'b1;
                    mst <= M_RUN;
                end
            end
        endcase
        if (mac_rst) mst <= M_RUN;
    end
    assign m_flush_rst = mac_rst || (mst == M_FLUSH);

    // ================================================================ user side
    logic [WP-1:0] rd_word_u, final_word_u, final_word_m, rd_word_m;
    logic          wr0_en, wr1_en;
    logic [AW-2:0] wr0_addr, wr1_addr;
    logic [1023:0] wr0_data, wr1_data;
    logic          desc_push;
    logic [DESC_W-1:0] desc_wdata, desc_rdata;
    logic [$clog2(DESC_DEPTH):0] desc_wcount;
    logic          desc_full, desc_pop;
    fhg_tx_buf_pkg::buf_wr_t u_to, r_to, to_buf;   // the writers' side of the buffer
    fhg_tx_buf_pkg::buf_rd_t from_buf;
    always_comb begin
        from_buf           = '0;
        from_buf.rd_word   = rd_word_u;
        from_buf.desc_used = desc_wcount;
    end

    // The UDP writer or, in the RDMA mode, fhg_rdma_tx fills the buffer; the mode is chosen
    // when the user side resets (the core resets it whenever rdma_en changes).
    logic          rdma_sel;
    always_ff @(posedge user_clk) if (w_rst) rdma_sel <= rdma_en;
    initial rdma_sel = 1'b0;

    // Each mode sees the words only while it is the one selected.
    fhg_bus_pkg::tx_user_t    tx_u, tx_r;
    fhg_bus_pkg::tx_user_st_t u_st, r_st;
    always_comb begin
        tx_u = tx;
        tx_u.valid = tx.valid && !rdma_sel;
        tx_r = tx;
        tx_r.valid = tx.valid && rdma_sel;
    end

    fhg_tx_writer #(
        .BUF_WORDS(BUF_WORDS), .MAX_PAYLOAD(MAX_PAYLOAD), .DESC_SLOTS(DESC_DEPTH)
    ) u_writer (
        .clk(user_clk), .rst(w_rst), .accept(w_accept), .tx(tx_u), .tx_st(u_st),
        .to_buf(u_to), .from_buf(from_buf)
    );

    fhg_rdma_tx #(
        .BUF_WORDS(BUF_WORDS), .DESC_SLOTS(DESC_DEPTH), .MAX_PAYLOAD(MAX_PAYLOAD)
    ) u_rdma (
        .clk(user_clk), .rst(w_rst), .accept(w_accept), .cfg(rdma_cfg),
        .tx(tx_r), .tx_st(r_st), .to_buf(r_to), .from_buf(from_buf),
        .st(rdma_st), .stat_oversize(rdma_stat[4]), .stat_chunk_done(rdma_stat[3]),
        .stat_chunk_dropped(rdma_stat[2]), .stat_dgram(rdma_stat[1]),
        .stat_dgram_dropped(rdma_stat[0])
    );

    assign to_buf       = rdma_sel ? r_to : u_to;
    assign tx_st        = rdma_sel ? r_st : u_st;
    assign wr0_en       = to_buf.wr.en0;
    assign wr0_addr     = to_buf.wr.addr0[AW-2:0];
    assign wr0_data     = to_buf.wr.data0;
    assign wr1_en       = to_buf.wr.en1;
    assign wr1_addr     = to_buf.wr.addr1[AW-2:0];
    assign wr1_data     = to_buf.wr.data1;
    assign final_word_u = to_buf.final_word[WP-1:0];
    assign desc_push    = to_buf.desc_valid;
    assign desc_wdata   = {to_buf.desc_seg[SP-1:0], to_buf.desc_tail};

    // Buffer: even words in bank 0, odd words in bank 1.
    logic          rd0_en, rd1_en;
    logic [AW-2:0] rd0_addr, rd1_addr;
    logic [1023:0] rd0_data, rd1_data;
    fhg_ram_sdp #(.WIDTH(1024), .DEPTH(BUF_WORDS / 2), .RD_LATENCY(RD_LATENCY),
                  .RAM_STYLE(BUF_RAM_STYLE)) u_bank0 (
        .wr_clk(user_clk), .wr_en(wr0_en), .wr_addr(wr0_addr), .wr_data(wr0_data),
        .rd_clk(mac_clk),  .rd_en(rd0_en), .rd_addr(rd0_addr), .rd_data(rd0_data)
    );
    fhg_ram_sdp #(.WIDTH(1024), .DEPTH(BUF_WORDS / 2), .RD_LATENCY(RD_LATENCY),
                  .RAM_STYLE(BUF_RAM_STYLE)) u_bank1 (
        .wr_clk(user_clk), .wr_en(wr1_en), .wr_addr(wr1_addr), .wr_data(wr1_data),
        .rd_clk(mac_clk),  .rd_en(rd1_en), .rd_addr(rd1_addr), .rd_data(rd1_data)
    );

    // Descriptors cross with the async FIFO (a push when full cannot happen: the writer
    // refuses new frames while the queue is nearly full).
    fhg_async_fifo #(.WIDTH(DESC_W), .DEPTH(DESC_DEPTH), .RAM_STYLE("block")) u_desc (
        .wr_clk(user_clk), .wr_rst(1'b0), .wr_en(desc_push), .wr_data(desc_wdata),
        .full(desc_full), .wr_count(desc_wcount),
        .rd_clk(mac_clk), .rd_rst(1'b0), .rd_valid(desc_rd_valid), .rd_data(desc_rdata),
        .rd_ready(desc_pop), .rd_count()
    );

    // Buffer pointers cross as consistent snapshots (they may jump by more than one).
    fhg_cfg_sync #(.WIDTH(WP)) u_final_sync (
        .src_clk(user_clk), .src_rst(1'b0), .src_data(final_word_u),
        .dst_clk(mac_clk), .dst_rst(mac_rst), .dst_data(final_word_m),
        .dst_update(), .dst_valid()
    );
    fhg_cfg_sync #(.WIDTH(WP)) u_rd_sync (
        .src_clk(mac_clk), .src_rst(mac_rst), .src_data(rd_word_m),
        .dst_clk(user_clk), .dst_rst(1'b0), .dst_data(rd_word_u),
        .dst_update(), .dst_valid()
    );

    // ================================================================ MAC side
    logic          h_in_ready;
    logic          hq_valid;
    logic [HQ_W-1:0] hq_data;
    logic [4:0]    hq_room;
    logic          packer_between_frames;

    assign desc_pop = desc_rd_valid && (h_in_ready || mst == M_FLUSH);

    // The RDMA mode sends UDP checksum 0 (registered: both are quasi-static).
    logic          udp_csum_m;
    always_ff @(posedge mac_clk) udp_csum_m <= cfg.udp_csum && !cfg_rdma_en;

    fhg_tx_header #(.SP(SP)) u_header (
        .clk(mac_clk), .rst(m_flush_rst),
        .cfg({cfg.mac, cfg.ip, cfg.netmask, cfg.gateway, cfg.port, cfg.ttl, udp_csum_m}),
        .in_valid(desc_rd_valid && mst == M_RUN), .in_data(desc_rdata), .in_ready(h_in_ready),
        .arp_addr(arp_addr), .arp_entry(arp_entry),
        .out_room(hq_room), .out_valid(hq_valid), .out_data(hq_data),
        .next_ip_id(next_ip_id)
    );

    logic          ctl_valid, ctl_word_valid, ctl_pop, ctl_done;
    logic [9:0]    ctl_nseg;
    logic [3:0]    ctl_mty;
    logic [1023:0] ctl_word;
    fhg_tx_ctl_arb u_ctl_arb (
        .clk(mac_clk), .rst(m_flush_rst),
        .arp_valid(arp_valid), .arp_frame(arp_frame), .arp_ready(arp_ready),
        .cpu_valid(cpu_valid), .cpu_nseg(cpu_nseg), .cpu_mty(cpu_mty), .cpu_word(cpu_word),
        .cpu_word_valid(cpu_word_valid), .cpu_pop(cpu_pop), .cpu_done(cpu_done),
        .ctl_valid(ctl_valid), .ctl_nseg(ctl_nseg), .ctl_mty(ctl_mty), .ctl_word(ctl_word),
        .ctl_word_valid(ctl_word_valid), .ctl_pop(ctl_pop), .ctl_done(ctl_done),
        .stat_arp_sent(stat_arp_sent), .stat_cpu_sent(stat_cpu_sent)
    );

    fhg_tx_packer #(.BUF_WORDS(BUF_WORDS), .RD_LATENCY(RD_LATENCY), .USE_TAF(USE_TAF)) u_packer (
        .clk(mac_clk), .rst(m_flush_rst),
        .hq_valid(hq_valid), .hq_data(hq_data), .hq_room(hq_room),
        .rd0_en(rd0_en), .rd0_addr(rd0_addr), .rd0_data(rd0_data),
        .rd1_en(rd1_en), .rd1_addr(rd1_addr), .rd1_data(rd1_data),
        .final_word(final_word_m), .rd_word(rd_word_m),
        .hold(mst != M_RUN), .between_frames(packer_between_frames),
        .ctl_valid(ctl_valid), .ctl_nseg(ctl_nseg), .ctl_mty(ctl_mty), .ctl_word(ctl_word),
        .ctl_word_valid(ctl_word_valid), .ctl_pop(ctl_pop), .ctl_done(ctl_done),
        .tx_tvalid(tx_tvalid), .tx_tready(tx_tready), .tx_taf(tx_taf),
        .tx_seg(tx_seg),
        .idle(),
        .stat_frames(stat_frames), .stat_bytes(stat_bytes), .stat_payload(stat_payload),
        .stat_arp_miss(stat_arp_miss), .stat_underrun(stat_underrun),
        .stat_ctl_frame(stat_ctl_frame), .stat_ctl_bytes(stat_ctl_bytes)
    );
    // desc_full is implied by the writer's descriptor accounting.
    logic unused_ok;
    assign unused_ok = &{1'b0, desc_full};
endmodule
