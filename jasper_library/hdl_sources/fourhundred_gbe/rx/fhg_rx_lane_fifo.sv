// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rx_lane_fifo — single-clock FIFO taking up to two words per cycle, giving one
// (first-word fall-through), for the receive lanes.
//
// Contract
//   * push0/data0 and push1/data1 write up to two words in one cycle, data0 first; push1
//     without push0 is not allowed. The caller never writes more than DEPTH - count words
//     (nothing here checks it: the lanes reserve room before they push).
//   * `count` (registered) is the number of words held, including the one shown on the read
//     port; it does not yet include this cycle's pushes nor exclude this cycle's pop.
//   * Read: `rd_valid`/`rd_data` come from a register; `rd_pop` with `rd_valid` takes the
//     word and the next one (if any) shows in the next cycle. Write to visible: one cycle.
//   * Storage: two banks of DEPTH/2 words (even and odd addresses), so two consecutive
//     words land in different banks; read without a clock (LUT RAM).
module fhg_rx_lane_fifo #(
    parameter int WIDTH = 64,
    parameter int DEPTH = 32,
    localparam int AW = $clog2(DEPTH)
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               push0,
    input  wire  [WIDTH-1:0]  data0,
    input  wire               push1,
    input  wire  [WIDTH-1:0]  data1,
    output logic [AW:0]       count,
    output logic              rd_valid,
    output logic [WIDTH-1:0]  rd_data,
    input  wire               rd_pop
);
    if (DEPTH < 4 || (1 << AW) != DEPTH) begin : g_bad_depth
        $error("fhg_rx_lane_fifo: DEPTH must be a power of two, at least 4");
    end

    (* ram_style = "distributed" *) logic [WIDTH-1:0] bank0 [DEPTH/2];
    (* ram_style = "distributed" *) logic [WIDTH-1:0] bank1 [DEPTH/2];

    logic [AW:0]   wr_ptr, rd_ptr;
    logic [AW-1:0] wa0, wa1;
    logic [AW:0]   ram_used;
    logic          load;

    assign wa0 = wr_ptr[AW-1:0];
    assign wa1 = wa0 + 1'b1;
    // ram_used (words in the banks, not yet in rd_data) is counted in a register of its
    // own, so `load` does not wait for a subtraction.
    logic [AW:0] used_keep, used_load;
    assign load      = ram_used != 0 && (!rd_valid || rd_pop);
    assign used_keep = ram_used + (AW+1)'(push0) + (AW+1)'(push0 && push1);
    assign used_load = used_keep - (AW+1)'(1);

    always_ff @(posedge clk) begin
        // Bank by address parity: the two words of one cycle never share a bank.
        if (push0 && !wa0[0]) bank0[wa0[AW-1:1]] <= data0;
        if (push0 &&  wa0[0]) bank1[wa0[AW-1:1]] <= data0;
        if (push1 && !wa1[0]) bank0[wa1[AW-1:1]] <= data1;
        if (push1 &&  wa1[0]) bank1[wa1[AW-1:1]] <= data1;
    end

    logic [AW:0] cnt_keep, cnt_pop;
    assign cnt_keep = count + (AW+1)'(push0) + (AW+1)'(push0 && push1);
    assign cnt_pop  = cnt_keep - (AW+1)'(1);
    always_ff @(posedge clk) begin
        wr_ptr <= wr_ptr + (AW+1)'(push0) + (AW+1)'(push0 && push1);
        if (load) begin
            rd_data <= rd_ptr[0] ? bank1[rd_ptr[AW-1:1]] : bank0[rd_ptr[AW-1:1]];
            rd_ptr  <= rd_ptr + 1'b1;
        end
        if (load) rd_valid <= 1'b1;
        else if (rd_pop) rd_valid <= 1'b0;
        // (the pop, which comes late in the cycle, only chooses between two sums)
        count <= (rd_pop && rd_valid) ? cnt_pop : cnt_keep;
        ram_used <= load ? used_load : used_keep;
        if (rst) begin
            wr_ptr <= '0; rd_ptr <= '0; rd_valid <= 1'b0; count <= '0; ram_used <= '0;
        end
    end
endmodule
