// SPDX-License-Identifier: GPL-3.0-or-later
// Test top for fhg_tx_icrc: the packer side as packed vectors driven by the test, the
// DCMAC side with the IP's port names (for verification/models/dcmac_tx.py). Not for
// synthesis.
module fhg_tx_icrc_tb (
    input  wire          clk,
    input  wire          rst,
    input  wire          cfg_en,
    input  wire          in_tvalid,
    output wire          in_tready,
    input  wire [1023:0] in_tdata,
    input  wire [7:0]    in_ena,
    input  wire [7:0]    in_sop,
    input  wire [7:0]    in_eop,
    input  wire [7:0]    in_err,
    input  wire [31:0]   in_mty,
    output wire [1:0]    stat_patched,

    output wire          tx_axis_tvalid_0,
    input  wire          tx_axis_tready_0,
    input  wire          tx_axis_taf_0,
    output wire [127:0]  tx_axis_tdata0, tx_axis_tdata1, tx_axis_tdata2, tx_axis_tdata3, tx_axis_tdata4, tx_axis_tdata5, tx_axis_tdata6, tx_axis_tdata7,
    output wire          tx_axis_tuser_ena0, tx_axis_tuser_ena1, tx_axis_tuser_ena2, tx_axis_tuser_ena3, tx_axis_tuser_ena4, tx_axis_tuser_ena5, tx_axis_tuser_ena6, tx_axis_tuser_ena7,
    output wire          tx_axis_tuser_sop0, tx_axis_tuser_sop1, tx_axis_tuser_sop2, tx_axis_tuser_sop3, tx_axis_tuser_sop4, tx_axis_tuser_sop5, tx_axis_tuser_sop6, tx_axis_tuser_sop7,
    output wire          tx_axis_tuser_eop0, tx_axis_tuser_eop1, tx_axis_tuser_eop2, tx_axis_tuser_eop3, tx_axis_tuser_eop4, tx_axis_tuser_eop5, tx_axis_tuser_eop6, tx_axis_tuser_eop7,
    output wire          tx_axis_tuser_err0, tx_axis_tuser_err1, tx_axis_tuser_err2, tx_axis_tuser_err3, tx_axis_tuser_err4, tx_axis_tuser_err5, tx_axis_tuser_err6, tx_axis_tuser_err7,
    output wire [3:0]    tx_axis_tuser_mty0, tx_axis_tuser_mty1, tx_axis_tuser_mty2, tx_axis_tuser_mty3, tx_axis_tuser_mty4, tx_axis_tuser_mty5, tx_axis_tuser_mty6, tx_axis_tuser_mty7
);
    fhg_bus_pkg::seg_bus_t seg;
    fhg_tx_icrc u_dut (
        .clk(clk), .rst(rst), .cfg_en(cfg_en),
        .in_tvalid(in_tvalid), .in_tready(in_tready),
        .in_seg({in_tdata, in_ena, in_sop, in_eop, in_err, in_mty}),
        .tx_tvalid(tx_axis_tvalid_0), .tx_tready(tx_axis_tready_0), .tx_seg(seg),
        .stat_patched(stat_patched)
    );
    assign {tx_axis_tdata7, tx_axis_tdata6, tx_axis_tdata5, tx_axis_tdata4, tx_axis_tdata3, tx_axis_tdata2, tx_axis_tdata1, tx_axis_tdata0} = seg.tdata;
    assign {tx_axis_tuser_ena7, tx_axis_tuser_ena6, tx_axis_tuser_ena5, tx_axis_tuser_ena4, tx_axis_tuser_ena3, tx_axis_tuser_ena2, tx_axis_tuser_ena1, tx_axis_tuser_ena0} = seg.ena;
    assign {tx_axis_tuser_sop7, tx_axis_tuser_sop6, tx_axis_tuser_sop5, tx_axis_tuser_sop4, tx_axis_tuser_sop3, tx_axis_tuser_sop2, tx_axis_tuser_sop1, tx_axis_tuser_sop0} = seg.sop;
    assign {tx_axis_tuser_eop7, tx_axis_tuser_eop6, tx_axis_tuser_eop5, tx_axis_tuser_eop4, tx_axis_tuser_eop3, tx_axis_tuser_eop2, tx_axis_tuser_eop1, tx_axis_tuser_eop0} = seg.eop;
    assign {tx_axis_tuser_err7, tx_axis_tuser_err6, tx_axis_tuser_err5, tx_axis_tuser_err4, tx_axis_tuser_err3, tx_axis_tuser_err2, tx_axis_tuser_err1, tx_axis_tuser_err0} = seg.err;
    assign {tx_axis_tuser_mty7, tx_axis_tuser_mty6, tx_axis_tuser_mty5, tx_axis_tuser_mty4, tx_axis_tuser_mty3, tx_axis_tuser_mty2, tx_axis_tuser_mty1, tx_axis_tuser_mty0} = seg.mty;
    logic unused_ok;
    assign unused_ok = tx_axis_taf_0;
endmodule
