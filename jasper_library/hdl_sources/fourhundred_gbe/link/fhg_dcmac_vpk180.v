// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_dcmac_vpk180 — the link control of one of the VPK180's DCMACs (400GE, port 0): the
// bring-up sequencer and the MAC-side reset, between fhg_core and the DCMAC/GTM block
// design of its cage.
//
// Contract
//   * One per 400GbE block. The block design `<bd>_wrapper` that
//     jasper_library/yellow_blocks/vpk180_ip.py (dcmac_gtm_tcl) creates for the block's cage
//     (DCMAC + two gt_quad_base + refclk IBUFDS_GTME5 + BUFG_GT + clocking wizard; one per
//     cage, each design named after its cage) is instantiated beside this module in the
//     design's top level, not in it, so that any number of them can coexist: each has a
//     module name of its own. The yellow block (vpk180_dcmac.py) joins them by port name:
//     the ports below the "block design" line have the block design's own names and the
//     opposite directions; its client ports (tx_axis_*, rx_axis_*) connect to fhg_core's
//     ports of the same names directly. Synthesis only: the DCMAC is a hard block, so this
//     module is not simulated; tests lint it against a port-only black box of the block
//     design (tests/toolflow/test_fhg_dcmac_vpk180.py).
//   * `mac_clk` is the block design's `axis_clk` (391.03 MHz from its clocking wizard, the
//     DCMAC's tx/rx_axi_clk); it clocks fhg_core's tx_mac_clk and rx_mac_clk too. `mac_rst`
//     (synchronous to mac_clk) is high until the bring-up has released the DCMAC and while
//     the clocking wizard is unlocked (`clk_locked` low): connect it to tx_mac_rst and
//     rx_mac_rst.
//   * axil_clk / axil_rst_n: the register clock and reset of fhg_core (CIPS AXI clock). They
//     clock the DCMAC's AXI4-Lite port, the GT quads' APB3 port (in the block design) and
//     fhg_link_bringup, so the link_* ports connect to fhg_core's register block without a
//     crossing (see jasper_library/hdl_sources/fourhundred_gbe/README.md, "Link bring-up").
//   * link_up goes to fhg_core's mac_link_up (synchronised there); gt_powergood is the
//     block design's gtpowergood, for fhg_core's link_status.
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

    // ---------------------------------------------------------------- MAC clock domain
    input  wire         mac_clk,         // the block design's axis_clk
    output wire         mac_rst,

    // ---------------------------------------------------------------- block design
    // DCMAC AXI4-Lite (s_axi_*: the block design's slave, driven from here), axil_clk
    output wire [31:0]  s_axi_awaddr,
    output wire         s_axi_awvalid,
    input  wire         s_axi_awready,
    output wire [31:0]  s_axi_wdata,
    output wire [3:0]   s_axi_wstrb,
    output wire         s_axi_wvalid,
    input  wire         s_axi_wready,
    input  wire [1:0]   s_axi_bresp,
    input  wire         s_axi_bvalid,
    output wire         s_axi_bready,
    output wire [31:0]  s_axi_araddr,
    output wire         s_axi_arvalid,
    input  wire         s_axi_arready,
    input  wire [31:0]  s_axi_rdata,
    input  wire [1:0]   s_axi_rresp,
    input  wire         s_axi_rvalid,
    output wire         s_axi_rready,
    // resets, loopback and status of the DCMAC and the GT channels
    input  wire         clk_locked,
    input  wire         gtpowergood,
    output wire         tx_core_reset,
    output wire         rx_core_reset,
    output wire [5:0]   tx_serdes_reset,
    output wire [5:0]   rx_serdes_reset,
    output wire [2:0]   gt_loopback,
    output wire         gt_reset_tx_datapath_in_0, gt_reset_tx_datapath_in_1,
    output wire         gt_reset_tx_datapath_in_2, gt_reset_tx_datapath_in_3,
    output wire         gt_reset_rx_datapath_in_0, gt_reset_rx_datapath_in_1,
    output wire         gt_reset_rx_datapath_in_2, gt_reset_rx_datapath_in_3,
    input  wire         gt_tx_reset_done_out_0, gt_tx_reset_done_out_1,
    input  wire         gt_tx_reset_done_out_2, gt_tx_reset_done_out_3,
    input  wire         gt_rx_reset_done_out_0, gt_rx_reset_done_out_1,
    input  wire         gt_rx_reset_done_out_2, gt_rx_reset_done_out_3
);
    // Bring-up timing for this register clock (fhg_link_bringup's defaults assume 250 MHz).
    localparam integer CYC_10US  = AXIL_CLK_HZ / 100000;
    localparam integer CYC_10MS  = AXIL_CLK_HZ / 100;
    localparam integer CYC_100MS = AXIL_CLK_HZ / 10;

    wire        axil_rst = !axil_rst_n;
    wire        bu_mac_rst;
    wire [3:0]  gt_reset_tx_datapath, gt_reset_rx_datapath;
    // The DCMAC's AXI4-Lite port has no prot signals.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [2:0]  m_axi_awprot, m_axi_arprot;
    /* verilator lint_on UNUSEDSIGNAL */

    assign gt_reset_tx_datapath_in_0 = gt_reset_tx_datapath[0];
    assign gt_reset_tx_datapath_in_1 = gt_reset_tx_datapath[1];
    assign gt_reset_tx_datapath_in_2 = gt_reset_tx_datapath[2];
    assign gt_reset_tx_datapath_in_3 = gt_reset_tx_datapath[3];
    assign gt_reset_rx_datapath_in_0 = gt_reset_rx_datapath[0];
    assign gt_reset_rx_datapath_in_1 = gt_reset_rx_datapath[1];
    assign gt_reset_rx_datapath_in_2 = gt_reset_rx_datapath[2];
    assign gt_reset_rx_datapath_in_3 = gt_reset_rx_datapath[3];
    assign gt_powergood = gtpowergood;

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
        .gt_tx_reset_done      ({gt_tx_reset_done_out_3, gt_tx_reset_done_out_2,
                                 gt_tx_reset_done_out_1, gt_tx_reset_done_out_0}),
        .gt_rx_reset_done      ({gt_rx_reset_done_out_3, gt_rx_reset_done_out_2,
                                 gt_rx_reset_done_out_1, gt_rx_reset_done_out_0}),
        .gt_loopback           (gt_loopback),
        .dcmac_tx_core_reset   (tx_core_reset),
        .dcmac_rx_core_reset   (rx_core_reset),
        .dcmac_tx_serdes_reset (tx_serdes_reset),
        .dcmac_rx_serdes_reset (rx_serdes_reset),
        .mac_rst               (bu_mac_rst),
        .m_axi_awvalid (s_axi_awvalid), .m_axi_awready (s_axi_awready),
        .m_axi_awaddr  (s_axi_awaddr),  .m_axi_awprot  (m_axi_awprot),
        .m_axi_wvalid  (s_axi_wvalid),  .m_axi_wready  (s_axi_wready),
        .m_axi_wdata   (s_axi_wdata),   .m_axi_wstrb   (s_axi_wstrb),
        .m_axi_bvalid  (s_axi_bvalid),  .m_axi_bready  (s_axi_bready),
        .m_axi_bresp   (s_axi_bresp),
        .m_axi_arvalid (s_axi_arvalid), .m_axi_arready (s_axi_arready),
        .m_axi_araddr  (s_axi_araddr),  .m_axi_arprot  (m_axi_arprot),
        .m_axi_rvalid  (s_axi_rvalid),  .m_axi_rready  (s_axi_rready),
        .m_axi_rdata   (s_axi_rdata),   .m_axi_rresp   (s_axi_rresp)
    );

    // MAC-side reset: the bring-up's reset (register clock) or an unlocked clocking wizard,
    // synchronised into mac_clk; it asserts within a few mac_clk cycles and releases cleanly.
    fhg_sync_bits #(.WIDTH(1), .STAGES(3)) u_mac_rst_sync (
        .clk (mac_clk),
        .rst (1'b0),
        .d   (bu_mac_rst || !clk_locked),
        .q   (mac_rst)
    );

endmodule
