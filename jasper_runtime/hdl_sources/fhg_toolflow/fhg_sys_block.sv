// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_sys_block — the CASPER system block every platform carries: board id, revision,
// a scratchpad and a user-clock counter, as casperfpga reads them (docs/design/toolflow.md).
//
// Contract
//   * AXI4-Lite slave, 32 bytes (ADDR_W = 5), byte offsets as mlib_devel's sys_block:
//       0x00 sys_board_id   r   BOARD_ID
//       0x04 sys_rev        r   REV (major << 16 | minor)
//       0x0C sys_rev_rcs    r   REV_RCS
//       0x10 sys_scratchpad rw  reset SCRATCHPAD_INIT, byte strobes honoured
//       0x14 sys_clkcounter r   free-running count of user_clk edges (wraps at 2^32)
//     Other words read 0. A write anywhere but the scratchpad is answered SLVERR and changes
//     nothing.
//   * Bus side: fhg_bus_pkg's AXI4-Lite pair, served by fhg_axil_regport (the low ADDR_W
//     address bits decoded). Latency: reads answer one axil_clk cycle after AR;
//     writes one cycle after AW+W. Throughput: one transaction per two cycles per channel
//     (no outstanding requests).
//   * CDC: the counter runs in user_clk and crosses to axil_clk through fhg_cfg_sync, so a
//     read returns a recent count, never a mix of two (casperfpga's estimate_fpga_clock()
//     divides the difference of two reads by the time between them). axil_rst (active high,
//     axil_clk) resets the registers, user_rst (user_clk) the counter: the resets every
//     platform provides, as mlib_devel's sys_block takes them.
module fhg_sys_block #(
    parameter logic [31:0] BOARD_ID        = 32'h0,
    parameter logic [31:0] REV             = 32'h0,
    parameter logic [31:0] REV_RCS         = 32'h0,
    parameter logic [31:0] SCRATCHPAD_INIT = 32'h0,
    parameter int          ADDR_W          = 5
) (
    input  wire                    axil_clk,
    input  wire                    axil_rst,
    input  fhg_bus_pkg::axil_req_t s_axil_req,
    output fhg_bus_pkg::axil_rsp_t s_axil_rsp,

    input  wire                    user_clk,
    input  wire                    user_rst
);
    localparam logic [ADDR_W-1:0] A_BOARD_ID   = ADDR_W'('h00);
    localparam logic [ADDR_W-1:0] A_REV        = ADDR_W'('h04);
    localparam logic [ADDR_W-1:0] A_REV_RCS    = ADDR_W'('h0C);
    localparam logic [ADDR_W-1:0] A_SCRATCHPAD = ADDR_W'('h10);
    localparam logic [ADDR_W-1:0] A_CLKCOUNTER = ADDR_W'('h14);

    logic [31:0] scratchpad, count_user, count_axil;

    // ---------------- bus: only the scratchpad takes writes
    logic              wr_en, wr_err;
    logic [ADDR_W-1:0] wr_addr, rd_addr;
    logic [31:0]       wr_data, wr_mask, rd_data;
    fhg_axil_regport #(.ADDR_W(ADDR_W)) u_port (.clk(axil_clk), .rst(axil_rst), .*);
    assign wr_err = {wr_addr[ADDR_W-1:2], 2'b00} != A_SCRATCHPAD;

    always_ff @(posedge axil_clk) begin
        if (axil_rst) scratchpad <= SCRATCHPAD_INIT;
        else if (wr_en && !wr_err) scratchpad <= (scratchpad & ~wr_mask) | (wr_data & wr_mask);
    end

    always_comb begin
        unique case ({rd_addr[ADDR_W-1:2], 2'b00})
            A_BOARD_ID:   rd_data = BOARD_ID;
            A_REV:        rd_data = REV;
            A_REV_RCS:    rd_data = REV_RCS;
            A_SCRATCHPAD: rd_data = scratchpad;
            A_CLKCOUNTER: rd_data = count_axil;
            default:      rd_data = 32'h0;
        endcase
    end

    // ---------------- user-clock counter and its crossing
    always_ff @(posedge user_clk) begin
        if (user_rst) count_user <= '0;
        else          count_user <= count_user + 32'd1;
    end
    logic unused_update, unused_valid;
    fhg_cfg_sync #(.WIDTH(32)) u_count_sync (
        .src_clk(user_clk), .src_rst(user_rst), .src_data(count_user),
        .dst_clk(axil_clk), .dst_rst(axil_rst), .dst_data(count_axil),
        .dst_update(unused_update), .dst_valid(unused_valid)
    );

    // Unused by design: the byte-offset bits of word addresses.
    logic unused_inputs;
    assign unused_inputs = ^{wr_addr[1:0], rd_addr[1:0]};
endmodule
