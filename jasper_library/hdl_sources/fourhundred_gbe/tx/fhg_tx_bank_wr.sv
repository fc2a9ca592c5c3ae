// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_bank_wr — the TX buffer's two write ports (user_clk): up to two word writes a
// cycle, each to the bank its word's parity names. Both buffer writers (fhg_tx_writer,
// fhg_rdma_writer) write through it.
//
// Contract
//   * Requests a and b: a word index (AW bits, the buffer's word address) and its data,
//     each with its enable. Bank 0 holds the even words, bank 1 the odd ones, at address
//     index / 2 (wr0_* / wr1_*, as fhg_tx_path's buffer takes them).
//   * The writers ask for two consecutive words at most, so the two requests of a cycle
//     go to different banks; should both name the same bank, b's write is the one made.
//   * Latency: one cycle (registered ports). Throughput: two words a cycle. One clock, no
//     CDC; `rst` (synchronous) drops the cycle's requests. Address and data follow a
//     request only (they hold otherwise), so the enables carry the only reset.
module fhg_tx_bank_wr #(
    parameter int AW = 9              // buffer word address bits
) (
    input  wire                 clk,
    input  wire                 rst,

    input  wire                 a_en,
    input  wire  [AW-1:0]       a_idx,
    input  wire  [1023:0]       a_data,
    input  wire                 b_en,
    input  wire  [AW-1:0]       b_idx,
    input  wire  [1023:0]       b_data,

    output logic                wr0_en,
    output logic [AW-2:0]       wr0_addr,
    output logic [1023:0]       wr0_data,
    output logic                wr1_en,
    output logic [AW-2:0]       wr1_addr,
    output logic [1023:0]       wr1_data
);
    always_ff @(posedge clk) begin
        wr0_en <= 1'b0;
        wr1_en <= 1'b0;
        for (int p = 0; p < 2; p++) begin
            logic           en;
            logic [AW-1:0]  idx;
            logic [1023:0]  data;
            en   = p == 0 ? a_en   : b_en;
            idx  = p == 0 ? a_idx  : b_idx;
            data = p == 0 ? a_data : b_data;
            if (en) begin
                if (idx[0]) begin
                    wr1_en <= 1'b1; wr1_addr <= idx[AW-1:1]; wr1_data <= data;
                end else begin
                    wr0_en <= 1'b1; wr0_addr <= idx[AW-1:1]; wr0_data <= data;
                end
            end
        end
        if (rst) begin
            wr0_en <= 1'b0;
            wr1_en <= 1'b0;
        end
    end
endmodule
