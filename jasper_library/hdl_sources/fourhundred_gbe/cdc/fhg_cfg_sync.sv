// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_cfg_sync: quasi-static multi-bit value (configuration register) from src_clk to
// dst_clk without ever showing a mix of old and new bits.
//
// Contract
//   * The source register `src_data` is sampled into a holding register and sent with a
//     req/ack toggle handshake; as soon as one transfer is acknowledged the next sample is
//     sent, so the destination follows the source continuously and picks the value up again
//     by itself after a destination reset.
//   * `dst_data` only ever takes values that `src_data` held on some src_clk edge, and changes
//     all bits at once. A value that is held for at least two handshake round trips (about
//     2*(STAGES+2) dst_clk plus 2*(STAGES+1) src_clk cycles) is guaranteed to arrive; shorter
//     ones may be skipped. This suits configuration (MAC/IP/port), not data streams.
//   * `dst_update` pulses for one dst_clk cycle each time `dst_data` is loaded (with a new or
//     an unchanged value). `dst_valid` is set by the first load after `dst_rst` and stays set.
//   * Resets: synchronous, each in its own domain. `dst_data` resets to RST_VAL; until
//     `dst_valid` rises it shows RST_VAL rather than the source value. `dst_rst` may be
//     asserted alone (the transfer in flight is simply delivered again). `src_rst` must
//     overlap `dst_rst` by at least one edge of each clock: a source reset alone restarts the
//     handshake under the destination's feet, which can deliver RST_VAL or a torn word.
//   * CDC: as fhg_cdc_delta; the holding-register bus needs set_max_delay -datapath_only.
module fhg_cfg_sync #(
    parameter int               WIDTH   = 32,
    parameter int               STAGES  = 3,
    parameter logic [WIDTH-1:0] RST_VAL = '0
) (
    input logic             src_clk,
    input logic             src_rst,
    input logic [WIDTH-1:0] src_data,

    input  logic             dst_clk,
    input  logic             dst_rst,
    output logic [WIDTH-1:0] dst_data,
    output logic             dst_update,
    output logic             dst_valid
);

  // ---------------- source side ----------------
  logic [WIDTH-1:0] hold;
  logic req_t, ack_s;

  always_ff @(posedge src_clk) begin
    if (src_rst) begin
      hold  <= RST_VAL;
      req_t <= 1'b0;
    end else if (req_t == ack_s) begin
      hold  <= src_data;
      req_t <= ~req_t;
    end
  end

  // ---------------- destination side ----------------
  logic req_d, seen_d;

  always_ff @(posedge dst_clk) begin
    if (dst_rst) begin
      seen_d     <= 1'b0;
      dst_update <= 1'b0;
      dst_valid  <= 1'b0;
      dst_data   <= RST_VAL;
    end else begin
      seen_d     <= req_d;
      dst_update <= req_d ^ seen_d;
      if (req_d ^ seen_d) begin
        dst_data  <= hold;
        dst_valid <= 1'b1;
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
