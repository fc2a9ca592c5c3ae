// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_axil_regport — the AXI4-Lite slave side of a small register block: handshakes and
// responses. The block that uses it (fhg_sw_reg, fhg_sys_block) keeps its registers and
// decodes the addresses.
//
// Contract
//   * Writes: AW and W are taken together (awready = wready) when both are valid and no
//     write response is waiting. In that cycle `wr_en` is high with the write's address,
//     data and byte mask (`wr_mask`: eight ones per set wstrb bit); `wr_err`
//     (combinational, from `wr_addr`) makes the response SLVERR, else it is OKAY. B is
//     valid from the next cycle until bready.
//   * Reads: AR is taken when valid and no read data is waiting; `rd_data` (combinational,
//     from `rd_addr`) is registered in that cycle and R is valid from the next cycle until
//     rready. rresp is always OKAY.
//   * Latency: one clk cycle from AW+W to B and from AR to R. Throughput: one transaction
//     per two cycles per channel (no outstanding requests).
//   * `rst` (active high, synchronous to clk) clears both responses. The protection bits
//     are not used.
module fhg_axil_regport #(
    parameter int ADDR_W = 2
) (
    input  wire               clk,
    input  wire               rst,
    input  wire  [ADDR_W-1:0] s_axil_awaddr,
    input  wire  [2:0]        s_axil_awprot,
    input  wire               s_axil_awvalid,
    output logic              s_axil_awready,
    input  wire  [31:0]       s_axil_wdata,
    input  wire  [3:0]        s_axil_wstrb,
    input  wire               s_axil_wvalid,
    output logic              s_axil_wready,
    output logic [1:0]        s_axil_bresp,
    output logic              s_axil_bvalid,
    input  wire               s_axil_bready,
    input  wire  [ADDR_W-1:0] s_axil_araddr,
    input  wire  [2:0]        s_axil_arprot,
    input  wire               s_axil_arvalid,
    output logic              s_axil_arready,
    output logic [31:0]       s_axil_rdata,
    output logic [1:0]        s_axil_rresp,
    output logic              s_axil_rvalid,
    input  wire               s_axil_rready,

    output logic              wr_en,
    output logic [ADDR_W-1:0] wr_addr,
    output logic [31:0]       wr_data,
    output logic [31:0]       wr_mask,
    input  wire               wr_err,
    output logic [ADDR_W-1:0] rd_addr,
    input  wire  [31:0]       rd_data
);
    localparam logic [1:0] OKAY = 2'b00, SLVERR = 2'b10;

    assign s_axil_awready = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid;
    assign s_axil_wready  = s_axil_awready;
    assign wr_en   = s_axil_awready;
    assign wr_addr = s_axil_awaddr;
    assign wr_data = s_axil_wdata;
    always_comb begin
        for (int b = 0; b < 4; b++) wr_mask[b*8 +: 8] = {8{s_axil_wstrb[b]}};
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            s_axil_bvalid <= 1'b0;
            s_axil_bresp  <= OKAY;
        end else if (wr_en) begin
            s_axil_bvalid <= 1'b1;
            s_axil_bresp  <= wr_err ? SLVERR : OKAY;
        end else if (s_axil_bready) begin
            s_axil_bvalid <= 1'b0;
        end
    end

    assign s_axil_arready = s_axil_arvalid && !s_axil_rvalid;
    assign rd_addr = s_axil_araddr;
    always_ff @(posedge clk) begin
        if (rst) begin
            s_axil_rvalid <= 1'b0;
            s_axil_rdata  <= '0;
        end else if (s_axil_arready) begin
            s_axil_rvalid <= 1'b1;
            s_axil_rdata  <= rd_data;
        end else if (s_axil_rready) begin
            s_axil_rvalid <= 1'b0;
        end
    end
    assign s_axil_rresp = OKAY;

    logic unused_prot;
    assign unused_prot = ^{s_axil_awprot, s_axil_arprot};
endmodule
