// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_core — the casper400g 400GbE UDP/IPv4 core: user ports (docs/design/core.md §1), AXI4-Lite
// register block (fhg_regs, docs/design/core.md §4) and the DCMAC port-0 TX and RX client interfaces.
//
// Clock domains
//   user_clk    the design's clock (tx_*/rx_* user ports), typically 390.625 MHz
//   axil_clk    the register block (CIPS AXI clock, 100-250 MHz), s_axil_*
//   tx_mac_clk  the DCMAC TX AXI clock (391.03 MHz by default), tx_axis_*
//   rx_mac_clk  the DCMAC RX AXI clock (may be the same clock as tx_mac_clk), rx_axis_*
// Configuration crosses into the MAC domains as consistent snapshots (fhg_cfg_sync),
// counters cross as exact deltas (fhg_cdc_delta) into the register block's counters.
//
// Transmit: fhg_tx_path with the CPU TX buffer and the hardware ARP responder's frames.
// Receive: fhg_rx_path (filter with one counter per drop reason, RX FIFO to user_clk), the
// CPU RX buffer, ARP requests answered and (when enabled) replies learned into the ARP
// table. Link state comes from `mac_link_up` (the DCMAC bring-up drives it on hardware).
// RX_FCS_ON_BUS says whether the DCMAC leaves the FCS on the RX bus (MAC_PORT0_RX_STRIP = 0;
// the DCMAC's default is not confirmed from public sources, so both are supported).
module fhg_core #(
    parameter int TX_BUFFER_FRAMES = 4,          // jumbo frames the TX buffer holds
    parameter int MAX_PAYLOAD      = 8972,       // largest UDP payload sent (bytes)
    parameter int AXIL_CLK_HZ      = 250000000,  // for the per-second rate registers
    parameter bit USE_TAF          = 1'b0,
    parameter int RX_BUFFER_KIB    = 64,         // RX FIFO (128-byte words: 8 per KiB)
    parameter bit RX_FCS_ON_BUS    = 1'b0,
    localparam int FRAME_WORDS = (MAX_PAYLOAD + 42 + 127) / 128 + 2,
    localparam int BUF_WORDS   = 1 << $clog2(TX_BUFFER_FRAMES * FRAME_WORDS)
) (
    // ---------------------------------------------------------------- user_clk
    input  wire                 user_clk,
    input  wire                 rst,
    input  wire  [1023:0]       tx_data,
    input  wire                 tx_valid,
    input  wire  [127:0]        tx_byte_enable,
    input  wire  [31:0]         tx_dest_ip,
    input  wire  [15:0]         tx_dest_port,
    input  wire                 tx_end_of_frame,
    output logic                tx_afull,
    output logic                tx_overflow,
    output logic [1023:0]       rx_data,
    output logic                rx_valid,
    output logic [127:0]        rx_byte_enable,
    output logic [31:0]         rx_source_ip,
    output logic [31:0]         rx_dest_ip,
    output logic [15:0]         rx_source_port,
    output logic [15:0]         rx_dest_port,
    output logic                rx_end_of_frame,
    output logic                rx_bad_frame,
    input  wire                 rx_ack,
    output logic                rx_overrun,
    input  wire                 rx_overrun_ack,
    output logic                led_up,
    output logic                led_rx,
    output logic                led_tx,

    // ---------------------------------------------------------------- AXI4-Lite
    input  wire                 axil_clk,
    input  wire                 axil_rst_n,
    output logic                s_axil_awready,
    input  wire                 s_axil_awvalid,
    input  wire  [15:0]         s_axil_awaddr,
    input  wire  [2:0]          s_axil_awprot,
    output logic                s_axil_wready,
    input  wire                 s_axil_wvalid,
    input  wire  [31:0]         s_axil_wdata,
    input  wire  [3:0]          s_axil_wstrb,
    input  wire                 s_axil_bready,
    output logic                s_axil_bvalid,
    output logic [1:0]          s_axil_bresp,
    output logic                s_axil_arready,
    input  wire                 s_axil_arvalid,
    input  wire  [15:0]         s_axil_araddr,
    input  wire  [2:0]          s_axil_arprot,
    input  wire                 s_axil_rready,
    output logic                s_axil_rvalid,
    output logic [31:0]         s_axil_rdata,
    output logic [1:0]          s_axil_rresp,

    // ---------------------------------------------------------------- DCMAC TX, port 0
    input  wire                 tx_mac_clk,
    input  wire                 tx_mac_rst,
    input  wire                 mac_link_up,     // any clock; synchronised here

    // ---------------------------------------------------------------- link bring-up (axil_clk)
    // fhg_link_bringup (in the platform's DCMAC wrapper, e.g. fhg_dcmac_vpk180) reports here
    // and takes its controls from link_ctrl; a design without it leaves the inputs at 0.
    output logic                link_auto_bringup,
    output logic                link_restart,
    output logic [7:0]          link_max_retries,
    output logic [2:0]          link_gt_loopback,
    input  wire  [3:0]          link_state,
    input  wire                 link_gt_tx_ready,
    input  wire                 link_gt_rx_ready,
    input  wire                 link_rx_aligned,
    input  wire                 link_rx_local_fault,
    input  wire                 link_rx_remote_fault,
    input  wire  [31:0]         link_retries,
    input  wire  [31:0]         link_rx_phy_status,
    input  wire                 link_down,
    input  wire                 link_axi_error,
    input  wire                 link_axi_stall,
    input  wire                 gt_powergood,
    output logic                tx_axis_tvalid_0,
    input  wire                 tx_axis_tready_0,
    input  wire                 tx_axis_taf_0,
    output logic [127:0]        tx_axis_tdata0, tx_axis_tdata1, tx_axis_tdata2, tx_axis_tdata3,
    output logic [127:0]        tx_axis_tdata4, tx_axis_tdata5, tx_axis_tdata6, tx_axis_tdata7,
    output logic              tx_axis_tuser_ena0, tx_axis_tuser_ena1, tx_axis_tuser_ena2, tx_axis_tuser_ena3, tx_axis_tuser_ena4, tx_axis_tuser_ena5, tx_axis_tuser_ena6, tx_axis_tuser_ena7,
    output logic              tx_axis_tuser_sop0, tx_axis_tuser_sop1, tx_axis_tuser_sop2, tx_axis_tuser_sop3, tx_axis_tuser_sop4, tx_axis_tuser_sop5, tx_axis_tuser_sop6, tx_axis_tuser_sop7,
    output logic              tx_axis_tuser_eop0, tx_axis_tuser_eop1, tx_axis_tuser_eop2, tx_axis_tuser_eop3, tx_axis_tuser_eop4, tx_axis_tuser_eop5, tx_axis_tuser_eop6, tx_axis_tuser_eop7,
    output logic              tx_axis_tuser_err0, tx_axis_tuser_err1, tx_axis_tuser_err2, tx_axis_tuser_err3, tx_axis_tuser_err4, tx_axis_tuser_err5, tx_axis_tuser_err6, tx_axis_tuser_err7,
    output logic [3:0]        tx_axis_tuser_mty0, tx_axis_tuser_mty1, tx_axis_tuser_mty2, tx_axis_tuser_mty3, tx_axis_tuser_mty4, tx_axis_tuser_mty5, tx_axis_tuser_mty6, tx_axis_tuser_mty7,

    // ---------------------------------------------------------------- DCMAC RX, port 0
    input  wire                 rx_mac_clk,
    input  wire                 rx_mac_rst,
    input  wire                 rx_axis_tvalid_0,
    input  wire  [127:0]        rx_axis_tdata0, rx_axis_tdata1, rx_axis_tdata2, rx_axis_tdata3,
    input  wire  [127:0]        rx_axis_tdata4, rx_axis_tdata5, rx_axis_tdata6, rx_axis_tdata7,
    input  wire               rx_axis_tuser_ena0, rx_axis_tuser_ena1, rx_axis_tuser_ena2, rx_axis_tuser_ena3, rx_axis_tuser_ena4, rx_axis_tuser_ena5, rx_axis_tuser_ena6, rx_axis_tuser_ena7,
    input  wire               rx_axis_tuser_sop0, rx_axis_tuser_sop1, rx_axis_tuser_sop2, rx_axis_tuser_sop3, rx_axis_tuser_sop4, rx_axis_tuser_sop5, rx_axis_tuser_sop6, rx_axis_tuser_sop7,
    input  wire               rx_axis_tuser_eop0, rx_axis_tuser_eop1, rx_axis_tuser_eop2, rx_axis_tuser_eop3, rx_axis_tuser_eop4, rx_axis_tuser_eop5, rx_axis_tuser_eop6, rx_axis_tuser_eop7,
    input  wire               rx_axis_tuser_err0, rx_axis_tuser_err1, rx_axis_tuser_err2, rx_axis_tuser_err3, rx_axis_tuser_err4, rx_axis_tuser_err5, rx_axis_tuser_err6, rx_axis_tuser_err7,
    input  wire  [3:0]        rx_axis_tuser_mty0, rx_axis_tuser_mty1, rx_axis_tuser_mty2, rx_axis_tuser_mty3, rx_axis_tuser_mty4, rx_axis_tuser_mty5, rx_axis_tuser_mty6, rx_axis_tuser_mty7
);
    localparam int AW    = $clog2(BUF_WORDS);
    localparam int LEN_W = 14;

    // ================================================================ register block
    fhg_regs_pkg::fhg_regs__in_t  hwif_in;
    fhg_regs_pkg::fhg_regs__out_t hwif_out;
    logic axil_rst;
    assign axil_rst = !axil_rst_n;

    // The toolflow connects the AXI4-Lite port signal by signal; inside it is one pair.
    fhg_bus_pkg::axil_req_t axil_req;
    fhg_bus_pkg::axil_rsp_t axil_rsp;
    assign axil_req = {s_axil_awvalid, 32'(s_axil_awaddr), s_axil_awprot, s_axil_wvalid,
                       s_axil_wdata, s_axil_wstrb, s_axil_bready, s_axil_arvalid,
                       32'(s_axil_araddr), s_axil_arprot, s_axil_rready};
    assign {s_axil_awready, s_axil_wready, s_axil_bvalid, s_axil_bresp, s_axil_arready,
            s_axil_rvalid, s_axil_rdata, s_axil_rresp} = axil_rsp;

    fhg_regs u_regs (
        .clk(axil_clk), .rst_n(axil_rst_n), .s_axil_req(axil_req), .s_axil_rsp(axil_rsp),
        .hwif_in(hwif_in), .hwif_out(hwif_out)
    );

    // ================================================================ configuration
    localparam int CFG_W = 48 + 32 + 32 + 32 + 16 + 8 + 1;
    logic [CFG_W-1:0] cfg_axil;
    fhg_bus_pkg::tx_cfg_t cfg_mac_dom;
    assign cfg_axil = {hwif_out.mac_hi.mac.value, hwif_out.mac_lo.mac.value,
                       hwif_out.ip.ip.value, hwif_out.netmask.mask.value,
                       hwif_out.gateway.ip.value, hwif_out.port.port.value,
                       hwif_out.ttl.ttl.value, hwif_out.ctrl.udp_checksum_en.value};
    fhg_cfg_sync #(.WIDTH(CFG_W)) u_cfg_mac (
        .src_clk(axil_clk), .src_rst(axil_rst), .src_data(cfg_axil),
        .dst_clk(tx_mac_clk), .dst_rst(tx_mac_rst), .dst_data(cfg_mac_dom),
        .dst_update(), .dst_valid()
    );

    logic fabric_en_u, soft_rst_u;
    logic rdma_restart;              // rdma_ctrl.en changed: reset the datapath
    fhg_sync_bits #(.WIDTH(1)) u_en_sync (
        .clk(user_clk), .rst(1'b0), .d(hwif_out.ctrl.fabric_en.value), .q(fabric_en_u)
    );
    fhg_pulse_sync u_srst_sync (
        .clk_a(axil_clk), .rst_a(axil_rst),
        .pulse_a(hwif_out.ctrl.soft_rst.value || rdma_restart), .busy_a(),
        .clk_b(user_clk), .rst_b(1'b0), .pulse_b(soft_rst_u)
    );

    // ================================================================ ARP table
    // Two 32-bit RAMs (entry word 0 and word 1): AXI side on port A, datapath on port B.
    logic [7:0]  arp_rd_addr;
    logic [31:0] arp_w0_b, arp_w1_b, arp_w0_a, arp_w1_a;
    logic        arp_req, arp_wr, arp_sel;
    logic        arp_ack_rd, arp_ack_wr, arp_sel_q;
    assign arp_req = hwif_out.arp_table.req;
    assign arp_wr  = hwif_out.arp_table.req_is_wr;
    assign arp_sel = hwif_out.arp_table.addr[2];
    // Port A: AXI accesses, and learned entries in the cycles AXI leaves free.
    logic        lrn_do;
    logic [7:0]  lrn_idx;
    logic [47:0] lrn_mac;
    fhg_ram_tdp #(.WIDTH(32), .DEPTH(256)) u_arp_w0 (
        .a_clk(axil_clk), .a_en((arp_req && !arp_sel) || lrn_do), .a_we(arp_req ? arp_wr : lrn_do),
        .a_addr(arp_req ? hwif_out.arp_table.addr[10:3] : lrn_idx),
        .a_wdata(arp_req ? hwif_out.arp_table.wr_data : {15'd0, 1'b1, lrn_mac[47:32]}),
        .a_rdata(arp_w0_a),
        .b_clk(tx_mac_clk), .b_en(1'b1), .b_we(1'b0), .b_addr(arp_rd_addr),
        .b_wdata(32'd0), .b_rdata(arp_w0_b)
    );
    fhg_ram_tdp #(.WIDTH(32), .DEPTH(256)) u_arp_w1 (
        .a_clk(axil_clk), .a_en((arp_req && arp_sel) || lrn_do), .a_we(arp_req ? arp_wr : lrn_do),
        .a_addr(arp_req ? hwif_out.arp_table.addr[10:3] : lrn_idx),
        .a_wdata(arp_req ? hwif_out.arp_table.wr_data : lrn_mac[31:0]),
        .a_rdata(arp_w1_a),
        .b_clk(tx_mac_clk), .b_en(1'b1), .b_we(1'b0), .b_addr(arp_rd_addr),
        .b_wdata(32'd0), .b_rdata(arp_w1_b)
    );

    // CPU TX buffer and its frame source; the CPU RX buffer sits with the receive path.
    logic [31:0] cpu_tx_a, cpu_rx_a;
    logic        cpu_tx_ack_rd, cpu_tx_ack_wr, cpu_rx_ack_rd, cpu_rx_ack_wr, cpu_tx_busy;
    logic        cpu_valid, cpu_word_valid, cpu_pop, cpu_done, cpu_refused;
    logic [9:0]  cpu_nseg;
    logic [3:0]  cpu_mty;
    logic [1023:0] cpu_word;
    fhg_tx_cpu u_cpu_tx (
        .axil_clk(axil_clk), .axil_rst(axil_rst),
        .req(hwif_out.cpu_tx_buf.req), .req_is_wr(hwif_out.cpu_tx_buf.req_is_wr),
        .addr(hwif_out.cpu_tx_buf.addr), .wr_data(hwif_out.cpu_tx_buf.wr_data),
        .rd_ack(cpu_tx_ack_rd), .wr_ack(cpu_tx_ack_wr), .rd_data(cpu_tx_a),
        .len_write(hwif_out.cpu_tx_len.len.swmod), .len_value(hwif_out.cpu_tx_len.len.value),
        .cpu_tx_en(hwif_out.ctrl.cpu_tx_en.value), .busy(cpu_tx_busy),
        .mac_clk(tx_mac_clk), .mac_rst(tx_mac_rst),
        .cpu_valid(cpu_valid), .cpu_nseg(cpu_nseg), .cpu_mty(cpu_mty), .cpu_word(cpu_word),
        .cpu_word_valid(cpu_word_valid), .cpu_pop(cpu_pop), .cpu_done(cpu_done),
        .stat_refused(cpu_refused)
    );

    // External regions answer one cycle after the request (RAM read latency 1).
    always_ff @(posedge axil_clk) begin
        arp_ack_rd    <= arp_req && !arp_wr;
        arp_ack_wr    <= arp_req && arp_wr;
        arp_sel_q     <= arp_sel;
        if (axil_rst) begin
            arp_ack_rd <= 1'b0; arp_ack_wr <= 1'b0;
        end
    end

    // ================================================================ RDMA mode
    // docs/design/core.md §6: registers across the clocks, the credit datagrams' tap on the
    // RX bus; fhg_tx_path holds the mode's user side, fhg_tx_icrc the ICRC on the TX bus.
    localparam int RDMA_CFG_W = 1 + 2 + 24 + 24 + 32 + 64 + 24 + 24 + 24 + 32 + 32;
    logic        rdma_credit_we, rdma_en_u, rdma_en_m;
    logic [31:0] rdma_credit_next, rdma_st_chunk, rdma_cr_src_ip, rdma_cr_value;
    logic [23:0] rdma_st_psn;
    logic [7:0]  rdma_cnt_v;
    logic [16*8-1:0] rdma_cnt_d;
    logic [RDMA_CFG_W-1:0] rdma_cfg_u;
    logic [55:0] rdma_st_u;
    logic [4:0]  rdma_stat_u;
    logic [1:0]  rdma_icrc_m, rdma_cr_count;
    logic [15:0] rdma_cr_port;
    logic        rdma_cr_valid;
    fhg_rdma_ctl u_rdma_ctl (
        .axil_clk(axil_clk), .axil_rst(axil_rst),
        .a_en(hwif_out.rdma_ctrl.en.value), .a_flow_ctrl(hwif_out.rdma_ctrl.flow_ctrl.value),
        .a_mtu(hwif_out.rdma_ctrl.mtu.value), .a_qpn(hwif_out.rdma_qpn.qpn.value),
        .a_psn(hwif_out.rdma_psn.psn.value), .a_rkey(hwif_out.rdma_rkey.rkey.value),
        .a_va({hwif_out.rdma_va_hi.va.value, hwif_out.rdma_va_lo.va.value}),
        .a_slot_size(hwif_out.rdma_slot_size.bytes.value),
        .a_slots(hwif_out.rdma_slots.slots.value), .a_chunks(hwif_out.rdma_chunks.chunks.value),
        .a_dst_ip(hwif_out.rdma_dest_ip.ip.value), .a_credit(hwif_out.rdma_credit.chunk.value),
        .a_credit_port(hwif_out.rdma_credit_port.port.value),
        .restart(rdma_restart), .credit_we(rdma_credit_we), .credit_next(rdma_credit_next),
        .st_psn(rdma_st_psn), .st_chunk(rdma_st_chunk), .cnt_v(rdma_cnt_v), .cnt_d(rdma_cnt_d),
        .user_clk(user_clk), .u_en(rdma_en_u), .u_cfg(rdma_cfg_u), .u_st(rdma_st_u),
        .u_stat(rdma_stat_u),
        .tx_mac_clk(tx_mac_clk), .tx_mac_rst(tx_mac_rst), .m_en(rdma_en_m), .m_icrc(rdma_icrc_m),
        .rx_mac_clk(rx_mac_clk), .rx_mac_rst(rx_mac_rst), .r_src_ip(rdma_cr_src_ip),
        .r_port(rdma_cr_port), .r_credit_valid(rdma_cr_valid), .r_credit_value(rdma_cr_value),
        .r_credit_count(rdma_cr_count)
    );

    // ================================================================ transmit path
    logic          arp_tx_valid, arp_tx_ready;
    logic [511:0]  arp_tx_frame;
    logic          st_word, st_frame_drop, st_afull_rise, st_arp_miss, st_underrun;
    logic          st_arp_sent, st_cpu_sent, st_ctl_frame;
    logic [LEN_W+1:0] st_ctl_bytes;
    logic [7:0]    st_words_lost;
    logic [1:0]    st_frames;
    logic [LEN_W+1:0] st_bytes, st_payload;
    logic [15:0]   next_ip_id;
    fhg_bus_pkg::seg_bus_t seg, pk_seg;
    logic          pk_tvalid, pk_tready;
    fhg_bus_pkg::tx_user_st_t tx_user_st;
    assign {tx_afull, tx_overflow, st_word, st_frame_drop, st_words_lost, st_afull_rise} =
        tx_user_st;

    fhg_tx_path #(
        .BUF_WORDS(BUF_WORDS), .MAX_PAYLOAD(MAX_PAYLOAD), .USE_TAF(USE_TAF)
    ) u_tx (
        .user_clk(user_clk), .user_rst(rst), .soft_rst_user(soft_rst_u),
        .accept(fabric_en_u),
        .tx({tx_data, tx_valid, tx_byte_enable, tx_dest_ip, tx_dest_port, tx_end_of_frame}),
        .tx_st(tx_user_st),
        .rdma_en(rdma_en_u), .rdma_cfg(rdma_cfg_u), .rdma_st(rdma_st_u), .rdma_stat(rdma_stat_u),
        .mac_clk(tx_mac_clk), .mac_rst(tx_mac_rst),
        .cfg(cfg_mac_dom), .cfg_rdma_en(rdma_en_m),
        .arp_addr(arp_rd_addr), .arp_entry({arp_w1_b, arp_w0_b}),
        .next_ip_id(next_ip_id),
        .arp_valid(arp_tx_valid), .arp_frame(arp_tx_frame), .arp_ready(arp_tx_ready),
        .cpu_valid(cpu_valid), .cpu_nseg(cpu_nseg), .cpu_mty(cpu_mty), .cpu_word(cpu_word),
        .cpu_word_valid(cpu_word_valid), .cpu_pop(cpu_pop), .cpu_done(cpu_done),
        .tx_tvalid(pk_tvalid), .tx_tready(pk_tready), .tx_taf(tx_axis_taf_0),
        .tx_seg(pk_seg),
        .stat_frames(st_frames), .stat_bytes(st_bytes), .stat_payload(st_payload),
        .stat_arp_miss(st_arp_miss), .stat_underrun(st_underrun),
        .stat_arp_sent(st_arp_sent), .stat_cpu_sent(st_cpu_sent),
        .stat_ctl_frame(st_ctl_frame), .stat_ctl_bytes(st_ctl_bytes)
    );
    // The ICRC of RoCEv2 frames goes in between the packer and the DCMAC.
    fhg_tx_icrc u_icrc (
        .clk(tx_mac_clk), .rst(tx_mac_rst), .cfg_en(rdma_en_m),
        .in_tvalid(pk_tvalid), .in_tready(pk_tready), .in_seg(pk_seg),
        .tx_tvalid(tx_axis_tvalid_0), .tx_tready(tx_axis_tready_0), .tx_seg(seg),
        .stat_patched(rdma_icrc_m)
    );
    assign {tx_axis_tdata7, tx_axis_tdata6, tx_axis_tdata5, tx_axis_tdata4,
            tx_axis_tdata3, tx_axis_tdata2, tx_axis_tdata1, tx_axis_tdata0} = seg.tdata;
    assign {tx_axis_tuser_ena7, tx_axis_tuser_ena6, tx_axis_tuser_ena5, tx_axis_tuser_ena4, tx_axis_tuser_ena3, tx_axis_tuser_ena2, tx_axis_tuser_ena1, tx_axis_tuser_ena0} = seg.ena;
    assign {tx_axis_tuser_sop7, tx_axis_tuser_sop6, tx_axis_tuser_sop5, tx_axis_tuser_sop4, tx_axis_tuser_sop3, tx_axis_tuser_sop2, tx_axis_tuser_sop1, tx_axis_tuser_sop0} = seg.sop;
    assign {tx_axis_tuser_eop7, tx_axis_tuser_eop6, tx_axis_tuser_eop5, tx_axis_tuser_eop4, tx_axis_tuser_eop3, tx_axis_tuser_eop2, tx_axis_tuser_eop1, tx_axis_tuser_eop0} = seg.eop;
    assign {tx_axis_tuser_err7, tx_axis_tuser_err6, tx_axis_tuser_err5, tx_axis_tuser_err4, tx_axis_tuser_err3, tx_axis_tuser_err2, tx_axis_tuser_err1, tx_axis_tuser_err0} = seg.err;
    assign {tx_axis_tuser_mty7, tx_axis_tuser_mty6, tx_axis_tuser_mty5, tx_axis_tuser_mty4, tx_axis_tuser_mty3, tx_axis_tuser_mty2, tx_axis_tuser_mty1, tx_axis_tuser_mty0} = seg.mty;


    // ================================================================ receive path
    // Configuration in the RX MAC domain.
    localparam int RCFG_W = 48 + 32*4 + 16 + 4;
    logic [RCFG_W-1:0] rcfg_axil, rcfg_rx;
    logic        r_fabric_en;
    fhg_bus_pkg::rx_cfg_t r_cfg;
    assign rcfg_axil = {hwif_out.mac_hi.mac.value, hwif_out.mac_lo.mac.value,
                        hwif_out.ip.ip.value, hwif_out.netmask.mask.value,
                        hwif_out.mc_ip.ip.value, hwif_out.mc_mask.mask.value,
                        hwif_out.port.port.value, hwif_out.ctrl.promisc_en.value,
                        hwif_out.ctrl.cpu_rx_en.value, hwif_out.ctrl.arp_reply_en.value,
                        hwif_out.ctrl.arp_learn_en.value};
    fhg_cfg_sync #(.WIDTH(RCFG_W)) u_cfg_rx (
        .src_clk(axil_clk), .src_rst(axil_rst), .src_data(rcfg_axil),
        .dst_clk(rx_mac_clk), .dst_rst(rx_mac_rst), .dst_data(rcfg_rx),
        .dst_update(), .dst_valid()
    );
    fhg_sync_bits #(.WIDTH(1)) u_en_rx_sync (
        .clk(rx_mac_clk), .rst(1'b0), .d(hwif_out.ctrl.fabric_en.value), .q(r_fabric_en)
    );
    assign r_cfg = {rcfg_rx, r_fabric_en};

    localparam int NC = fhg_rx_pkg::NCODES;
    logic [1023:0] rx_bus;
    assign rx_bus = {rx_axis_tdata7, rx_axis_tdata6, rx_axis_tdata5, rx_axis_tdata4,
                     rx_axis_tdata3, rx_axis_tdata2, rx_axis_tdata1, rx_axis_tdata0};
    logic          rx_empty_u, cpu_placed, cpu_released;
    fhg_bus_pkg::rx_cpu_wr_t cpu_wr;
    fhg_bus_pkg::rx_user_t   rx_user;
    assign {rx_data, rx_valid, rx_byte_enable, rx_source_ip, rx_dest_ip, rx_source_port,
            rx_dest_port, rx_end_of_frame, rx_bad_frame} = rx_user;
    logic [13:0]   cpu_len_m;
    logic          arpq_valid, arpq_pop;
    logic [80:0]   arpq_data;
    logic [3*NC-1:0] rs_cnt;
    logic [1:0]    rs_frames;
    logic [15:0]   rs_bytes;
    logic          rs_delivered, rs_bad;
    logic [13:0]   rs_udp_bytes;
    logic [7:0]    rs_words;

    fhg_rx_path #(.FCS_ON_BUS(RX_FCS_ON_BUS), .FIFO_WORDS(RX_BUFFER_KIB * 8)) u_rx (
        .mac_clk(rx_mac_clk), .mac_rst(rx_mac_rst),
        .rx_tvalid(rx_axis_tvalid_0), .rx_data_bus(rx_bus),
        .rx_ena({rx_axis_tuser_ena7, rx_axis_tuser_ena6, rx_axis_tuser_ena5, rx_axis_tuser_ena4, rx_axis_tuser_ena3, rx_axis_tuser_ena2, rx_axis_tuser_ena1, rx_axis_tuser_ena0}),
        .rx_sop({rx_axis_tuser_sop7, rx_axis_tuser_sop6, rx_axis_tuser_sop5, rx_axis_tuser_sop4, rx_axis_tuser_sop3, rx_axis_tuser_sop2, rx_axis_tuser_sop1, rx_axis_tuser_sop0}),
        .rx_eop({rx_axis_tuser_eop7, rx_axis_tuser_eop6, rx_axis_tuser_eop5, rx_axis_tuser_eop4, rx_axis_tuser_eop3, rx_axis_tuser_eop2, rx_axis_tuser_eop1, rx_axis_tuser_eop0}),
        .rx_err({rx_axis_tuser_err7, rx_axis_tuser_err6, rx_axis_tuser_err5, rx_axis_tuser_err4, rx_axis_tuser_err3, rx_axis_tuser_err2, rx_axis_tuser_err1, rx_axis_tuser_err0}),
        .rx_mty({rx_axis_tuser_mty7, rx_axis_tuser_mty6, rx_axis_tuser_mty5, rx_axis_tuser_mty4, rx_axis_tuser_mty3, rx_axis_tuser_mty2, rx_axis_tuser_mty1, rx_axis_tuser_mty0}),
        .cfg(r_cfg),
        .user_clk(user_clk), .user_rst(rst || soft_rst_u),
        .rx(rx_user), .rx_ack(rx_ack),
        .rx_overrun(rx_overrun), .rx_overrun_ack(rx_overrun_ack), .rx_empty(rx_empty_u),
        .cpu_wr(cpu_wr), .cpu_placed(cpu_placed), .cpu_len(cpu_len_m), .cpu_released(cpu_released),
        .arp_q_valid(arpq_valid), .arp_q_data(arpq_data), .arp_q_pop(arpq_pop),
        .st_cnt(rs_cnt), .st_frames(rs_frames), .st_bytes(rs_bytes),
        .st_delivered(rs_delivered), .st_udp_bytes(rs_udp_bytes), .st_words(rs_words),
        .st_bad(rs_bad)
    );

    fhg_rx_rdma_credit u_rdma_credit (
        .clk(rx_mac_clk), .rst(rx_mac_rst), .cfg_mac(r_cfg.mac), .cfg_ip(r_cfg.ip),
        .cfg_src_ip(rdma_cr_src_ip), .cfg_port(rdma_cr_port),
        .rx_tvalid(rx_axis_tvalid_0), .rx_data(rx_bus),
        .rx_ena({rx_axis_tuser_ena7, rx_axis_tuser_ena6, rx_axis_tuser_ena5, rx_axis_tuser_ena4, rx_axis_tuser_ena3, rx_axis_tuser_ena2, rx_axis_tuser_ena1, rx_axis_tuser_ena0}),
        .rx_sop({rx_axis_tuser_sop7, rx_axis_tuser_sop6, rx_axis_tuser_sop5, rx_axis_tuser_sop4, rx_axis_tuser_sop3, rx_axis_tuser_sop2, rx_axis_tuser_sop1, rx_axis_tuser_sop0}),
        .rx_eop({rx_axis_tuser_eop7, rx_axis_tuser_eop6, rx_axis_tuser_eop5, rx_axis_tuser_eop4, rx_axis_tuser_eop3, rx_axis_tuser_eop2, rx_axis_tuser_eop1, rx_axis_tuser_eop0}),
        .rx_err({rx_axis_tuser_err7, rx_axis_tuser_err6, rx_axis_tuser_err5, rx_axis_tuser_err4, rx_axis_tuser_err3, rx_axis_tuser_err2, rx_axis_tuser_err1, rx_axis_tuser_err0}),
        .credit_valid(rdma_cr_valid), .credit_value(rdma_cr_value), .credit_count(rdma_cr_count)
    );

    logic [15:0] cpu_rx_len_a;
    logic        cpu_rx_ready_a;
    fhg_rx_cpu u_cpu_rx (
        .mac_clk(rx_mac_clk), .mac_rst(rx_mac_rst),
        .wr(cpu_wr),
        .placed(cpu_placed), .placed_len(cpu_len_m), .released(cpu_released),
        .axil_clk(axil_clk), .axil_rst(axil_rst),
        .req(hwif_out.cpu_rx_buf.req), .req_is_wr(hwif_out.cpu_rx_buf.req_is_wr),
        .addr(hwif_out.cpu_rx_buf.addr), .rd_ack(cpu_rx_ack_rd), .wr_ack(cpu_rx_ack_wr),
        .rd_data(cpu_rx_a), .len(cpu_rx_len_a), .ready(cpu_rx_ready_a),
        .ack(hwif_out.cpu_rx_ack.ack.value)
    );

    // ARP events: requests to the responder (TX MAC domain), replies to learn (AXI domain).
    logic        arpr_full, arpl_full, arpr_valid, arpl_valid, arpr_pop;
    logic [79:0] arpr_data, arpl_data;
    assign arpq_pop = arpq_valid && (arpq_data[80] ? !arpl_full : !arpr_full);
    fhg_async_fifo #(.WIDTH(80), .DEPTH(4)) u_arp_req_cdc (
        .wr_clk(rx_mac_clk), .wr_rst(rx_mac_rst), .wr_en(arpq_pop && !arpq_data[80]),
        .wr_data(arpq_data[79:0]), .full(arpr_full), .wr_count(),
        .rd_clk(tx_mac_clk), .rd_rst(tx_mac_rst), .rd_valid(arpr_valid), .rd_data(arpr_data),
        .rd_ready(arpr_pop), .rd_count()
    );
    fhg_async_fifo #(.WIDTH(80), .DEPTH(4)) u_arp_learn_cdc (
        .wr_clk(rx_mac_clk), .wr_rst(rx_mac_rst), .wr_en(arpq_pop && arpq_data[80]),
        .wr_data(arpq_data[79:0]), .full(arpl_full), .wr_count(),
        .rd_clk(axil_clk), .rd_rst(axil_rst), .rd_valid(arpl_valid), .rd_data(arpl_data),
        .rd_ready(lrn_take), .rd_count()
    );
    // Learned entries: only for senders in our subnet (the table is indexed by IP[7:0]).
    logic lrn_take, lrn_in_subnet;
    assign lrn_in_subnet = ((arpl_data[31:0] ^ hwif_out.ip.ip.value) & hwif_out.netmask.mask.value) == 32'd0;
    assign lrn_take = arpl_valid && !arp_req;
    assign lrn_do   = lrn_take && lrn_in_subnet;
    assign lrn_idx  = arpl_data[7:0];
    assign lrn_mac  = arpl_data[79:32];

    // Gratuitous ARP: on fabric enable (when allowed) and on request.
    logic fabric_en_t, fabric_en_t_q, garp_en_t, garp_now_t;
    fhg_sync_bits #(.WIDTH(2)) u_garp_sync (
        .clk(tx_mac_clk), .rst(1'b0),
        .d({hwif_out.ctrl.fabric_en.value, hwif_out.ctrl.gratuitous_arp_en.value}),
        .q({fabric_en_t, garp_en_t})
    );
    fhg_pulse_sync u_garp_pulse (
        .clk_a(axil_clk), .rst_a(axil_rst), .pulse_a(hwif_out.ctrl.send_garp.value),
        .busy_a(), .clk_b(tx_mac_clk), .rst_b(tx_mac_rst), .pulse_b(garp_now_t)
    );
    always_ff @(posedge tx_mac_clk) fabric_en_t_q <= fabric_en_t;
    fhg_arp_responder u_arp (
        .clk(tx_mac_clk), .rst(tx_mac_rst), .cfg_mac(cfg_mac_dom.mac), .cfg_ip(cfg_mac_dom.ip),
        .req_valid(arpr_valid), .req_sha(arpr_data[79:32]), .req_spa(arpr_data[31:0]),
        .req_pop(arpr_pop),
        .garp(garp_now_t || (garp_en_t && fabric_en_t && !fabric_en_t_q)),
        .arp_valid(arp_tx_valid), .arp_frame(arp_tx_frame), .arp_ready(arp_tx_ready)
    );

    // RX statistics into the register domain: one exact count per verdict code, totals.
    logic [NC-1:0]    dr_v;
    logic [16*NC-1:0] dr_flat;
    logic [15:0]      dr_d [NC];
    logic             dr_fr_v, dr_by_v, dr_del_v, dr_ub_v, dr_w_v, dr_bad_v, dr_drop_v;
    logic [15:0]      dr_fr, dr_del, dr_bad, dr_drop, dr_w;
    logic [23:0]      dr_by, dr_ub;
    fhg_stats_rx #(.NC(NC)) u_stats_rx (
        .mac_clk(rx_mac_clk), .mac_rst(rx_mac_rst), .verdict_cnt(rs_cnt), .frames(rs_frames),
        .bytes(rs_bytes), .delivered(rs_delivered), .udp_bytes(rs_udp_bytes),
        .words(rs_words), .bad(rs_bad),
        .axil_clk(axil_clk), .axil_rst(axil_rst), .verdict_v(dr_v), .verdict_d(dr_flat),
        .frames_v(dr_fr_v), .frames_d(dr_fr), .bytes_v(dr_by_v), .bytes_d(dr_by),
        .delivered_v(dr_del_v), .delivered_d(dr_del), .udp_bytes_v(dr_ub_v),
        .udp_bytes_d(dr_ub), .words_v(dr_w_v), .words_d(dr_w), .bad_v(dr_bad_v),
        .bad_d(dr_bad), .drops_v(dr_drop_v), .drops_d(dr_drop)
    );
    for (genvar c = 0; c < NC; c++) begin : g_rx_cnt
        assign dr_d[c] = dr_flat[16*c +: 16];
    end

    // RX activity for led_rx (any frame received), stretched in the MAC domain.
    logic [21:0] rx_led_cnt;
    logic        rx_act_m;
    always_ff @(posedge rx_mac_clk) begin
        if (rs_frames != 0) rx_led_cnt <= '1;
        else if (rx_led_cnt != 0) rx_led_cnt <= rx_led_cnt - 22'd1;
        if (rx_mac_rst) rx_led_cnt <= '0;
    end
    assign rx_act_m = rx_led_cnt != 0;

    // ================================================================ counters
    // TX statistics into the register domain (user_clk and tx_mac_clk events).
    logic        d_word_v, d_lost_v, d_drop_v, d_afull_v;
    logic [15:0] d_word, d_lost, d_drop, d_afull;
    logic        d_frames_v, d_all_v, d_bytes_v, d_payload_v, d_miss_v, d_arp_v, d_cpu_v;
    logic [15:0] d_frames, d_all, d_miss, d_arp, d_cpu;
    logic [23:0] d_bytes, d_payload;
    fhg_stats_tx #(.LEN_W(LEN_W)) u_stats_tx (
        .user_clk(user_clk), .word(st_word), .words_lost(st_words_lost),
        .frame_drop(st_frame_drop), .afull_rise(st_afull_rise),
        .tx_mac_clk(tx_mac_clk), .tx_mac_rst(tx_mac_rst), .frames(st_frames),
        .ctl_frame(st_ctl_frame), .ctl_bytes(st_ctl_bytes), .bytes(st_bytes),
        .payload(st_payload), .arp_sent(st_arp_sent), .cpu_sent(st_cpu_sent),
        .arp_miss(st_arp_miss),
        .axil_clk(axil_clk), .axil_rst(axil_rst),
        .word_v(d_word_v), .word_d(d_word), .lost_v(d_lost_v), .lost_d(d_lost),
        .drop_v(d_drop_v), .drop_d(d_drop), .afull_v(d_afull_v), .afull_d(d_afull),
        .frames_v(d_frames_v), .frames_d(d_frames), .all_v(d_all_v), .all_d(d_all),
        .arp_v(d_arp_v), .arp_d(d_arp), .cpu_v(d_cpu_v), .cpu_d(d_cpu),
        .bytes_v(d_bytes_v), .bytes_d(d_bytes), .payload_v(d_payload_v),
        .payload_d(d_payload), .miss_v(d_miss_v), .miss_d(d_miss)
    );

    // Per-second rates: counts of the last complete one-second window.
    logic [31:0] pkt_rate, valid_rate, rpkt_rate, rvalid_rate;
    fhg_stats_rate #(.N(4), .CLK_HZ(AXIL_CLK_HZ)) u_rates (
        .clk(axil_clk), .rst(axil_rst),
        .valid({dr_w_v, dr_del_v, d_word_v, d_frames_v}),
        .delta({dr_w, dr_del, d_word, d_frames}),
        .rate({rvalid_rate, rpkt_rate, valid_rate, pkt_rate})
    );

    // Status bits into the register domain.
    logic afull_a, ovf_a, link_a, rx_ovr_a, rx_empty_a;
    fhg_sync_bits #(.WIDTH(5)) u_status_sync (
        .clk(axil_clk), .rst(axil_rst),
        .d({tx_afull, tx_overflow, mac_link_up, rx_overrun, rx_empty_u}),
        .q({afull_a, ovf_a, link_a, rx_ovr_a, rx_empty_a})
    );
    logic [15:0] ip_id_a;
    fhg_cfg_sync #(.WIDTH(16)) u_ipid_sync (
        .src_clk(tx_mac_clk), .src_rst(tx_mac_rst), .src_data(next_ip_id),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_data(ip_id_a),
        .dst_update(), .dst_valid()
    );

    always_comb begin
        hwif_in = '{default: '0};
        hwif_in.buffer_sizes.tx_kib.next = 16'(BUF_WORDS / 8);   // 128-byte words
        hwif_in.buffer_sizes.rx_kib.next = 16'(RX_BUFFER_KIB);
        hwif_in.status.link_up.next      = link_a;
        // Without a bring-up sequencer (simulation, other platforms) mac_link_up stands for it.
        hwif_in.status.rx_aligned.next   = link_a || link_rx_aligned;
        hwif_in.status.tx_afull.next     = afull_a;
        hwif_in.status.tx_overflow.next  = ovf_a;
        hwif_in.status.rx_empty.next     = rx_empty_a;
        hwif_in.status.rx_overrun.next   = rx_ovr_a;
        hwif_in.status.cpu_rx_ready.next = cpu_rx_ready_a;
        hwif_in.cpu_rx_len.len.next      = cpu_rx_len_a;
        hwif_in.rx_packet_rate.value.next = rpkt_rate;
        hwif_in.rx_valid_rate.value.next  = rvalid_rate;
        hwif_in.status.cpu_tx_busy.next  = cpu_tx_busy;
        hwif_in.link_status.link_up.next = link_a;
        hwif_in.link_status.state.next           = link_state;
        hwif_in.link_status.gt_tx_ready.next     = link_gt_tx_ready;
        hwif_in.link_status.gt_rx_ready.next     = link_gt_rx_ready;
        hwif_in.link_status.rx_aligned.next      = link_rx_aligned;
        hwif_in.link_status.rx_local_fault.next  = link_rx_local_fault;
        hwif_in.link_status.rx_remote_fault.next = link_rx_remote_fault;
        hwif_in.link_status.axi_error.next       = link_axi_error;
        hwif_in.link_status.axi_stall.next       = link_axi_stall;
        hwif_in.link_status.gt_powergood.next    = gt_powergood;
        hwif_in.link_retries.count.next          = link_retries;
        hwif_in.rx_phy_status.value.next         = link_rx_phy_status;
        hwif_in.link_down_counter.count.incr      = link_down;
        hwif_in.link_down_counter.count.incrvalue = 16'd1;
        hwif_in.ip_id.next_id.next       = ip_id_a;
        hwif_in.tx_packet_rate.value.next = pkt_rate;
        hwif_in.tx_valid_rate.value.next  = valid_rate;

        hwif_in.tx_packet_counter.count.incr      = d_frames_v;
        hwif_in.tx_packet_counter.count.incrvalue = d_frames;
        hwif_in.tx_frames.count.incr              = d_all_v;
        hwif_in.tx_frames.count.incrvalue         = 24'(d_all);
        hwif_in.tx_udp_packets.count.incr         = d_frames_v;
        hwif_in.tx_udp_packets.count.incrvalue    = 24'(d_frames);
        hwif_in.tx_arp_replies.count.incr         = d_arp_v;
        hwif_in.tx_arp_replies.count.incrvalue    = 24'(d_arp);
        hwif_in.tx_cpu_frames.count.incr          = d_cpu_v;
        hwif_in.tx_cpu_frames.count.incrvalue     = 24'(d_cpu);
        hwif_in.tx_bytes.count.incr               = d_bytes_v;
        hwif_in.tx_bytes.count.incrvalue          = d_bytes;
        hwif_in.tx_udp_bytes.count.incr           = d_payload_v;
        hwif_in.tx_udp_bytes.count.incrvalue      = d_payload;
        hwif_in.tx_arp_miss.count.incr            = d_miss_v;
        hwif_in.tx_arp_miss.count.incrvalue       = 24'(d_miss);
        hwif_in.tx_valid_counter.count.incr       = d_word_v;
        hwif_in.tx_valid_counter.count.incrvalue  = d_word;
        hwif_in.tx_overflow_counter.count.incr    = d_lost_v;
        hwif_in.tx_overflow_counter.count.incrvalue = d_lost;
        hwif_in.tx_overflow.count.incr            = d_drop_v;
        hwif_in.tx_overflow.count.incrvalue       = 24'(d_drop);
        hwif_in.tx_afull_counter.count.incr       = d_afull_v;
        hwif_in.tx_afull_counter.count.incrvalue  = d_afull;

        hwif_in.rx_frames.count.incr              = dr_fr_v;
        hwif_in.rx_frames.count.incrvalue         = 24'(dr_fr);
        hwif_in.rx_bytes.count.incr               = dr_by_v;
        hwif_in.rx_bytes.count.incrvalue          = dr_by;
        hwif_in.rx_udp_packets.count.incr         = dr_del_v;
        hwif_in.rx_udp_packets.count.incrvalue    = 24'(dr_del);
        hwif_in.rx_packet_counter.count.incr      = dr_del_v;
        hwif_in.rx_packet_counter.count.incrvalue = dr_del;
        hwif_in.rx_udp_bytes.count.incr           = dr_ub_v;
        hwif_in.rx_udp_bytes.count.incrvalue      = dr_ub;
        hwif_in.rx_valid_counter.count.incr       = dr_w_v;
        hwif_in.rx_valid_counter.count.incrvalue  = dr_w;
        hwif_in.rx_bad_udp_checksum.count.incr    = dr_bad_v;
        hwif_in.rx_bad_udp_checksum.count.incrvalue = 24'(dr_bad);
        hwif_in.rx_bad_counter.count.incr         = dr_drop_v;
        hwif_in.rx_bad_counter.count.incrvalue    = dr_drop;
        hwif_in.rx_overflow_counter.count.incr    = dr_v[fhg_rx_pkg::V_OVERRUN];
        hwif_in.rx_overflow_counter.count.incrvalue = dr_d[fhg_rx_pkg::V_OVERRUN];
        hwif_in.rx_arp_requests.count.incr        = dr_v[fhg_rx_pkg::V_ARP];
        hwif_in.rx_arp_requests.count.incrvalue   = 24'(dr_d[fhg_rx_pkg::V_ARP]);
        hwif_in.rx_to_cpu.count.incr              = dr_v[fhg_rx_pkg::V_CPU];
        hwif_in.rx_to_cpu.count.incrvalue         = 24'(dr_d[fhg_rx_pkg::V_CPU]);
        hwif_in.rx_drop_fcs.count.incr            = dr_v[fhg_rx_pkg::V_FCS];
        hwif_in.rx_drop_fcs.count.incrvalue       = 24'(dr_d[fhg_rx_pkg::V_FCS]);
        hwif_in.rx_drop_dst_mac.count.incr        = dr_v[fhg_rx_pkg::V_DST_MAC];
        hwif_in.rx_drop_dst_mac.count.incrvalue   = 24'(dr_d[fhg_rx_pkg::V_DST_MAC]);
        hwif_in.rx_drop_ethertype.count.incr      = dr_v[fhg_rx_pkg::V_ETHERTYPE];
        hwif_in.rx_drop_ethertype.count.incrvalue = 24'(dr_d[fhg_rx_pkg::V_ETHERTYPE]);
        hwif_in.rx_drop_ip_version.count.incr     = dr_v[fhg_rx_pkg::V_IP_VERSION];
        hwif_in.rx_drop_ip_version.count.incrvalue = 24'(dr_d[fhg_rx_pkg::V_IP_VERSION]);
        hwif_in.rx_drop_ip_options.count.incr     = dr_v[fhg_rx_pkg::V_IP_OPTIONS];
        hwif_in.rx_drop_ip_options.count.incrvalue = 24'(dr_d[fhg_rx_pkg::V_IP_OPTIONS]);
        hwif_in.rx_drop_ip_fragment.count.incr    = dr_v[fhg_rx_pkg::V_IP_FRAGMENT];
        hwif_in.rx_drop_ip_fragment.count.incrvalue = 24'(dr_d[fhg_rx_pkg::V_IP_FRAGMENT]);
        hwif_in.rx_drop_ip_checksum.count.incr    = dr_v[fhg_rx_pkg::V_IP_CHECKSUM];
        hwif_in.rx_drop_ip_checksum.count.incrvalue = 24'(dr_d[fhg_rx_pkg::V_IP_CHECKSUM]);
        hwif_in.rx_drop_ip_protocol.count.incr    = dr_v[fhg_rx_pkg::V_IP_PROTOCOL];
        hwif_in.rx_drop_ip_protocol.count.incrvalue = 24'(dr_d[fhg_rx_pkg::V_IP_PROTOCOL]);
        hwif_in.rx_drop_dst_ip.count.incr         = dr_v[fhg_rx_pkg::V_DST_IP];
        hwif_in.rx_drop_dst_ip.count.incrvalue    = 24'(dr_d[fhg_rx_pkg::V_DST_IP]);
        hwif_in.rx_drop_dst_port.count.incr       = dr_v[fhg_rx_pkg::V_DST_PORT];
        hwif_in.rx_drop_dst_port.count.incrvalue  = 24'(dr_d[fhg_rx_pkg::V_DST_PORT]);
        hwif_in.rx_drop_length.count.incr         = dr_v[fhg_rx_pkg::V_LENGTH];
        hwif_in.rx_drop_length.count.incrvalue    = 24'(dr_d[fhg_rx_pkg::V_LENGTH]);
        hwif_in.rx_drop_overrun.count.incr        = dr_v[fhg_rx_pkg::V_OVERRUN];
        hwif_in.rx_drop_overrun.count.incrvalue   = 24'(dr_d[fhg_rx_pkg::V_OVERRUN]);
        hwif_in.rx_drop_cpu_busy.count.incr       = dr_v[fhg_rx_pkg::V_CPU_BUSY];
        hwif_in.rx_drop_cpu_busy.count.incrvalue  = 24'(dr_d[fhg_rx_pkg::V_CPU_BUSY]);
        hwif_in.rx_drop_arp.count.incr            = dr_v[fhg_rx_pkg::V_ARP_DROP];
        hwif_in.rx_drop_arp.count.incrvalue       = 24'(dr_d[fhg_rx_pkg::V_ARP_DROP]);
        hwif_in.rx_drop_disabled.count.incr       = dr_v[fhg_rx_pkg::V_DISABLED];
        hwif_in.rx_drop_disabled.count.incrvalue  = 24'(dr_d[fhg_rx_pkg::V_DISABLED]);

        hwif_in.rdma_credit.chunk.we   = rdma_credit_we;
        hwif_in.rdma_credit.chunk.next = rdma_credit_next;
        hwif_in.rdma_next_psn.psn.next = rdma_st_psn;
        hwif_in.rdma_chunk.chunk.next  = rdma_st_chunk;
        hwif_in.rdma_datagrams_dropped.count.incr      = rdma_cnt_v[0];
        hwif_in.rdma_datagrams_dropped.count.incrvalue = 24'(rdma_cnt_d[16*0 +: 16]);
        hwif_in.rdma_datagrams.count.incr              = rdma_cnt_v[1];
        hwif_in.rdma_datagrams.count.incrvalue         = 24'(rdma_cnt_d[16*1 +: 16]);
        hwif_in.rdma_chunks_dropped.count.incr         = rdma_cnt_v[2];
        hwif_in.rdma_chunks_dropped.count.incrvalue    = 24'(rdma_cnt_d[16*2 +: 16]);
        hwif_in.rdma_chunks_sent.count.incr            = rdma_cnt_v[3];
        hwif_in.rdma_chunks_sent.count.incrvalue       = 24'(rdma_cnt_d[16*3 +: 16]);
        hwif_in.rdma_oversize.count.incr               = rdma_cnt_v[4];
        hwif_in.rdma_oversize.count.incrvalue          = 24'(rdma_cnt_d[16*4 +: 16]);
        hwif_in.rdma_credit_frames.count.incr          = rdma_cnt_v[5];
        hwif_in.rdma_credit_frames.count.incrvalue     = 24'(rdma_cnt_d[16*5 +: 16]);
        hwif_in.rdma_icrc_frames.count.incr            = rdma_cnt_v[6];
        hwif_in.rdma_icrc_frames.count.incrvalue       = 24'(rdma_cnt_d[16*6 +: 16]);
        hwif_in.rdma_credit_rejected.count.incr        = rdma_cnt_v[7];
        hwif_in.rdma_credit_rejected.count.incrvalue   = 24'(rdma_cnt_d[16*7 +: 16]);

        hwif_in.arp_table.rd_ack  = arp_ack_rd;
        hwif_in.arp_table.rd_data = arp_sel_q ? arp_w1_a : arp_w0_a;
        hwif_in.arp_table.wr_ack  = arp_ack_wr;
        hwif_in.cpu_tx_buf.rd_ack  = cpu_tx_ack_rd;
        hwif_in.cpu_tx_buf.rd_data = cpu_tx_a;
        hwif_in.cpu_tx_buf.wr_ack  = cpu_tx_ack_wr;
        hwif_in.cpu_rx_buf.rd_ack  = cpu_rx_ack_rd;
        hwif_in.cpu_rx_buf.rd_data = cpu_rx_a;
        hwif_in.cpu_rx_buf.wr_ack  = cpu_rx_ack_wr;
    end


    assign link_auto_bringup = hwif_out.link_ctrl.auto_bringup.value;
    assign link_restart      = hwif_out.link_ctrl.restart.value;
    assign link_max_retries  = hwif_out.link_ctrl.max_retries.value;
    assign link_gt_loopback  = hwif_out.link_ctrl.gt_loopback.value;

    // LEDs: link state and stretched TX activity (~2^22 user cycles ≈ 10 ms).
    logic link_u;
    fhg_sync_bits #(.WIDTH(1)) u_led_sync (
        .clk(user_clk), .rst(1'b0), .d(mac_link_up), .q(link_u));
    logic [21:0] tx_led_cnt;
    always_ff @(posedge user_clk) begin
        if (st_word) tx_led_cnt <= '1;
        else if (tx_led_cnt != 0) tx_led_cnt <= tx_led_cnt - 22'd1;
    end
    assign led_up = link_u;
    assign led_tx = tx_led_cnt != 0;
    fhg_sync_bits #(.WIDTH(1)) u_led_rx_sync (
        .clk(user_clk), .rst(1'b0), .d(rx_act_m), .q(led_rx));

    logic unused_ok;
    assign unused_ok = &{1'b0, st_underrun, dr_v[0], dr_d[0], AW[0], cpu_refused,
                         hwif_out.arp_table.wr_biten, hwif_out.cpu_tx_buf.wr_biten,
                         hwif_out.cpu_rx_buf.wr_biten, hwif_out.cpu_rx_buf.wr_data};
endmodule
