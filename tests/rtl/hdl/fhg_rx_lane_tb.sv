// SPDX-License-Identifier: GPL-3.0-or-later
// Test top for fhg_rx_lane, one receive lane (realignment, filter, verdict, lane FIFO): the
// filter configuration and the CPU buffer's writes as plain ports. Not for synthesis.
module fhg_rx_lane_tb (
    input  wire          clk,
    input  wire          rst,

    input  wire          in_valid,
    input  wire [1023:0] in_data,
    input  wire [2:0]    in_lo,
    input  wire [3:0]    in_n,
    input  wire          in_sop,
    input  wire          in_eop,
    input  wire          in_err,
    input  wire [3:0]    in_mty,
    input  wire [2:0]    in_tag,

    input  wire [47:0]   cfg_mac,
    input  wire [31:0]   cfg_ip,
    input  wire [31:0]   cfg_netmask,
    input  wire [31:0]   cfg_mc_ip,
    input  wire [31:0]   cfg_mc_mask,
    input  wire [15:0]   cfg_port,
    input  wire          cfg_promisc,
    input  wire          cfg_cpu_rx_en,
    input  wire          cfg_arp_reply_en,
    input  wire          cfg_arp_learn_en,
    input  wire          cfg_fabric_en,

    output wire          hdr_evt,
    output wire [2:0]    hdr_tag,
    input  wire          acc_room,
    output wire          cpu_want,
    input  wire          cpu_grant,
    input  wire          arp_room,
    output wire          acc_push,
    output wire [116:0]  acc_meta,
    output wire [2:0]    acc_tag,

    output wire          lf_valid,
    output wire [1033:0] lf_data,
    input  wire          lf_pop,

    output wire          cpu_we0,
    output wire [6:0]    cpu_row0,
    output wire [1023:0] cpu_data0,
    output wire          cpu_we1,
    output wire [6:0]    cpu_row1,
    output wire [1023:0] cpu_data1,
    output wire          cpu_end,
    output wire          cpu_end_ok,
    output wire [13:0]   cpu_len,

    output wire          arp_evt,
    output wire          arp_evt_reply,
    output wire [47:0]   arp_sha,
    output wire [31:0]   arp_spa,
    output wire [2:0]    ev_tag,

    output wire          vd_valid,
    output wire [4:0]    vd_code,
    output wire [14:0]   vd_bytes
);
    fhg_bus_pkg::rx_cpu_wr_t cpu_wr;
    assign {cpu_we0, cpu_row0, cpu_data0, cpu_we1, cpu_row1, cpu_data1} = cpu_wr;
    fhg_rx_lane u_dut (
        .clk(clk), .rst(rst),
        .in_valid(in_valid), .in_data(in_data), .in_lo(in_lo), .in_n(in_n), .in_sop(in_sop),
        .in_eop(in_eop), .in_err(in_err), .in_mty(in_mty), .in_tag(in_tag),
        .cfg({cfg_mac, cfg_ip, cfg_netmask, cfg_mc_ip, cfg_mc_mask, cfg_port, cfg_promisc,
              cfg_cpu_rx_en, cfg_arp_reply_en, cfg_arp_learn_en, cfg_fabric_en}),
        .hdr_evt(hdr_evt), .hdr_tag(hdr_tag), .acc_room(acc_room), .cpu_want(cpu_want),
        .cpu_grant(cpu_grant), .arp_room(arp_room), .acc_push(acc_push),
        .acc_meta(acc_meta), .acc_tag(acc_tag),
        .lf_valid(lf_valid), .lf_data(lf_data), .lf_pop(lf_pop),
        .cpu_wr(cpu_wr), .cpu_end(cpu_end), .cpu_end_ok(cpu_end_ok), .cpu_len(cpu_len),
        .arp_evt(arp_evt), .arp_evt_reply(arp_evt_reply), .arp_sha(arp_sha),
        .arp_spa(arp_spa), .ev_tag(ev_tag),
        .vd_valid(vd_valid), .vd_code(vd_code), .vd_bytes(vd_bytes)
    );
endmodule
