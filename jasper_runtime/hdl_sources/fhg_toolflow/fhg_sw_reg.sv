// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_sw_reg — a CASPER software register: one 32-bit word on AXI4-Lite, crossing to the
// user clock.
//
// Contract
//   * TO_PROCESSOR = 0 ("From Processor"): software writes the word (byte strobes honoured)
//     and reads it back; `user_data_out` follows it in user_clk, all 32 bits changing at
//     once (fhg_cfg_sync), a few user_clk cycles after the write. It starts at INIT_VAL.
//   * TO_PROCESSOR = 1 ("To Processor"): `user_data_in` (user_clk) is sampled continuously
//     and software reads a recent value, never a mix of two; writes are answered SLVERR.
//   * Any address inside the block's span reads the one word (the toolflow gives it 4 B).
//     The bus side is fhg_bus_pkg's AXI4-Lite pair, served by fhg_axil_regport: one
//     axil_clk cycle from AW+W to B and from AR to R.
//   * axil_rst_n resets the register (and, through a synchroniser, the crossing).
module fhg_sw_reg #(
    parameter bit          TO_PROCESSOR = 1'b0,
    parameter logic [31:0] INIT_VAL     = 32'h0,
    parameter int          ADDR_W       = 2
) (
    input  wire                    axil_clk,
    input  wire                    axil_rst_n,
    input  fhg_bus_pkg::axil_req_t s_axil_req,
    output fhg_bus_pkg::axil_rsp_t s_axil_rsp,

    input  wire                    user_clk,
    input  wire  [31:0]            user_data_in,
    output logic [31:0]            user_data_out
);
    logic axil_rst, user_rst;
    logic [31:0] value, from_user;
    assign axil_rst = !axil_rst_n;

    logic              wr_en, wr_err;
    logic [ADDR_W-1:0] wr_addr, rd_addr;
    logic [31:0]       wr_data, wr_mask, rd_data;
    fhg_axil_regport #(.ADDR_W(ADDR_W)) u_port (.clk(axil_clk), .rst(axil_rst), .*);
    assign wr_err  = TO_PROCESSOR;
    assign rd_data = TO_PROCESSOR ? from_user : value;

    always_ff @(posedge axil_clk) begin
        if (axil_rst) value <= INIT_VAL;
        else if (wr_en && !TO_PROCESSOR) value <= (value & ~wr_mask) | (wr_data & wr_mask);
    end

    logic unused_update, unused_valid;
    fhg_sync_bits #(.WIDTH(1)) u_rst_sync (
        .clk(user_clk), .rst(1'b0), .d(axil_rst), .q(user_rst)
    );

    generate
        if (TO_PROCESSOR) begin : g_to_cpu
            fhg_cfg_sync #(.WIDTH(32)) u_sync (
                .src_clk(user_clk), .src_rst(user_rst), .src_data(user_data_in),
                .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_data(from_user),
                .dst_update(unused_update), .dst_valid(unused_valid)
            );
            assign user_data_out = '0;
        end else begin : g_from_cpu
            fhg_cfg_sync #(.WIDTH(32), .RST_VAL(INIT_VAL)) u_sync (
                .src_clk(axil_clk), .src_rst(axil_rst), .src_data(value),
                .dst_clk(user_clk), .dst_rst(user_rst), .dst_data(user_data_out),
                .dst_update(unused_update), .dst_valid(unused_valid)
            );
            assign from_user = '0;
        end
    endgenerate

    // Unused by design: the addresses (one word).
    logic unused_inputs;
    assign unused_inputs = ^{wr_addr, rd_addr, user_data_in};
endmodule
