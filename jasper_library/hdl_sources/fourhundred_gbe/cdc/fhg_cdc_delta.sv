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
//     its `dst_valid`: at most two round trips.
//   * Width: the accumulator must not wrap, i.e. DELTA_W >= INCR_W + log2(round trip in
//     src_clk cycles + 1). With STAGES = 3, clocks within 4x of each other give a round trip
//     under 32 source cycles, so INCR_W + 5 bits suffice (16 bits for INCR_W <= 8, the default).
//     Nothing checks this at run time.
//   * Resets: `src_rst`/`dst_rst` are synchronous to their clocks and must be asserted
//     together (overlapping for at least one edge of each clock). Counts seen during reset are
//     discarded; resetting one side alone may lose or repeat one transfer.
//   * CDC: a req toggle goes src->dst and an ack toggle dst->src, each through fhg_sync_bits.
//     The handed-over total sits in a source register that is written only in the cycle the
//     req toggles and is stable until the ack returns, so the destination samples it at least
//     STAGES-1 dst_clk cycles after it settled. That bus needs set_max_delay -datapath_only
//     (about one dst_clk period) in the XDC, like the synchroniser inputs.
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

  // ---------------- source side ----------------
  logic [DELTA_W-1:0] acc, acc_sum, hold;
  logic req_t;  // toggles once per transfer
  logic ack_s;  // destination's toggle, back in src_clk
  logic src_idle;

  assign acc_sum  = acc + {{(DELTA_W - INCR_W) {1'b0}}, src_incr};
  assign src_idle = (req_t == ack_s);

  always_ff @(posedge src_clk) begin
    if (src_rst) begin
      acc   <= '0;
      hold  <= '0;
      req_t <= 1'b0;
    end else if (src_idle && acc_sum != '0) begin
      hold  <= acc_sum;
      acc   <= '0;
      req_t <= ~req_t;
    end else begin
      acc <= acc_sum;
    end
  end

  // ---------------- destination side ----------------
  logic req_d;  // req_t synchronised into dst_clk
  logic seen_d;  // last req value taken

  always_ff @(posedge dst_clk) begin
    if (dst_rst) begin
      seen_d    <= 1'b0;
      dst_valid <= 1'b0;
      dst_delta <= '0;
    end else begin
      seen_d    <= req_d;
      dst_valid <= req_d ^ seen_d;
      if (req_d ^ seen_d) begin
        dst_delta <= hold;
      end
    end
  end

  fhg_sync_bits #(
      .WIDTH (1),
      .STAGES(STAGES)
  ) u_req (
      .clk(dst_clk),
      .rst(dst_rst),
      .d  (req_t),
      .q  (req_d)
  );

  fhg_sync_bits #(
      .WIDTH (1),
      .STAGES(STAGES)
  ) u_ack (
      .clk(src_clk),
      .rst(src_rst),
      .d  (seen_d),
      .q  (ack_s)
  );

endmodule
