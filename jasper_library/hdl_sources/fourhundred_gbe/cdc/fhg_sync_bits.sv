// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_sync_bits: multi-flop synchroniser into the clock domain of `clk`.
//
// Contract
//   * `d` is sampled by a chain of STAGES (2..4) flops clocked by `clk`; `q` is the last flop,
//     so a change on `d` reaches `q` after STAGES to STAGES+1 edges of `clk`.
//   * Only for signals whose bits can be sampled independently without harm: a single bit, or
//     a gray-coded value that changes by at most one bit between two samples of `clk`. A
//     general multi-bit bus through this module can be seen mid-change (mixed old/new bits);
//     use fhg_cfg_sync or fhg_cdc_delta for those.
//   * `rst` is synchronous to `clk` and clears the chain to zero, so the owner of the
//     destination domain can start from a known value; tie it low where not needed.
//   * CDC: the first flop's D input is asynchronous. ASYNC_REG keeps the chain in one slice
//     and stops Vivado from pulling logic between the flops; the path into the first flop
//     still needs a set_max_delay -datapath_only (or set_false_path for a static input)
//     constraint in the design's XDC.
module fhg_sync_bits #(
    parameter int WIDTH  = 1,
    parameter int STAGES = 3
) (
    input  logic             clk,
    input  logic             rst,
    input  logic [WIDTH-1:0] d,
    output logic [WIDTH-1:0] q
);

  // Fewer than two flops leaves too little time for metastability to resolve at ~400 MHz;
  // more than four only adds latency.
  if (STAGES < 2 || STAGES > 4) begin : g_bad_stages
    $error("fhg_sync_bits: STAGES must be 2..4");
  end
  if (WIDTH < 1) begin : g_bad_width
    $error("fhg_sync_bits: WIDTH must be at least 1");
  end

  // One flat vector, newest sample in the low WIDTH bits, so the attribute covers every stage.
  (* ASYNC_REG = "TRUE" *) logic [STAGES*WIDTH-1:0] chain;

  always_ff @(posedge clk) begin
    if (rst) begin
      chain <= '0;
    end else begin
      chain <= {chain[(STAGES-1)*WIDTH-1:0], d};
    end
  end

  assign q = chain[STAGES*WIDTH-1 -: WIDTH];

endmodule
