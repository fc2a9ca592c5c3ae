// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_mpush_fifo — small single-clock FIFO in registers that takes up to NP entries per
// cycle in a given order and gives one (first-word fall-through). It queues per-frame
// records from the receive lanes, where several frames may be decided in one cycle.
//
// Contract
//   * Port p writes `data[p]` when `push[p]`; `rank[p]` is its place among this cycle's
//     pushes (the k pushing ports carry ranks 0..k-1, each once). The caller never pushes
//     more than DEPTH - count entries (the lanes check `count` ahead of their pushes).
//   * `count` (registered) is the number of entries held, the head included; it counts a
//     push from the next cycle on.
//   * `head`/`valid` come from a register (the oldest entry); `pop` with `valid` removes it
//     and the next one shows in the next cycle. Push to visible: two cycles.
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
    logic [AW:0]      npush, stored;    // stored: entries in mem (the head register apart)
    logic             load, take;

    always_comb begin
        npush = '0;
        for (int p = 0; p < NP; p++) npush = npush + (AW+1)'(push[p]);
    end

    assign take = pop && valid;
    assign load = stored != '0 && (!valid || pop);

    // The write places wr_ptr + 0..NP-1, kept ready in registers (no adder before the
    // write enables).
    logic [AW-1:0] wr_at [NP];
    logic [AW-1:0] wr_ptr_n [NP];    // wr_ptr + 1 .. wr_ptr + NP
    always_comb begin
        wr_at[0] = wr_ptr;
        for (int r = 1; r < NP; r++) wr_at[r] = wr_ptr_n[r-1];
    end
    always_ff @(posedge clk) begin
        for (int p = 0; p < NP; p++)
            if (push[p]) mem[wr_at[rank[2*p +: 2]]] <= data[WIDTH*p +: WIDTH];
        if (load) head <= mem[rd_ptr];
    end

    always_ff @(posedge clk) begin
        wr_ptr <= wr_ptr + AW'(npush);
        for (int r = 0; r < NP; r++) wr_ptr_n[r] <= wr_ptr + AW'(npush) + AW'(r + 1);
        if (load) rd_ptr <= rd_ptr + 1'b1;
        if (load) valid <= 1'b1;
        else if (take) valid <= 1'b0;
        stored <= stored + npush - (AW+1)'(load);
        count  <= count + npush - (AW+1)'(take);
        if (rst) begin
            wr_ptr <= '0; rd_ptr <= '0; stored <= '0; count <= '0; valid <= 1'b0;
            for (int r = 0; r < NP; r++) wr_ptr_n[r] <= AW'(r + 1);
        end
    end
endmodule
