// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_gbe_boot — puts the 400GbE block's mask parameters (FABRIC_*) into the core's
// registers after reset, then passes the AXI4-Lite bus through untouched.
//
// Contract
//   * After axil_rst_n rises it writes, in order, mac_hi, mac_lo, ip, gateway, netmask,
//     port, ttl and ctrl (FABRIC_CTRL, fabric enable clear), then — with
//     FABRIC_ENABLE_ON_START — ctrl again with the CTRL_FABRIC_EN bit set, so the core is
//     configured before it is enabled. Register offsets (REG_*) come from the register map
//     through the yellow block; nothing here knows the map.
//   * While it writes, the upstream master is held off (awready/wready/arready low); once
//     done (`booted`), every upstream signal reaches the core unchanged and combinationally.
//   * A write answered with an error response is not retried; `boot_error` says so.
//   * No valid is driven while rst_n is low (AXI: masters idle during reset).
//   * ADDR_W < 32. Both ports are flat (the yellow block connects them signal by signal);
//     inside, they are fhg_bus_pkg's AXI4-Lite pair.
module fhg_gbe_boot #(
    parameter int          ADDR_W                 = 16,
    parameter logic [47:0] FABRIC_MAC             = 48'h0,
    parameter logic [31:0] FABRIC_IP              = 32'h0,
    parameter logic [31:0] FABRIC_GATEWAY         = 32'h0,
    parameter logic [31:0] FABRIC_NETMASK         = 32'hffffff00,
    parameter logic [15:0] FABRIC_PORT            = 16'h0,
    parameter logic [7:0]  FABRIC_TTL             = 8'd64,
    parameter logic [31:0] FABRIC_CTRL            = 32'h0,
    parameter bit          FABRIC_ENABLE_ON_START = 1'b0,
    parameter logic [31:0] CTRL_FABRIC_EN         = 32'h1,
    parameter int          REG_MAC_HI             = 'h0c,
    parameter int          REG_MAC_LO             = 'h10,
    parameter int          REG_IP                 = 'h14,
    parameter int          REG_GATEWAY            = 'h18,
    parameter int          REG_NETMASK            = 'h1c,
    parameter int          REG_PORT               = 'h30,
    parameter int          REG_TTL                = 'h80,
    parameter int          REG_CTRL               = 'h2c
) (
    input  wire               clk,
    input  wire               rst_n,
    output logic              booted,
    output logic              boot_error,
    // upstream (from the interconnect)
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
    // downstream (to the core)
    output logic [ADDR_W-1:0] m_axil_awaddr,
    output logic [2:0]        m_axil_awprot,
    output logic              m_axil_awvalid,
    input  wire               m_axil_awready,
    output logic [31:0]       m_axil_wdata,
    output logic [3:0]        m_axil_wstrb,
    output logic              m_axil_wvalid,
    input  wire               m_axil_wready,
    input  wire  [1:0]        m_axil_bresp,
    input  wire               m_axil_bvalid,
    output logic              m_axil_bready,
    output logic [ADDR_W-1:0] m_axil_araddr,
    output logic [2:0]        m_axil_arprot,
    output logic              m_axil_arvalid,
    input  wire               m_axil_arready,
    input  wire  [31:0]       m_axil_rdata,
    input  wire  [1:0]        m_axil_rresp,
    input  wire               m_axil_rvalid,
    output logic              m_axil_rready
);
    localparam int NW = FABRIC_ENABLE_ON_START ? 9 : 8;
    initial if (ADDR_W >= 32) $error("fhg_gbe_boot: ADDR_W must be below 32");

    function automatic logic [ADDR_W+31:0] step(input int i);
        logic [ADDR_W-1:0] r;
        logic [31:0]       d;
        case (i)
            0: begin r = ADDR_W'(REG_MAC_HI);  d = {16'h0, FABRIC_MAC[47:32]}; end
            1: begin r = ADDR_W'(REG_MAC_LO);  d = FABRIC_MAC[31:0]; end
            2: begin r = ADDR_W'(REG_IP);      d = FABRIC_IP; end
            3: begin r = ADDR_W'(REG_GATEWAY); d = FABRIC_GATEWAY; end
            4: begin r = ADDR_W'(REG_NETMASK); d = FABRIC_NETMASK; end
            5: begin r = ADDR_W'(REG_PORT);    d = {16'h0, FABRIC_PORT}; end
            6: begin r = ADDR_W'(REG_TTL);     d = {24'h0, FABRIC_TTL}; end
            7: begin r = ADDR_W'(REG_CTRL);    d = FABRIC_CTRL & ~CTRL_FABRIC_EN; end
            default: begin r = ADDR_W'(REG_CTRL); d = FABRIC_CTRL | CTRL_FABRIC_EN; end
        endcase
        step = {r, d};
    endfunction

    // Both sides as fhg_bus_pkg's AXI4-Lite pair: the toolflow connects the flat ports.
    fhg_bus_pkg::axil_req_t up_req, boot_req, down_req;
    fhg_bus_pkg::axil_rsp_t down_rsp;
    logic [31-ADDR_W:0]     unused_awaddr, unused_araddr;
    assign up_req = {s_axil_awvalid, 32'(s_axil_awaddr), s_axil_awprot, s_axil_wvalid,
                     s_axil_wdata, s_axil_wstrb, s_axil_bready, s_axil_arvalid,
                     32'(s_axil_araddr), s_axil_arprot, s_axil_rready};
    assign down_rsp = {m_axil_awready, m_axil_wready, m_axil_bvalid, m_axil_bresp,
                       m_axil_arready, m_axil_rvalid, m_axil_rdata, m_axil_rresp};
    assign {m_axil_awvalid, unused_awaddr, m_axil_awaddr, m_axil_awprot, m_axil_wvalid,
            m_axil_wdata, m_axil_wstrb, m_axil_bready, m_axil_arvalid, unused_araddr,
            m_axil_araddr, m_axil_arprot, m_axil_rready} = down_req;
    // Until booted the upstream master sees no ready and no response.
    assign {s_axil_awready, s_axil_wready, s_axil_bvalid, s_axil_bresp, s_axil_arready,
            s_axil_rvalid, s_axil_rdata, s_axil_rresp} = booted ? down_rsp : '0;
    assign down_req = booted ? up_req : boot_req;

    logic [3:0] idx;
    logic       running;         // out of reset: AXI masters drive no valid during reset
    logic       aw_done, w_done;
    logic [ADDR_W+31:0] cur;
    assign cur = step(int'(idx));
    always_comb begin
        boot_req         = '0;
        boot_req.awvalid = running && !aw_done;
        boot_req.awaddr  = 32'(cur[ADDR_W+31:32]);
        boot_req.wvalid  = running && !w_done;
        boot_req.wdata   = cur[31:0];
        boot_req.wstrb   = 4'hf;
        boot_req.bready  = aw_done && w_done;
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            running    <= 1'b0;
            booted     <= 1'b0;
            boot_error <= 1'b0;
            idx        <= '0;
            aw_done    <= 1'b0;
            w_done     <= 1'b0;
        end else if (!booted) begin
            running <= 1'b1;
            if (boot_req.awvalid && down_rsp.awready) aw_done <= 1'b1;
            if (boot_req.wvalid && down_rsp.wready) w_done <= 1'b1;
            if (down_rsp.bvalid && boot_req.bready) begin
                if (down_rsp.bresp != 2'b00) boot_error <= 1'b1;
                aw_done <= 1'b0;
                w_done  <= 1'b0;
                if (int'(idx) == NW - 1) booted <= 1'b1;
                else idx <= idx + 4'd1;
            end
        end
    end
endmodule
