// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_cdc_snapshot: a multi-bit word from src_clk to dst_clk as one consistent snapshot,
// through a req/ack toggle handshake. The primitive under fhg_cfg_sync (configuration) and
// fhg_cdc_delta (counter increments).
//
// Contract
//   * Source: `src_ready` is high while no transfer is in flight. A cycle with `src_ready`
//     and `src_send` high takes `src_data` into the holding register and starts a transfer;
//     `src_send` without `src_ready` is ignored (the caller keeps what it wanted to send).
//     `src_ready` is low from the next cycle until the destination's acknowledgement is
//     back (one handshake round trip: about STAGES+2 dst_clk plus STAGES+1 src_clk cycles).
//   * Destination: each transfer loads `dst_data` (all bits at once) and pulses `dst_load`
//     for one dst_clk cycle, both registered; `dst_data` holds between transfers.
//     `dst_valid` is set with the first load after `dst_rst` and stays set.
//   * Resets: synchronous, each in its own domain. `src_rst` empties the holding register
//     (RST_VAL) and the handshake; `dst_rst` sets `dst_data` to RST_VAL and clears
//     `dst_valid`. A destination reset alone only delivers the transfer in flight again;
//     a source reset must overlap `dst_rst` by at least one edge of each clock, otherwise
//     the handshake restarts under the destination's feet (a torn or repeated word).
//   * CDC: the req toggle crosses src->dst and the ack toggle dst->src, each through
//     fhg_sync_bits. The holding register is written only in the cycle req toggles and is
//     stable until the ack returns, so the destination samples it at least STAGES-1 dst_clk
//     cycles after it settled; that bus needs set_max_delay -datapath_only (about one
//     dst_clk period) in the XDC, like the synchroniser inputs.
module fhg_cdc_snapshot #(
    parameter int               WIDTH   = 32,
    parameter int               STAGES  = 3,
    parameter logic [WIDTH-1:0] RST_VAL = '0
) (
    input  logic             src_clk,
    input  logic             src_rst,
    input  logic [WIDTH-1:0] src_data,
    input  logic             src_send,
    output logic             src_ready,

    input  logic             dst_clk,
    input  logic             dst_rst,
    output logic [WIDTH-1:0] dst_data,
    output logic             dst_load,
    output logic             dst_valid
);

  // ---------------- source side ----------------
  logic [WIDTH-1:0] hold;
  logic req_t;  // toggles once per transfer
  logic ack_s;  // destination's toggle, back in src_clk

  assign src_ready = (req_t == ack_s);

  always_ff @(posedge src_clk) begin
    if (src_rst) begin
      hold  <= RST_VAL;
      req_t <= 1'b0;
    end else if (src_ready && src_send) begin
      hold  <= src_data;
      req_t <= ~req_t;
    end
  end

  // ---------------- destination side ----------------
  logic req_d;  // req_t synchronised into dst_clk
  logic seen_d;  // last req value taken

  always_ff @(posedge dst_clk) begin
    if (dst_rst) begin
      seen_d    <= 1'b0;
      dst_load  <= 1'b0;
      dst_valid <= 1'b0;
      dst_data  <= RST_VAL;
    end else begin
      seen_d   <= req_d;
      dst_load <= req_d ^ seen_d;
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
