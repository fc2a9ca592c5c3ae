// SPDX-License-Identifier: GPL-3.0-or-later
// Test top for fhg_tx_path: DCMAC port names as on the real IP, the ARP-reply input and
// the configuration as plain ports, the CPU frame source idle. Not for synthesis.
module fhg_tx_path_tb (
    input  wire          user_clk, rst, accept,
    input  wire [1023:0] tx_data,
    input  wire          tx_valid,
    input  wire [127:0]  tx_byte_enable,
    input  wire [31:0]   tx_dest_ip, input wire [15:0] tx_dest_port,
    input  wire          tx_end_of_frame,
    output wire          tx_afull, tx_overflow,

    input  wire          tx_mac_clk,
    input  wire          tx_mac_rst,
    input  wire [47:0]   cfg_mac,
    input  wire [31:0]   cfg_ip,
    input  wire [31:0]   cfg_netmask,
    input  wire [31:0]   cfg_gateway,
    input  wire [15:0]   cfg_port,
    input  wire [7:0]    cfg_ttl,
    input  wire          cfg_udp_csum,
    output wire [7:0]    arp_addr,
    input  wire [63:0]   arp_entry,
    input  wire          arp_valid,
    input  wire [511:0]  arp_frame,
    output wire          arp_ready,
    output wire          stat_arp_sent,

    output wire          tx_axis_tvalid_0,
    input  wire          tx_axis_tready_0,
    input  wire          tx_axis_taf_0,
    output wire [127:0]  tx_axis_tdata0, tx_axis_tdata1, tx_axis_tdata2, tx_axis_tdata3,
    output wire [127:0]  tx_axis_tdata4, tx_axis_tdata5, tx_axis_tdata6, tx_axis_tdata7,
    output wire          tx_axis_tuser_ena0, tx_axis_tuser_ena1, tx_axis_tuser_ena2,
    output wire          tx_axis_tuser_ena3, tx_axis_tuser_ena4, tx_axis_tuser_ena5,
    output wire          tx_axis_tuser_ena6, tx_axis_tuser_ena7,
    output wire          tx_axis_tuser_sop0, tx_axis_tuser_sop1, tx_axis_tuser_sop2,
    output wire          tx_axis_tuser_sop3, tx_axis_tuser_sop4, tx_axis_tuser_sop5,
    output wire          tx_axis_tuser_sop6, tx_axis_tuser_sop7,
    output wire          tx_axis_tuser_eop0, tx_axis_tuser_eop1, tx_axis_tuser_eop2,
    output wire          tx_axis_tuser_eop3, tx_axis_tuser_eop4, tx_axis_tuser_eop5,
    output wire          tx_axis_tuser_eop6, tx_axis_tuser_eop7,
    output wire          tx_axis_tuser_err0, tx_axis_tuser_err1, tx_axis_tuser_err2,
    output wire          tx_axis_tuser_err3, tx_axis_tuser_err4, tx_axis_tuser_err5,
    output wire          tx_axis_tuser_err6, tx_axis_tuser_err7,
    output wire [3:0]    tx_axis_tuser_mty0, tx_axis_tuser_mty1, tx_axis_tuser_mty2,
    output wire [3:0]    tx_axis_tuser_mty3, tx_axis_tuser_mty4, tx_axis_tuser_mty5,
    output wire [3:0]    tx_axis_tuser_mty6, tx_axis_tuser_mty7
);
    fhg_bus_pkg::tx_user_st_t tx_st;
    assign tx_afull    = tx_st.afull;
    assign tx_overflow = tx_st.overflow;
    fhg_bus_pkg::seg_bus_t seg;
    fhg_tx_path u_dut (
        .user_clk(user_clk), .user_rst(rst), .soft_rst_user(1'b0), .accept(accept),
        .tx({tx_data, tx_valid, tx_byte_enable, tx_dest_ip, tx_dest_port, tx_end_of_frame}),
        .tx_st(tx_st),
        .rdma_en(1'b0), .rdma_cfg('0), .rdma_st(), .rdma_stat(),
        .mac_clk(tx_mac_clk), .mac_rst(tx_mac_rst),
        .cfg({cfg_mac, cfg_ip, cfg_netmask, cfg_gateway, cfg_port, cfg_ttl, cfg_udp_csum}),
        .cfg_rdma_en(1'b0), .arp_addr(arp_addr), .arp_entry(arp_entry),
        .next_ip_id(),
        .arp_valid(arp_valid), .arp_frame(arp_frame), .arp_ready(arp_ready),
        .cpu_valid(1'b0), .cpu_nseg(10'd0), .cpu_mty(4'd0), .cpu_word(1024'd0),
        .cpu_word_valid(1'b0), .cpu_pop(), .cpu_done(),
        .tx_tvalid(tx_axis_tvalid_0), .tx_tready(tx_axis_tready_0), .tx_taf(tx_axis_taf_0),
        .tx_seg(seg),
        .stat_frames(), .stat_bytes(), .stat_payload(), .stat_arp_miss(), .stat_underrun(),
        .stat_arp_sent(stat_arp_sent), .stat_cpu_sent(), .stat_ctl_frame(), .stat_ctl_bytes()
    );
    assign {tx_axis_tdata7, tx_axis_tdata6, tx_axis_tdata5, tx_axis_tdata4,
            tx_axis_tdata3, tx_axis_tdata2, tx_axis_tdata1, tx_axis_tdata0} = seg.tdata;
    assign {tx_axis_tuser_ena7, tx_axis_tuser_ena6, tx_axis_tuser_ena5, tx_axis_tuser_ena4,
            tx_axis_tuser_ena3, tx_axis_tuser_ena2, tx_axis_tuser_ena1, tx_axis_tuser_ena0} = seg.ena;
    assign {tx_axis_tuser_sop7, tx_axis_tuser_sop6, tx_axis_tuser_sop5, tx_axis_tuser_sop4,
            tx_axis_tuser_sop3, tx_axis_tuser_sop2, tx_axis_tuser_sop1, tx_axis_tuser_sop0} = seg.sop;
    assign {tx_axis_tuser_eop7, tx_axis_tuser_eop6, tx_axis_tuser_eop5, tx_axis_tuser_eop4,
            tx_axis_tuser_eop3, tx_axis_tuser_eop2, tx_axis_tuser_eop1, tx_axis_tuser_eop0} = seg.eop;
    assign {tx_axis_tuser_err7, tx_axis_tuser_err6, tx_axis_tuser_err5, tx_axis_tuser_err4,
            tx_axis_tuser_err3, tx_axis_tuser_err2, tx_axis_tuser_err1, tx_axis_tuser_err0} = seg.err;
    assign {tx_axis_tuser_mty7, tx_axis_tuser_mty6, tx_axis_tuser_mty5, tx_axis_tuser_mty4,
            tx_axis_tuser_mty3, tx_axis_tuser_mty2, tx_axis_tuser_mty1, tx_axis_tuser_mty0} = seg.mty;
endmodule
