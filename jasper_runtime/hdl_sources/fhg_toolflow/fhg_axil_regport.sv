// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_axil_regport — the AXI4-Lite slave side of a small register block: handshakes and
// responses. The block that uses it (fhg_sw_reg, fhg_sys_block) keeps its registers and
// decodes the addresses.
//
// Contract
//   * The port is fhg_bus_pkg's AXI4-Lite pair (s_axil_req in, s_axil_rsp out); the block
//     decodes the low ADDR_W bits of the 32-bit address, the bus decoder having removed
//     the block's base.
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
//     and the address bits above ADDR_W are not used.
module fhg_axil_regport #(
    parameter int ADDR_W = 2
) (
    input  wire                    clk,
    input  wire                    rst,
    input  fhg_bus_pkg::axil_req_t s_axil_req,
    output fhg_bus_pkg::axil_rsp_t s_axil_rsp,

    output logic                   wr_en,
    output logic [ADDR_W-1:0]      wr_addr,
    output logic [31:0]            wr_data,
    output logic [31:0]            wr_mask,
    input  wire                    wr_err,
    output logic [ADDR_W-1:0]      rd_addr,
    input  wire  [31:0]            rd_data
);
    localparam logic [1:0] OKAY = 2'b00, SLVERR = 2'b10;
    if (ADDR_W < 2 || ADDR_W > 32) begin : g_addr_w_check
        $error("fhg_axil_regport: ADDR_W must be 2 to 32");
    end

    logic        bvalid, rvalid, ar_take;
    logic [1:0]  bresp;
    logic [31:0] rdata;

    assign wr_en   = s_axil_req.awvalid && s_axil_req.wvalid && !bvalid;
    assign wr_addr = s_axil_req.awaddr[ADDR_W-1:0];
    assign wr_data = s_axil_req.wdata;
    always_comb begin
        for (int b = 0; b < 4; b++) wr_mask[b*8 +: 8] = {8{s_axil_req.wstrb[b]}};
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            bvalid <= 1'b0;
            bresp  <= OKAY;
        end else if (wr_en) begin
            bvalid <= 1'b1;
            bresp  <= wr_err ? SLVERR : OKAY;
        end else if (s_axil_req.bready) begin
            bvalid <= 1'b0;
        end
    end

    assign ar_take = s_axil_req.arvalid && !rvalid;
    assign rd_addr = s_axil_req.araddr[ADDR_W-1:0];
    always_ff @(posedge clk) begin
        if (rst) begin
            rvalid <= 1'b0;
            rdata  <= '0;
        end else if (ar_take) begin
            rvalid <= 1'b1;
            rdata  <= rd_data;
        end else if (s_axil_req.rready) begin
            rvalid <= 1'b0;
        end
    end

    always_comb begin
        s_axil_rsp         = '0;
        s_axil_rsp.awready = wr_en;
        s_axil_rsp.wready  = wr_en;
        s_axil_rsp.bvalid  = bvalid;
        s_axil_rsp.bresp   = bresp;
        s_axil_rsp.arready = ar_take;
        s_axil_rsp.rvalid  = rvalid;
        s_axil_rsp.rdata   = rdata;
        s_axil_rsp.rresp   = OKAY;
    end

    // Unused by design: the protection bits and, where the block spans less than 4 GiB,
    // the address bits above it.
    logic unused_req;
    assign unused_req = ^{s_axil_req.awprot, s_axil_req.arprot, s_axil_req.awaddr,
                          s_axil_req.araddr};
endmodule
