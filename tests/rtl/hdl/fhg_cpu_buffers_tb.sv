// SPDX-License-Identifier: GPL-3.0-or-later
// Test top for the CPU buffers: fhg_tx_cpu (CPU TX buffer and its frame source) and
// fhg_rx_cpu (CPU RX buffer and its handshake) side by side on the same two clocks, the
// register block's external-region strobes and the CPU RX buffer's writes as plain ports.
// Not for synthesis.
module fhg_cpu_buffers_tb (
    input  wire          axil_clk,
    input  wire          axil_rst,
    input  wire          mac_clk,
    input  wire          mac_rst,

    input  wire          tx_req,
    input  wire          tx_req_is_wr,
    input  wire [13:0]   tx_addr,
    input  wire [31:0]   tx_wr_data,
    output wire          tx_rd_ack,
    output wire          tx_wr_ack,
    output wire [31:0]   tx_rd_data,
    input  wire          tx_len_write,
    input  wire [15:0]   tx_len_value,
    input  wire          tx_cpu_tx_en,
    output wire          tx_busy,
    output wire          cpu_valid,
    output wire [9:0]    cpu_nseg,
    output wire [3:0]    cpu_mty,
    output wire [1023:0] cpu_word,
    output wire          cpu_word_valid,
    input  wire          cpu_pop,
    input  wire          cpu_done,
    output wire          stat_refused,

    input  wire          rx_we0,
    input  wire [6:0]    rx_row0,
    input  wire [1023:0] rx_data0,
    input  wire          rx_we1,
    input  wire [6:0]    rx_row1,
    input  wire [1023:0] rx_data1,
    input  wire          rx_placed,
    input  wire [13:0]   rx_placed_len,
    output wire          rx_released,
    input  wire          rx_req,
    input  wire          rx_req_is_wr,
    input  wire [13:0]   rx_addr,
    output wire          rx_rd_ack,
    output wire          rx_wr_ack,
    output wire [31:0]   rx_rd_data,
    output wire [15:0]   rx_len,
    output wire          rx_ready,
    input  wire          rx_ack
);
    fhg_tx_cpu u_tx (
        .axil_clk(axil_clk), .axil_rst(axil_rst), .req(tx_req), .req_is_wr(tx_req_is_wr),
        .addr(tx_addr), .wr_data(tx_wr_data), .rd_ack(tx_rd_ack), .wr_ack(tx_wr_ack),
        .rd_data(tx_rd_data), .len_write(tx_len_write), .len_value(tx_len_value),
        .cpu_tx_en(tx_cpu_tx_en), .busy(tx_busy),
        .mac_clk(mac_clk), .mac_rst(mac_rst), .cpu_valid(cpu_valid), .cpu_nseg(cpu_nseg),
        .cpu_mty(cpu_mty), .cpu_word(cpu_word), .cpu_word_valid(cpu_word_valid),
        .cpu_pop(cpu_pop), .cpu_done(cpu_done), .stat_refused(stat_refused)
    );
    fhg_rx_cpu u_rx (
        .mac_clk(mac_clk), .mac_rst(mac_rst),
        .wr({rx_we0, rx_row0, rx_data0, rx_we1, rx_row1, rx_data1}),
        .placed(rx_placed), .placed_len(rx_placed_len), .released(rx_released),
        .axil_clk(axil_clk), .axil_rst(axil_rst), .req(rx_req), .req_is_wr(rx_req_is_wr),
        .addr(rx_addr), .rd_ack(rx_rd_ack), .wr_ack(rx_wr_ack), .rd_data(rx_rd_data),
        .len(rx_len), .ready(rx_ready), .ack(rx_ack)
    );
endmodule
