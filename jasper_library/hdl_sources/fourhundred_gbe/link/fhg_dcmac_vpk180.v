// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_dcmac_vpk180 — the VPK180's DCMAC (400GE, port 0) and GTM lanes, with the bring-up
// sequencer, presented with the DCMAC port-0 client ports of fhg_core.
//
// Contract
//   * Instantiates the block design wrapper `fhg_dcmac_bd_wrapper` that
//     jasper_library/yellow_blocks/vpk180_ip.py (dcmac_gtm_tcl) creates (DCMAC + two gt_quad_base + refclk
//     IBUFDS_GTME5 + BUFG_GT + clocking wizard) and `fhg_link_bringup`. Synthesis only: the
//     DCMAC is a hard block, so this module is not simulated; tests lint it against a port-only
//     black box of the block design (tests/test_fhg_dcmac_vpk180.py).
//   * Client ports keep the DCMAC's names, so they connect one to one (by name) to fhg_core's
//     tx_axis_* outputs / inputs and rx_axis_* inputs. Both directions run on `mac_clk`, the
//     391.03 MHz clock from the clocking wizard (the DCMAC's tx/rx_axi_clk): connect it to
//     fhg_core's tx_mac_clk and rx_mac_clk. `mac_rst` (synchronous to mac_clk) is high until
//     the bring-up has released the DCMAC and while the clocking wizard is unlocked: connect it
//     to tx_mac_rst and rx_mac_rst.
//   * axil_clk / axil_rst_n: the register clock and reset of fhg_core (CIPS AXI clock). They
//     clock the DCMAC's AXI4-Lite port, the GT quads' APB3 port and fhg_link_bringup, so the
//     link_* ports connect to fhg_core's register block without a crossing (see
//     jasper_library/hdl_sources/fourhundred_gbe/README.md, "Link bring-up").
//   * link_up goes to fhg_core's mac_link_up (synchronised there).
//   * tx_preamblein_0 carries the standard preamble; the DCMAC uses it only with a custom
//     preamble enabled, which fhg_link_bringup does not enable.
module fhg_dcmac_vpk180 #(
    parameter integer AXIL_CLK_HZ = 250000000  // register clock; scales the bring-up timing
) (
    // ---------------------------------------------------------------- register clock domain
    input  wire         axil_clk,
    input  wire         axil_rst_n,
    // link_ctrl (0x88)
    input  wire         link_auto_bringup,
    input  wire         link_restart,
    input  wire [7:0]   link_max_retries,
    input  wire [2:0]   link_gt_loopback,
    // link_status (0x8C), link_retries (0x90), rx_phy_status (0x94), link_down_counter (0x98)
    output wire [3:0]   link_state,
    output wire         link_gt_tx_ready,
    output wire         link_gt_rx_ready,
    output wire         link_rx_aligned,
    output wire         link_up,
    output wire         link_rx_local_fault,
    output wire         link_rx_remote_fault,
    output wire [31:0]  link_retries,
    output wire [31:0]  link_rx_phy_status,
    output wire         link_down,
    output wire         link_axi_error,
    output wire         link_axi_stall,
    output wire         gt_powergood,    // GTM quad power good (status only)

    // ---------------------------------------------------------------- DCMAC client, port 0
    output wire         mac_clk,
    output wire         mac_rst,
    input  wire         tx_axis_tvalid_0,
    output wire         tx_axis_tready_0,
    output wire         tx_axis_taf_0,
    input  wire [127:0]  tx_axis_tdata0, tx_axis_tdata1, tx_axis_tdata2, tx_axis_tdata3, tx_axis_tdata4, tx_axis_tdata5, tx_axis_tdata6, tx_axis_tdata7,
    input  wire          tx_axis_tuser_ena0, tx_axis_tuser_ena1, tx_axis_tuser_ena2, tx_axis_tuser_ena3, tx_axis_tuser_ena4, tx_axis_tuser_ena5, tx_axis_tuser_ena6, tx_axis_tuser_ena7,
    input  wire          tx_axis_tuser_sop0, tx_axis_tuser_sop1, tx_axis_tuser_sop2, tx_axis_tuser_sop3, tx_axis_tuser_sop4, tx_axis_tuser_sop5, tx_axis_tuser_sop6, tx_axis_tuser_sop7,
    input  wire          tx_axis_tuser_eop0, tx_axis_tuser_eop1, tx_axis_tuser_eop2, tx_axis_tuser_eop3, tx_axis_tuser_eop4, tx_axis_tuser_eop5, tx_axis_tuser_eop6, tx_axis_tuser_eop7,
    input  wire          tx_axis_tuser_err0, tx_axis_tuser_err1, tx_axis_tuser_err2, tx_axis_tuser_err3, tx_axis_tuser_err4, tx_axis_tuser_err5, tx_axis_tuser_err6, tx_axis_tuser_err7,
    input  wire [3:0]    tx_axis_tuser_mty0, tx_axis_tuser_mty1, tx_axis_tuser_mty2, tx_axis_tuser_mty3, tx_axis_tuser_mty4, tx_axis_tuser_mty5, tx_axis_tuser_mty6, tx_axis_tuser_mty7,
    output wire         rx_axis_tvalid_0,
    output wire [55:0]  rx_preambleout_0,
    output wire [127:0]  rx_axis_tdata0, rx_axis_tdata1, rx_axis_tdata2, rx_axis_tdata3, rx_axis_tdata4, rx_axis_tdata5, rx_axis_tdata6, rx_axis_tdata7,
    output wire          rx_axis_tuser_ena0, rx_axis_tuser_ena1, rx_axis_tuser_ena2, rx_axis_tuser_ena3, rx_axis_tuser_ena4, rx_axis_tuser_ena5, rx_axis_tuser_ena6, rx_axis_tuser_ena7,
    output wire          rx_axis_tuser_sop0, rx_axis_tuser_sop1, rx_axis_tuser_sop2, rx_axis_tuser_sop3, rx_axis_tuser_sop4, rx_axis_tuser_sop5, rx_axis_tuser_sop6, rx_axis_tuser_sop7,
    output wire          rx_axis_tuser_eop0, rx_axis_tuser_eop1, rx_axis_tuser_eop2, rx_axis_tuser_eop3, rx_axis_tuser_eop4, rx_axis_tuser_eop5, rx_axis_tuser_eop6, rx_axis_tuser_eop7,
    output wire          rx_axis_tuser_err0, rx_axis_tuser_err1, rx_axis_tuser_err2, rx_axis_tuser_err3, rx_axis_tuser_err4, rx_axis_tuser_err5, rx_axis_tuser_err6, rx_axis_tuser_err7,
    output wire [3:0]    rx_axis_tuser_mty0, rx_axis_tuser_mty1, rx_axis_tuser_mty2, rx_axis_tuser_mty3, rx_axis_tuser_mty4, rx_axis_tuser_mty5, rx_axis_tuser_mty6, rx_axis_tuser_mty7,

    // ---------------------------------------------------------------- board
    input  wire         gt_refclk_p,     // 156.25 MHz from the 8A34001 (see docs/hardware.md)
    input  wire         gt_refclk_n,
    input  wire [3:0]   gtm_q0_rx_p,
    input  wire [3:0]   gtm_q0_rx_n,
    output wire [3:0]   gtm_q0_tx_p,
    output wire [3:0]   gtm_q0_tx_n,
    input  wire [3:0]   gtm_q1_rx_p,
    input  wire [3:0]   gtm_q1_rx_n,
    output wire [3:0]   gtm_q1_tx_p,
    output wire [3:0]   gtm_q1_tx_n
);
    // Bring-up timing for this register clock (fhg_link_bringup's defaults assume 250 MHz).
    localparam integer CYC_10US  = AXIL_CLK_HZ / 100000;
    localparam integer CYC_10MS  = AXIL_CLK_HZ / 100;
    localparam integer CYC_100MS = AXIL_CLK_HZ / 10;

    wire        axil_rst = !axil_rst_n;
    wire        clk_locked;
    wire        bu_mac_rst;
    wire [3:0]  gt_reset_tx_datapath, gt_reset_rx_datapath;
    wire [3:0]  gt_tx_reset_done, gt_rx_reset_done;
    wire [2:0]  gt_loopback;
    wire        dcmac_tx_core_reset, dcmac_rx_core_reset;
    wire [5:0]  dcmac_tx_serdes_reset, dcmac_rx_serdes_reset;
    wire        m_axi_awvalid, m_axi_awready, m_axi_wvalid, m_axi_wready;
    wire        m_axi_bvalid, m_axi_bready, m_axi_arvalid, m_axi_arready;
    wire        m_axi_rvalid, m_axi_rready;
    wire [31:0] m_axi_awaddr, m_axi_araddr, m_axi_wdata, m_axi_rdata;
    wire [3:0]  m_axi_wstrb;
    // The DCMAC's AXI4-Lite port has no prot signals.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [2:0]  m_axi_awprot, m_axi_arprot;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [1:0]  m_axi_bresp, m_axi_rresp;

    fhg_link_bringup #(
        .NUM_LANES          (4),
        .ADDR_W             (32),
        .GT_RESET_CYCLES    (CYC_10US),
        .GT_READY_TIMEOUT   (CYC_100MS),
        .DCMAC_RESET_CYCLES (CYC_10US),
        .RX_RESET_CYCLES    (CYC_10US),
        .SETTLE_CYCLES      (CYC_10MS),
        .MONITOR_CYCLES     (CYC_100MS)
    ) u_bringup (
        .clk                   (axil_clk),
        .rst                   (axil_rst),
        .auto_bringup          (link_auto_bringup),
        .restart               (link_restart),
        .max_retries           (link_max_retries),
        .gt_loopback_in        (link_gt_loopback),
        .state                 (link_state),
        .gt_tx_ready           (link_gt_tx_ready),
        .gt_rx_ready           (link_gt_rx_ready),
        .rx_aligned            (link_rx_aligned),
        .link_up               (link_up),
        .rx_local_fault        (link_rx_local_fault),
        .rx_remote_fault       (link_rx_remote_fault),
        .retries               (link_retries),
        .rx_phy_status         (link_rx_phy_status),
        .link_down             (link_down),
        .axi_error             (link_axi_error),
        .axi_stall             (link_axi_stall),
        .gt_reset_tx_datapath  (gt_reset_tx_datapath),
        .gt_reset_rx_datapath  (gt_reset_rx_datapath),
        .gt_tx_reset_done      (gt_tx_reset_done),
        .gt_rx_reset_done      (gt_rx_reset_done),
        .gt_loopback           (gt_loopback),
        .dcmac_tx_core_reset   (dcmac_tx_core_reset),
        .dcmac_rx_core_reset   (dcmac_rx_core_reset),
        .dcmac_tx_serdes_reset (dcmac_tx_serdes_reset),
        .dcmac_rx_serdes_reset (dcmac_rx_serdes_reset),
        .mac_rst               (bu_mac_rst),
        .m_axi_awvalid (m_axi_awvalid), .m_axi_awready (m_axi_awready),
        .m_axi_awaddr  (m_axi_awaddr),  .m_axi_awprot  (m_axi_awprot),
        .m_axi_wvalid  (m_axi_wvalid),  .m_axi_wready  (m_axi_wready),
        .m_axi_wdata   (m_axi_wdata),   .m_axi_wstrb   (m_axi_wstrb),
        .m_axi_bvalid  (m_axi_bvalid),  .m_axi_bready  (m_axi_bready),
        .m_axi_bresp   (m_axi_bresp),
        .m_axi_arvalid (m_axi_arvalid), .m_axi_arready (m_axi_arready),
        .m_axi_araddr  (m_axi_araddr),  .m_axi_arprot  (m_axi_arprot),
        .m_axi_rvalid  (m_axi_rvalid),  .m_axi_rready  (m_axi_rready),
        .m_axi_rdata   (m_axi_rdata),   .m_axi_rresp   (m_axi_rresp)
    );

    // MAC-side reset: the bring-up's reset (register clock) or an unlocked clocking wizard,
    // synchronised into mac_clk; it asserts within a few mac_clk cycles and releases cleanly.
    fhg_sync_bits #(.WIDTH(1), .STAGES(3)) u_mac_rst_sync (
        .clk (mac_clk),
        .rst (1'b0),
        .d   (bu_mac_rst || !clk_locked),
        .q   (mac_rst)
    );

    fhg_dcmac_bd_wrapper u_bd (
        .s_axi_aclk    (axil_clk),
        .s_axi_aresetn (axil_rst_n),
        .s_axi_awaddr  (m_axi_awaddr),  .s_axi_awvalid (m_axi_awvalid), .s_axi_awready (m_axi_awready),
        .s_axi_wdata   (m_axi_wdata),   .s_axi_wstrb   (m_axi_wstrb),
        .s_axi_wvalid  (m_axi_wvalid),  .s_axi_wready  (m_axi_wready),
        .s_axi_bresp   (m_axi_bresp),   .s_axi_bvalid  (m_axi_bvalid),  .s_axi_bready  (m_axi_bready),
        .s_axi_araddr  (m_axi_araddr),  .s_axi_arvalid (m_axi_arvalid), .s_axi_arready (m_axi_arready),
        .s_axi_rdata   (m_axi_rdata),   .s_axi_rresp   (m_axi_rresp),
        .s_axi_rvalid  (m_axi_rvalid),  .s_axi_rready  (m_axi_rready),
        .axis_clk      (mac_clk),
        .clk_locked    (clk_locked),
        .tx_core_reset (dcmac_tx_core_reset),
        .rx_core_reset (dcmac_rx_core_reset),
        .tx_serdes_reset (dcmac_tx_serdes_reset),
        .rx_serdes_reset (dcmac_rx_serdes_reset),
        .gt_loopback   (gt_loopback),
        .gtpowergood   (gt_powergood),
        .gt_reset_tx_datapath_in_0 (gt_reset_tx_datapath[0]), .gt_reset_tx_datapath_in_1 (gt_reset_tx_datapath[1]),
        .gt_reset_tx_datapath_in_2 (gt_reset_tx_datapath[2]), .gt_reset_tx_datapath_in_3 (gt_reset_tx_datapath[3]),
        .gt_reset_rx_datapath_in_0 (gt_reset_rx_datapath[0]), .gt_reset_rx_datapath_in_1 (gt_reset_rx_datapath[1]),
        .gt_reset_rx_datapath_in_2 (gt_reset_rx_datapath[2]), .gt_reset_rx_datapath_in_3 (gt_reset_rx_datapath[3]),
        .gt_tx_reset_done_out_0 (gt_tx_reset_done[0]), .gt_tx_reset_done_out_1 (gt_tx_reset_done[1]),
        .gt_tx_reset_done_out_2 (gt_tx_reset_done[2]), .gt_tx_reset_done_out_3 (gt_tx_reset_done[3]),
        .gt_rx_reset_done_out_0 (gt_rx_reset_done[0]), .gt_rx_reset_done_out_1 (gt_rx_reset_done[1]),
        .gt_rx_reset_done_out_2 (gt_rx_reset_done[2]), .gt_rx_reset_done_out_3 (gt_rx_reset_done[3]),
        .tx_axis_tvalid_0 (tx_axis_tvalid_0),
        .tx_axis_tready_0 (tx_axis_tready_0),
        .tx_axis_taf_0    (tx_axis_taf_0),
        .tx_preamblein_0  (56'h55_5555_5555_5555),
        .rx_axis_tvalid_0 (rx_axis_tvalid_0),
        .rx_preambleout_0 (rx_preambleout_0),
        .tx_axis_tdata0(tx_axis_tdata0), .tx_axis_tdata1(tx_axis_tdata1), .tx_axis_tdata2(tx_axis_tdata2), .tx_axis_tdata3(tx_axis_tdata3), .tx_axis_tdata4(tx_axis_tdata4), .tx_axis_tdata5(tx_axis_tdata5), .tx_axis_tdata6(tx_axis_tdata6), .tx_axis_tdata7(tx_axis_tdata7),
        .tx_axis_tuser_ena0(tx_axis_tuser_ena0), .tx_axis_tuser_ena1(tx_axis_tuser_ena1), .tx_axis_tuser_ena2(tx_axis_tuser_ena2), .tx_axis_tuser_ena3(tx_axis_tuser_ena3), .tx_axis_tuser_ena4(tx_axis_tuser_ena4), .tx_axis_tuser_ena5(tx_axis_tuser_ena5), .tx_axis_tuser_ena6(tx_axis_tuser_ena6), .tx_axis_tuser_ena7(tx_axis_tuser_ena7),
        .tx_axis_tuser_sop0(tx_axis_tuser_sop0), .tx_axis_tuser_sop1(tx_axis_tuser_sop1), .tx_axis_tuser_sop2(tx_axis_tuser_sop2), .tx_axis_tuser_sop3(tx_axis_tuser_sop3), .tx_axis_tuser_sop4(tx_axis_tuser_sop4), .tx_axis_tuser_sop5(tx_axis_tuser_sop5), .tx_axis_tuser_sop6(tx_axis_tuser_sop6), .tx_axis_tuser_sop7(tx_axis_tuser_sop7),
        .tx_axis_tuser_eop0(tx_axis_tuser_eop0), .tx_axis_tuser_eop1(tx_axis_tuser_eop1), .tx_axis_tuser_eop2(tx_axis_tuser_eop2), .tx_axis_tuser_eop3(tx_axis_tuser_eop3), .tx_axis_tuser_eop4(tx_axis_tuser_eop4), .tx_axis_tuser_eop5(tx_axis_tuser_eop5), .tx_axis_tuser_eop6(tx_axis_tuser_eop6), .tx_axis_tuser_eop7(tx_axis_tuser_eop7),
        .tx_axis_tuser_err0(tx_axis_tuser_err0), .tx_axis_tuser_err1(tx_axis_tuser_err1), .tx_axis_tuser_err2(tx_axis_tuser_err2), .tx_axis_tuser_err3(tx_axis_tuser_err3), .tx_axis_tuser_err4(tx_axis_tuser_err4), .tx_axis_tuser_err5(tx_axis_tuser_err5), .tx_axis_tuser_err6(tx_axis_tuser_err6), .tx_axis_tuser_err7(tx_axis_tuser_err7),
        .tx_axis_tuser_mty0(tx_axis_tuser_mty0), .tx_axis_tuser_mty1(tx_axis_tuser_mty1), .tx_axis_tuser_mty2(tx_axis_tuser_mty2), .tx_axis_tuser_mty3(tx_axis_tuser_mty3), .tx_axis_tuser_mty4(tx_axis_tuser_mty4), .tx_axis_tuser_mty5(tx_axis_tuser_mty5), .tx_axis_tuser_mty6(tx_axis_tuser_mty6), .tx_axis_tuser_mty7(tx_axis_tuser_mty7),
        .rx_axis_tdata0(rx_axis_tdata0), .rx_axis_tdata1(rx_axis_tdata1), .rx_axis_tdata2(rx_axis_tdata2), .rx_axis_tdata3(rx_axis_tdata3), .rx_axis_tdata4(rx_axis_tdata4), .rx_axis_tdata5(rx_axis_tdata5), .rx_axis_tdata6(rx_axis_tdata6), .rx_axis_tdata7(rx_axis_tdata7),
        .rx_axis_tuser_ena0(rx_axis_tuser_ena0), .rx_axis_tuser_ena1(rx_axis_tuser_ena1), .rx_axis_tuser_ena2(rx_axis_tuser_ena2), .rx_axis_tuser_ena3(rx_axis_tuser_ena3), .rx_axis_tuser_ena4(rx_axis_tuser_ena4), .rx_axis_tuser_ena5(rx_axis_tuser_ena5), .rx_axis_tuser_ena6(rx_axis_tuser_ena6), .rx_axis_tuser_ena7(rx_axis_tuser_ena7),
        .rx_axis_tuser_sop0(rx_axis_tuser_sop0), .rx_axis_tuser_sop1(rx_axis_tuser_sop1), .rx_axis_tuser_sop2(rx_axis_tuser_sop2), .rx_axis_tuser_sop3(rx_axis_tuser_sop3), .rx_axis_tuser_sop4(rx_axis_tuser_sop4), .rx_axis_tuser_sop5(rx_axis_tuser_sop5), .rx_axis_tuser_sop6(rx_axis_tuser_sop6), .rx_axis_tuser_sop7(rx_axis_tuser_sop7),
        .rx_axis_tuser_eop0(rx_axis_tuser_eop0), .rx_axis_tuser_eop1(rx_axis_tuser_eop1), .rx_axis_tuser_eop2(rx_axis_tuser_eop2), .rx_axis_tuser_eop3(rx_axis_tuser_eop3), .rx_axis_tuser_eop4(rx_axis_tuser_eop4), .rx_axis_tuser_eop5(rx_axis_tuser_eop5), .rx_axis_tuser_eop6(rx_axis_tuser_eop6), .rx_axis_tuser_eop7(rx_axis_tuser_eop7),
        .rx_axis_tuser_err0(rx_axis_tuser_err0), .rx_axis_tuser_err1(rx_axis_tuser_err1), .rx_axis_tuser_err2(rx_axis_tuser_err2), .rx_axis_tuser_err3(rx_axis_tuser_err3), .rx_axis_tuser_err4(rx_axis_tuser_err4), .rx_axis_tuser_err5(rx_axis_tuser_err5), .rx_axis_tuser_err6(rx_axis_tuser_err6), .rx_axis_tuser_err7(rx_axis_tuser_err7),
        .rx_axis_tuser_mty0(rx_axis_tuser_mty0), .rx_axis_tuser_mty1(rx_axis_tuser_mty1), .rx_axis_tuser_mty2(rx_axis_tuser_mty2), .rx_axis_tuser_mty3(rx_axis_tuser_mty3), .rx_axis_tuser_mty4(rx_axis_tuser_mty4), .rx_axis_tuser_mty5(rx_axis_tuser_mty5), .rx_axis_tuser_mty6(rx_axis_tuser_mty6), .rx_axis_tuser_mty7(rx_axis_tuser_mty7),
        .gt_refclk_clk_p    (gt_refclk_p),
        .gt_refclk_clk_n    (gt_refclk_n),
        .gtm_serial_0_grx_p (gtm_q0_rx_p),
        .gtm_serial_0_grx_n (gtm_q0_rx_n),
        .gtm_serial_0_gtx_p (gtm_q0_tx_p),
        .gtm_serial_0_gtx_n (gtm_q0_tx_n),
        .gtm_serial_1_grx_p (gtm_q1_rx_p),
        .gtm_serial_1_grx_n (gtm_q1_rx_n),
        .gtm_serial_1_gtx_p (gtm_q1_tx_p),
        .gtm_serial_1_gtx_n (gtm_q1_tx_n)
    );
endmodule
