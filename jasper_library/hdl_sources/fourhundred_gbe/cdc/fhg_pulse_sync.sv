// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_pulse_sync: one-cycle pulse in clk_a -> one-cycle pulse in clk_b.
//
// Contract
//   * A cycle with `pulse_a` high while `busy_a` is low is delivered as exactly one one-cycle
//     `pulse_b`, STAGES+1 to STAGES+2 clk_b edges later.
//   * `busy_a` is high from the cycle after an accepted pulse until the destination's
//     acknowledgement has come back (about STAGES+1 clk_b cycles plus STAGES clk_a cycles).
//     Pulses closer together than that are not supported: a pulse seen while `busy_a` is high
//     is dropped (never queued, never merged with the previous one). A source that must not
//     lose events checks `busy_a` first, or counts them with fhg_cdc_delta instead.
//   * Throughput: one pulse per round trip.
//   * Resets: `rst_a` (sync to clk_a) and `rst_b` (sync to clk_b) must be asserted together,
//     overlapping for at least one edge of each clock; resetting one side alone can create or
//     lose one pulse.
//   * CDC: the source carries a level (toggle) that changes once per pulse, so the
//     synchroniser only ever moves one bit; the destination edge-detects it.
module fhg_pulse_sync #(
    parameter int STAGES = 3
) (
    input  logic clk_a,
    input  logic rst_a,
    input  logic pulse_a,
    output logic busy_a,

    input  logic clk_b,
    input  logic rst_b,
    output logic pulse_b
);

  logic toggle_a;  // flips once per accepted pulse
  logic ack_a;  // destination's copy of the toggle, back in clk_a
  logic toggle_b;  // toggle_a synchronised into clk_b
  logic seen_b;  // last toggle value the destination has turned into a pulse

  always_ff @(posedge clk_a) begin
    if (rst_a) begin
      toggle_a <= 1'b0;
    end else if (pulse_a && !busy_a) begin
      toggle_a <= ~toggle_a;
    end
  end

  fhg_sync_bits #(
      .WIDTH (1),
      .STAGES(STAGES)
  ) u_a2b (
      .clk(clk_b),
      .rst(rst_b),
      .d  (toggle_a),
      .q  (toggle_b)
  );

  always_ff @(posedge clk_b) begin
    if (rst_b) begin
      seen_b  <= 1'b0;
      pulse_b <= 1'b0;
    end else begin
      seen_b  <= toggle_b;
      pulse_b <= toggle_b ^ seen_b;
    end
  end

  fhg_sync_bits #(
      .WIDTH (1),
      .STAGES(STAGES)
  ) u_b2a (
      .clk(clk_a),
      .rst(rst_a),
      .d  (seen_b),
      .q  (ack_a)
  );

  // Both inputs are clk_a flops, so this is glitch-free in clk_a timing terms.
  assign busy_a = toggle_a ^ ack_a;

endmodule
