// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_mpush_fifo — small single-clock FIFO in registers that takes up to NP entries per
// cycle in a given order and gives one (first-word fall-through). It queues per-frame
// records from the receive lanes, where several frames may be decided in one cycle.
//
// Contract
//   * Port p writes `data[p]` when `push[p]`; `rank[p]` is its place among this cycle's
//     pushes (the k pushing ports carry ranks 0..k-1, each once). The caller never pushes
//     more than DEPTH - count entries (the lanes check `count` a cycle ahead).
//   * `count` (registered) includes the head; `head`/`valid` show the oldest entry
//     combinationally from the registers; `pop` with `valid` removes it.
//   * An entry pushed in one cycle is visible from the next one.
module fhg_mpush_fifo #(
    parameter int WIDTH = 8,
    parameter int DEPTH = 8,
    parameter int NP    = 3,
    localparam int AW = $clog2(DEPTH)
) (
    input  wire                   clk,
    input  wire                   rst,
    input  wire  [NP-1:0]         push,
    input  wire  [NP*WIDTH-1:0]   data,
    input  wire  [NP*2-1:0]       rank,
    output logic [AW:0]           count,
    output logic                  valid,
    output logic [WIDTH-1:0]      head,
    input  wire                   pop
);
    if (DEPTH < 4 || (1 << AW) != DEPTH || NP > 4) begin : g_bad_param
        $error("fhg_mpush_fifo: DEPTH must be a power of two >= 4 and NP <= 4");
    end

    logic [WIDTH-1:0] mem [DEPTH];
    logic [AW-1:0]    wr_ptr, rd_ptr;
    logic [AW:0]      npush;

    always_comb begin
        npush = '0;
        for (int p = 0; p < NP; p++) npush = npush + (AW+1)'(push[p]);
    end

    assign valid = count != 0;
    assign head  = mem[rd_ptr];

    always_ff @(posedge clk) begin
        for (int p = 0; p < NP; p++)
            if (push[p]) mem[wr_ptr + AW'(rank[2*p +: 2])] <= data[WIDTH*p +: WIDTH];
        wr_ptr <= wr_ptr + AW'(npush);
        if (pop && valid) rd_ptr <= rd_ptr + 1'b1;
        count <= count + npush - (AW+1)'(pop && valid);
        if (rst) begin
            wr_ptr <= '0; rd_ptr <= '0; count <= '0;
        end
    end
endmodule
