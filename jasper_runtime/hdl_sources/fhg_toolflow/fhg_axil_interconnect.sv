// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_axil_interconnect — one AXI4-Lite master to N slaves, decoded by address.
//
// Contract
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
    input  wire              clk,
    input  wire              rst_n,
    // master side
    input  wire  [31:0]      s_awaddr,
    input  wire  [2:0]       s_awprot,
    input  wire              s_awvalid,
    output logic             s_awready,
    input  wire  [31:0]      s_wdata,
    input  wire  [3:0]       s_wstrb,
    input  wire              s_wvalid,
    output logic             s_wready,
    output logic [1:0]       s_bresp,
    output logic             s_bvalid,
    input  wire              s_bready,
    input  wire  [31:0]      s_araddr,
    input  wire  [2:0]       s_arprot,
    input  wire              s_arvalid,
    output logic             s_arready,
    output logic [31:0]      s_rdata,
    output logic [1:0]       s_rresp,
    output logic             s_rvalid,
    input  wire              s_rready,
    // slave side, slave k in bits [k*W +: W]
    output logic [N*32-1:0]  m_awaddr,
    output logic [N*3-1:0]   m_awprot,
    output logic [N-1:0]     m_awvalid,
    input  wire  [N-1:0]     m_awready,
    output logic [N*32-1:0]  m_wdata,
    output logic [N*4-1:0]   m_wstrb,
    output logic [N-1:0]     m_wvalid,
    input  wire  [N-1:0]     m_wready,
    input  wire  [N*2-1:0]   m_bresp,
    input  wire  [N-1:0]     m_bvalid,
    output logic [N-1:0]     m_bready,
    output logic [N*32-1:0]  m_araddr,
    output logic [N*3-1:0]   m_arprot,
    output logic [N-1:0]     m_arvalid,
    input  wire  [N-1:0]     m_arready,
    input  wire  [N*32-1:0]  m_rdata,
    input  wire  [N*2-1:0]   m_rresp,
    input  wire  [N-1:0]     m_rvalid,
    output logic [N-1:0]     m_rready
);
    localparam int SW = N > 1 ? $clog2(N) : 1;
    localparam logic [1:0] DECERR = 2'b11;

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
    logic         aw_pending, w_pending;
    logic [N:0]   wdec;
    assign wdec = decode(s_awaddr);

    assign s_awready = (wstate == W_IDLE) && s_awvalid && s_wvalid;
    assign s_wready  = s_awready;

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            wstate     <= W_IDLE;
            s_bvalid   <= 1'b0;
            s_bresp    <= 2'b00;
            aw_pending <= 1'b0;
            w_pending  <= 1'b0;
            wsel       <= '0;
            waddr      <= '0;
            wdata      <= '0;
            wstrb      <= '0;
            wprot      <= '0;
        end else begin
            case (wstate)
                W_IDLE: if (s_awready) begin
                    wdata <= s_wdata;
                    wstrb <= s_wstrb;
                    wprot <= s_awprot;
                    if (wdec[N]) begin
                        wsel       <= wdec[SW-1:0];
                        waddr      <= s_awaddr & ~MASKS[wdec[SW-1:0]*32 +: 32];
                        aw_pending <= 1'b1;
                        w_pending  <= 1'b1;
                        wstate     <= W_SLAVE;
                    end else begin
                        s_bvalid <= 1'b1;
                        s_bresp  <= DECERR;
                        wstate   <= W_RESP;
                    end
                end
                W_SLAVE: begin
                    if (m_awready[wsel]) aw_pending <= 1'b0;
                    if (m_wready[wsel]) w_pending <= 1'b0;
                    if (m_bvalid[wsel] && !aw_pending && !w_pending) begin
                        s_bvalid <= 1'b1;
                        s_bresp  <= m_bresp[wsel*2 +: 2];
                        wstate   <= W_RESP;
                    end
                end
                default: if (s_bready) begin
                    s_bvalid <= 1'b0;
                    wstate   <= W_IDLE;
                end
            endcase
        end
    end

    always_comb begin
        m_awaddr  = '0;
        m_awprot  = '0;
        m_awvalid = '0;
        m_wdata   = '0;
        m_wstrb   = '0;
        m_wvalid  = '0;
        m_bready  = '0;
        for (int k = 0; k < N; k++) begin
            m_awaddr[k*32 +: 32] = waddr;
            m_awprot[k*3 +: 3]   = wprot;
            m_wdata[k*32 +: 32]  = wdata;
            m_wstrb[k*4 +: 4]    = wstrb;
        end
        if (wstate == W_SLAVE) begin
            m_awvalid[wsel] = aw_pending;
            m_wvalid[wsel]  = w_pending;
            m_bready[wsel]  = !aw_pending && !w_pending;
        end
    end

    // ---------------------------------------------------------------- reads
    typedef enum logic [1:0] {R_IDLE, R_SLAVE, R_RESP} rstate_t;
    rstate_t       rstate;
    logic [SW-1:0] rsel;
    logic [31:0]   raddr;
    logic [2:0]    rprot;
    logic          ar_pending;
    logic [N:0]    rdec;
    assign rdec = decode(s_araddr);

    assign s_arready = (rstate == R_IDLE) && s_arvalid;

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            rstate     <= R_IDLE;
            s_rvalid   <= 1'b0;
            s_rresp    <= 2'b00;
            s_rdata    <= '0;
            ar_pending <= 1'b0;
            rsel       <= '0;
            raddr      <= '0;
            rprot      <= '0;
        end else begin
            case (rstate)
                R_IDLE: if (s_arready) begin
                    rprot <= s_arprot;
                    if (rdec[N]) begin
                        rsel       <= rdec[SW-1:0];
                        raddr      <= s_araddr & ~MASKS[rdec[SW-1:0]*32 +: 32];
                        ar_pending <= 1'b1;
                        rstate     <= R_SLAVE;
                    end else begin
                        s_rvalid <= 1'b1;
                        s_rresp  <= DECERR;
                        s_rdata  <= '0;
                        rstate   <= R_RESP;
                    end
                end
                R_SLAVE: begin
                    if (m_arready[rsel]) ar_pending <= 1'b0;
                    if (m_rvalid[rsel] && !ar_pending) begin
                        s_rvalid <= 1'b1;
                        s_rresp  <= m_rresp[rsel*2 +: 2];
                        s_rdata  <= m_rdata[rsel*32 +: 32];
                        rstate   <= R_RESP;
                    end
                end
                default: if (s_rready) begin
                    s_rvalid <= 1'b0;
                    rstate   <= R_IDLE;
                end
            endcase
        end
    end

    always_comb begin
        m_araddr  = '0;
        m_arprot  = '0;
        m_arvalid = '0;
        m_rready  = '0;
        for (int k = 0; k < N; k++) begin
            m_araddr[k*32 +: 32] = raddr;
            m_arprot[k*3 +: 3]   = rprot;
        end
        if (rstate == R_SLAVE) begin
            m_arvalid[rsel] = ar_pending;
            m_rready[rsel]  = !ar_pending;
        end
    end
endmodule
