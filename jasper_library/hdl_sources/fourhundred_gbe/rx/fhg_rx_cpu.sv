// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rx_cpu — the CPU RX buffer (register map region 0x8000) and its length/acknowledge
// handshake.
//
// Contract
//   * MAC side (mac_clk): up to two 1024-bit frame words per cycle (`wr`,
//     fhg_bus_pkg::rx_cpu_wr_t: we0/row0/data0 and we1/row1/data1, frame byte 128*row+k in
//     bits 8k+7:8k). `placed` with `placed_len`
//     hands the frame to software; the caller writes nothing more until `released` pulses
//     (software acknowledged), and keeps `placed_len` stable meanwhile.
//   * AXI side (axil_clk): the register block's external-region strobes for cpu_rx_buf
//     (16 KiB, 32-bit words, big-endian bytes: frame byte 4w in bits 31:24 of word w, as
//     the CPU TX buffer), acknowledged one cycle after the request; writes are ignored.
//     `len` is the waiting frame's length (0: none) and `ready` says a frame waits;
//     `ack` (cpu_rx_ack register pulse) releases it.
//   * Storage: 32 banks of 128 x 32 bits. The second word of a cycle is written one cycle
//     later (banks have one write port); `placed` is delayed with it, so software never
//     sees a frame before its last word is stored.
module fhg_rx_cpu (
    input  wire                 mac_clk,
    input  wire                 mac_rst,
    input  fhg_bus_pkg::rx_cpu_wr_t wr,
    input  wire                 placed,
    input  wire  [13:0]         placed_len,
    output logic                released,

    input  wire                 axil_clk,
    input  wire                 axil_rst,
    input  wire                 req,
    input  wire                 req_is_wr,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [13:0]         addr,           // byte address; bits 1:0 are always 0
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                rd_ack,
    output logic                wr_ack,
    output logic [31:0]         rd_data,
    output logic [15:0]         len,
    output logic                ready,
    input  wire                 ack
);
    // ---------------------------------------------------------------- MAC side
    logic          sk_we, placed_d;
    logic [6:0]    sk_row;
    logic [1023:0] sk_data;
    logic          wa_en;
    logic [6:0]    wa_row;
    logic [1023:0] wa_data;
    always_ff @(posedge mac_clk) begin
        sk_we <= wr.we1; sk_row <= wr.row1; sk_data <= wr.data1;
        placed_d <= placed;
        if (mac_rst) begin sk_we <= 1'b0; placed_d <= 1'b0; end
    end
    // A frame's two words of one cycle are its last two; nothing else is written the cycle
    // after, so the delayed word always finds the port free.
    always_comb begin
        wa_en   = wr.we0 || sk_we;
        wa_row  = wr.we0 ? wr.row0 : sk_row;
        wa_data = wr.we0 ? wr.data0 : sk_data;
    end

    logic [31:0] bank_rd [32];
    logic [6:0]  rd_row;
    logic [4:0]  rd_bank, rd_bank_q;
    assign rd_row  = addr[13:7];
    assign rd_bank = addr[6:2];
    for (genvar b = 0; b < 32; b++) begin : g_bank
        fhg_ram_tdp #(.WIDTH(32), .DEPTH(128)) u_bank (
            .a_clk(mac_clk), .a_en(wa_en), .a_we(wa_en), .a_addr(wa_row),
            .a_wdata(wa_data[32*b +: 32]), .a_rdata(),
            .b_clk(axil_clk), .b_en(req && !req_is_wr && rd_bank == 5'(b)), .b_we(1'b0),
            .b_addr(rd_row), .b_wdata(32'd0), .b_rdata(bank_rd[b])
        );
    end

    // ---------------------------------------------------------------- handshake
    logic placed_a, ack_m, rel_busy;
    fhg_pulse_sync u_placed (
        .clk_a(mac_clk), .rst_a(mac_rst), .pulse_a(placed_d), .busy_a(),
        .clk_b(axil_clk), .rst_b(axil_rst), .pulse_b(placed_a)
    );
    fhg_pulse_sync u_ack (
        .clk_a(axil_clk), .rst_a(axil_rst), .pulse_a(ack && ready), .busy_a(rel_busy),
        .clk_b(mac_clk), .rst_b(mac_rst), .pulse_b(ack_m)
    );
    assign released = ack_m;

    always_ff @(posedge axil_clk) begin
        rd_ack    <= req && !req_is_wr;
        wr_ack    <= req && req_is_wr;
        rd_bank_q <= rd_bank;
        if (placed_a) begin
            ready <= 1'b1;
            len   <= 16'(placed_len);   // stable in the MAC domain until released
        end
        if (ack && ready) begin
            ready <= 1'b0;
            len   <= '0;
        end
        if (axil_rst) begin
            rd_ack <= 1'b0; wr_ack <= 1'b0; ready <= 1'b0; len <= '0;
        end
    end
    // big-endian bytes in the 32-bit word
    logic [31:0] w;
    assign w = bank_rd[rd_bank_q];
    assign rd_data = {w[7:0], w[15:8], w[23:16], w[31:24]};

    logic unused_ok;
    assign unused_ok = &{1'b0, rel_busy};
endmodule
