// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_axil_interconnect — one AXI4-Lite master to N slaves, decoded by address.
//
// Contract
//   * Every port is fhg_bus_pkg's AXI4-Lite pair: the master's s_req/s_rsp, slave k's
//     m_req[k]/m_rsp[k] (packed words of the pair's widths, AXIL_REQ_W/AXIL_RSP_W, which
//     the Yosys front end takes where it takes no array of structs).
//   * Slave k answers the addresses a with (a & MASKS[32k +: 32]) == BASES[32k +: 32]; it
//     sees the address with the base removed (a & ~MASK), so a slave decodes from 0.
//   * One write and one read are in flight at a time (reads and writes are independent).
//     AW and W are accepted together; the slave gets each as its own handshake; the slave's
//     B/R response is returned unchanged.
//   * An address no slave decodes is answered DECERR (reads return 0), so software sees
//     a bus error instead of a hang.
//   * Everything runs on `clk` (the platform's AXI clock); `rst_n` is synchronous.
// The toolflow packs the slaves (2^n-aligned, largest first) and sets BASES/MASKS.
module fhg_axil_interconnect #(
    parameter int              N     = 1,
    parameter logic [N*32-1:0] BASES = '0,
    parameter logic [N*32-1:0] MASKS = '0
) (
    input  wire                                       clk,
    input  wire                                       rst_n,
    input  fhg_bus_pkg::axil_req_t                    s_req,
    output fhg_bus_pkg::axil_rsp_t                    s_rsp,
    output logic [N-1:0][fhg_bus_pkg::AXIL_REQ_W-1:0] m_req,
    input  wire  [N-1:0][fhg_bus_pkg::AXIL_RSP_W-1:0] m_rsp
);
    localparam int SW = N > 1 ? $clog2(N) : 1;
    localparam logic [1:0] DECERR = 2'b11;

    fhg_bus_pkg::axil_rsp_t wrsp, rrsp;
    if ($bits(s_req) != fhg_bus_pkg::AXIL_REQ_W || $bits(wrsp) != fhg_bus_pkg::AXIL_RSP_W)
    begin : g_width_check
        $error("fhg_bus_pkg: AXIL_REQ_W/AXIL_RSP_W disagree with axil_req_t/axil_rsp_t");
    end

    // ---------------------------------------------------------------- decode
    function automatic logic [N:0] decode(input logic [31:0] addr);
        logic [N:0] r;
        r = '0;
        for (int k = 0; k < N; k++) begin
            if ((addr & MASKS[k*32 +: 32]) == BASES[k*32 +: 32]) begin
                r[N]    = 1'b1;
                r[SW-1:0] = SW'(k);
            end
        end
        decode = r;
    endfunction

    // ---------------------------------------------------------------- writes
    typedef enum logic [1:0] {W_IDLE, W_SLAVE, W_RESP} wstate_t;
    wstate_t      wstate;
    logic [SW-1:0] wsel;
    logic [31:0]  waddr, wdata;
    logic [3:0]   wstrb;
    logic [2:0]   wprot;
    logic         aw_pending, w_pending, aw_take, bvalid;
    logic [1:0]   bresp;
    logic [N:0]   wdec;
    assign wdec    = decode(s_req.awaddr);
    assign aw_take = (wstate == W_IDLE) && s_req.awvalid && s_req.wvalid;
    assign wrsp    = m_rsp[wsel];

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            wstate     <= W_IDLE;
            bvalid     <= 1'b0;
            bresp      <= 2'b00;
            aw_pending <= 1'b0;
            w_pending  <= 1'b0;
            wsel       <= '0;
            waddr      <= '0;
            wdata      <= '0;
            wstrb      <= '0;
            wprot      <= '0;
        end else begin
            case (wstate)
                W_IDLE: if (aw_take) begin
                    wdata <= s_req.wdata;
                    wstrb <= s_req.wstrb;
                    wprot <= s_req.awprot;
                    if (wdec[N]) begin
                        wsel       <= wdec[SW-1:0];
                        waddr      <= s_req.awaddr & ~MASKS[wdec[SW-1:0]*32 +: 32];
                        aw_pending <= 1'b1;
                        w_pending  <= 1'b1;
                        wstate     <= W_SLAVE;
                    end else begin
                        bvalid <= 1'b1;
                        bresp  <= DECERR;
                        wstate <= W_RESP;
                    end
                end
                W_SLAVE: begin
                    if (wrsp.awready) aw_pending <= 1'b0;
                    if (wrsp.wready) w_pending <= 1'b0;
                    if (wrsp.bvalid && !aw_pending && !w_pending) begin
                        bvalid <= 1'b1;
                        bresp  <= wrsp.bresp;
                        wstate <= W_RESP;
                    end
                end
                default: if (s_req.bready) begin
                    bvalid <= 1'b0;
                    wstate <= W_IDLE;
                end
            endcase
        end
    end

    // ---------------------------------------------------------------- reads
    typedef enum logic [1:0] {R_IDLE, R_SLAVE, R_RESP} rstate_t;
    rstate_t       rstate;
    logic [SW-1:0] rsel;
    logic [31:0]   raddr, rdata;
    logic [2:0]    rprot;
    logic          ar_pending, ar_take, rvalid;
    logic [1:0]    rresp;
    logic [N:0]    rdec;
    assign rdec    = decode(s_req.araddr);
    assign ar_take = (rstate == R_IDLE) && s_req.arvalid;
    assign rrsp    = m_rsp[rsel];

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            rstate     <= R_IDLE;
            rvalid     <= 1'b0;
            rresp      <= 2'b00;
            rdata      <= '0;
            ar_pending <= 1'b0;
            rsel       <= '0;
            raddr      <= '0;
            rprot      <= '0;
        end else begin
            case (rstate)
                R_IDLE: if (ar_take) begin
                    rprot <= s_req.arprot;
                    if (rdec[N]) begin
                        rsel       <= rdec[SW-1:0];
                        raddr      <= s_req.araddr & ~MASKS[rdec[SW-1:0]*32 +: 32];
                        ar_pending <= 1'b1;
                        rstate     <= R_SLAVE;
                    end else begin
                        rvalid <= 1'b1;
                        rresp  <= DECERR;
                        rdata  <= '0;
                        rstate <= R_RESP;
                    end
                end
                R_SLAVE: begin
                    if (rrsp.arready) ar_pending <= 1'b0;
                    if (rrsp.rvalid && !ar_pending) begin
                        rvalid <= 1'b1;
                        rresp  <= rrsp.rresp;
                        rdata  <= rrsp.rdata;
                        rstate <= R_RESP;
                    end
                end
                default: if (s_req.rready) begin
                    rvalid <= 1'b0;
                    rstate <= R_IDLE;
                end
            endcase
        end
    end

    always_comb begin
        s_rsp         = '0;
        s_rsp.awready = aw_take;
        s_rsp.wready  = aw_take;
        s_rsp.bvalid  = bvalid;
        s_rsp.bresp   = bresp;
        s_rsp.arready = ar_take;
        s_rsp.rvalid  = rvalid;
        s_rsp.rdata   = rdata;
        s_rsp.rresp   = rresp;
    end

    // ---------------------------------------------------------------- slaves
    // Address, data and protection go to every slave; only the selected one sees valid.
    for (genvar k = 0; k < N; k++) begin : g_slave
        fhg_bus_pkg::axil_req_t req;
        logic wr_on, rd_on;
        assign wr_on = (wstate == W_SLAVE) && (wsel == SW'(k));
        assign rd_on = (rstate == R_SLAVE) && (rsel == SW'(k));
        always_comb begin
            req         = '0;
            req.awaddr  = waddr;
            req.awprot  = wprot;
            req.awvalid = wr_on && aw_pending;
            req.wdata   = wdata;
            req.wstrb   = wstrb;
            req.wvalid  = wr_on && w_pending;
            req.bready  = wr_on && !aw_pending && !w_pending;
            req.araddr  = raddr;
            req.arprot  = rprot;
            req.arvalid = rd_on && ar_pending;
            req.rready  = rd_on && !ar_pending;
        end
        assign m_req[k] = req;
    end

    // Unused by design: each selected response is read for its own direction's channels.
    logic unused_rsp;
    assign unused_rsp = ^{wrsp.arready, wrsp.rvalid, wrsp.rdata, wrsp.rresp,
                          rrsp.awready, rrsp.wready, rrsp.bvalid, rrsp.bresp};
endmodule
