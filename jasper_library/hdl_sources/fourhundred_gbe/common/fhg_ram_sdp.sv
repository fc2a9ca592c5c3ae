// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_ram_sdp: simple dual-port RAM, one write port and one read port on independent clocks.
//
// Contract
//   * Write (wr_clk): `wr_data` is stored at `wr_addr` on an edge where `wr_en` is high.
//   * Read (rd_clk): an edge with `rd_en` high starts a read of `rd_addr`; the word appears on
//     `rd_data` RD_LATENCY edges later (RD_LATENCY = 1: the RAM's own output latch; 2: plus the
//     block/UltraRAM output register, needed to close timing near 400 MHz on wide words) and
//     stays there until the next read's data replaces it. One read and one write per cycle.
//   * No reset: neither the array nor the read pipeline has one, so it maps onto the RAM
//     primitives. Contents and `rd_data` are undefined until written/read.
//   * Collisions: reading an address in the clock period in which it is written returns
//     either the old or the new word (with independent clocks Vivado guarantees neither);
//     callers leave the usual margin of a few read-clock cycles between writing and reading
//     one address.
//   * RAM_STYLE goes to Vivado's ram_style attribute: "block" (default), "distributed",
//     "auto", or "ultra". UltraRAM has a single clock, so "ultra" is only valid with wr_clk and
//     rd_clk driven by the same clock; with two clocks the request cannot be honoured.
//   * CDC: the RAM itself is the crossing; the caller must make sure the reader learns about
//     a write (for example through a synchronised pointer) only after it has completed.
module fhg_ram_sdp #(
    parameter int WIDTH      = 64,
    parameter int DEPTH      = 512,
    parameter int RD_LATENCY = 1,
    // Only read by the ram_style attribute, which the lint tool does not count as a use.
    /* verilator lint_off UNUSEDPARAM */
    parameter     RAM_STYLE  = "block"
    /* verilator lint_on UNUSEDPARAM */
) (
    input logic                     wr_clk,
    input logic                     wr_en,
    input logic [$clog2(DEPTH)-1:0] wr_addr,
    input logic [        WIDTH-1:0] wr_data,

    input  logic                     rd_clk,
    input  logic                     rd_en,
    input  logic [$clog2(DEPTH)-1:0] rd_addr,
    output logic [        WIDTH-1:0] rd_data
);

  if (RD_LATENCY < 1 || RD_LATENCY > 2) begin : g_bad_latency
    $error("fhg_ram_sdp: RD_LATENCY must be 1 or 2");
  end
  if (DEPTH < 2) begin : g_bad_depth
    $error("fhg_ram_sdp: DEPTH must be at least 2");
  end

  (* ram_style = RAM_STYLE *) logic [WIDTH-1:0] mem[0:DEPTH-1];

  logic [WIDTH-1:0] rd_word;

  always_ff @(posedge wr_clk) begin
    if (wr_en) begin
      mem[wr_addr] <= wr_data;
    end
  end

  always_ff @(posedge rd_clk) begin
    if (rd_en) begin
      rd_word <= mem[rd_addr];
    end
  end

  if (RD_LATENCY == 2) begin : g_outreg
    // Enabled by the delayed read enable so rd_data holds between reads, as with latency 1.
    logic rd_en_d;
    always_ff @(posedge rd_clk) begin
      rd_en_d <= rd_en;
      if (rd_en_d) begin
        rd_data <= rd_word;
      end
    end
  end else begin : g_noreg
    assign rd_data = rd_word;
  end

endmodule
