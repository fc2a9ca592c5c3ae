// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_cdc_delta: exact transfer of an event count from src_clk to dst_clk.
//
// Contract
//   * Every src_clk cycle out of reset, `src_incr` is added to a local accumulator. Whenever
//     no transfer is in flight and the running total (accumulator plus this cycle's
//     `src_incr`) is non-zero, that total is handed to the destination and the accumulator
//     restarts from zero in the same cycle, so no increment is lost or counted twice,
//     including the one arriving in the hand-over cycle.
//   * Destination: each transfer appears as one dst_clk cycle with `dst_valid` high and the
//     total in `dst_delta` (non-zero). `dst_delta` holds between transfers. Feeding
//     `dst_valid`/`dst_delta` to a counter's incr/incrvalue inputs reproduces the source count.
//   * Throughput: one transfer per handshake round trip (about STAGES+2 dst_clk cycles plus
//     STAGES+1 src_clk cycles); counts keep accumulating meanwhile. Latency from an increment to
//     its `dst_valid`: at most two round trips plus one src_clk cycle (the increment is
//     registered as it arrives).
//   * Width: the accumulator must not wrap, i.e. DELTA_W >= INCR_W + log2(round trip in
//     src_clk cycles + 1). With STAGES = 3, clocks within 4x of each other give a round trip
//     under 32 source cycles, so INCR_W + 5 bits suffice (16 bits for INCR_W <= 8, the default).
//     Nothing checks this at run time.
//   * Resets: `src_rst`/`dst_rst` are synchronous to their clocks and must be asserted
//     together (overlapping for at least one edge of each clock). Counts seen during reset are
//     discarded; resetting one side alone may lose or repeat one transfer.
//   * CDC: the totals cross as fhg_cdc_snapshot words (req/ack toggle handshake); its holding
//     register bus needs set_max_delay -datapath_only (about one dst_clk period) in the XDC.
module fhg_cdc_delta #(
    parameter int INCR_W  = 8,
    parameter int DELTA_W = 16,
    parameter int STAGES  = 3
) (
    input logic              src_clk,
    input logic              src_rst,
    input logic [INCR_W-1:0] src_incr,

    input  logic               dst_clk,
    input  logic               dst_rst,
    output logic               dst_valid,
    output logic [DELTA_W-1:0] dst_delta
);

  if (DELTA_W <= INCR_W) begin : g_bad_width
    $error("fhg_cdc_delta: DELTA_W must exceed INCR_W to accumulate during a handshake");
  end

  // The running total is handed over whenever no transfer is in flight; the accumulator
  // restarts from zero in that same cycle, so the increment of the hand-over cycle is in
  // the total and none is lost or counted twice. The increment is registered as it arrives
  // (one src_clk cycle), and whether the total is non-zero comes from a flag kept beside
  // the accumulator (total non-zero = accumulator non-zero or increment non-zero), so no
  // path runs through the adder and then a wide comparison.
  logic [DELTA_W-1:0] acc, acc_sum;
  logic [INCR_W-1:0]  incr_q;
  logic src_ready, acc_nz, send;

  assign acc_sum = acc + {{(DELTA_W - INCR_W) {1'b0}}, incr_q};
  assign send    = acc_nz || incr_q != '0;

  always_ff @(posedge src_clk) begin
    incr_q <= src_rst ? '0 : src_incr;
    if (src_rst || (src_ready && send)) begin
      acc    <= '0;
      acc_nz <= 1'b0;
    end else begin
      acc    <= acc_sum;
      acc_nz <= send;
    end
  end

  fhg_cdc_snapshot #(
      .WIDTH (DELTA_W),
      .STAGES(STAGES)
  ) u_snap (
      .src_clk  (src_clk),
      .src_rst  (src_rst),
      .src_data (acc_sum),
      .src_send (send),
      .src_ready(src_ready),
      .dst_clk  (dst_clk),
      .dst_rst  (dst_rst),
      .dst_data (dst_delta),
      .dst_load (dst_valid),
      .dst_valid()
  );

endmodule
