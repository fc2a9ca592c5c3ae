// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_pktgen_spead — SPEAD framing for the example design's generator (fhg_pktgen): each
// packet becomes one SPEAD-64-48 heap whose payload is the generator's payload.
//
// Contract
//   * Interface: beside fhg_pktgen, on its clock. `start` is high in the cycle before a
//     packet's first beat (fhg_pktgen's `start`); `spead_en`, `channel` and `heap_size`
//     are sampled then and hold for that packet. `first_beat` marks the packet's first
//     beat on `data`. `payload` is the beat fhg_pktgen would send at
//     the current beat index (any payload mode), one beat per cycle with no gaps inside a
//     packet.
//   * Packet layout when the packet's sampled `spead_en` is set: a 64-byte header —
//     0x53, version 4, item pointer width 2, heap address width 6, 2 reserved bytes, 7
//     item pointers — then the payload, 64 + heap_size bytes in all:
//       heap counter (0x0001, immediate) = heap_cnt (the sequence number n)
//       heap size    (0x0002, immediate) = heap_size
//       heap offset  (0x0003, immediate) = 0
//       payload len  (0x0004, immediate) = heap_size
//       timestamp    (TIMESTAMP_ID, immediate) = the timestamp counter [47:0]
//       channel      (CHANNEL_ID, immediate) = channel
//       data         (DATA_ID, at heap address 0): the payload
//     Beat 0 carries the header and the payload's first 64 bytes; beat b > 0 the last 64
//     bytes of payload beat b - 1 and the first 64 of payload beat b (one 512-bit
//     register holds the half that moves to the next beat).
//   * Timestamp: 0 after `rst`, + `ts_step` at every `ts_advance` (fhg_pktgen: the last
//     beat of a spectrum's last packet, in either mode), so spectrum s carries s * ts_step
//     while ts_step stays the same — packet n carries n * ts_step with the destination
//     table off.
//   * Otherwise `data` = `payload`.
//   * Latency: `data` follows `payload` and the registered state in the same cycle (no
//     added pipeline stage, like fhg_pktgen's own data). Throughput: one beat per cycle.
//     CDC: none (one clock).
module fhg_pktgen_spead #(
    parameter logic [14:0] TIMESTAMP_ID = 15'h1600,
    parameter logic [14:0] CHANNEL_ID   = 15'h4103,
    parameter logic [14:0] DATA_ID      = 15'h3300
) (
    input  wire            clk,
    input  wire            rst,
    input  wire            start,
    input  wire            spead_en,
    input  wire  [31:0]    channel,
    input  wire  [31:0]    ts_step,
    input  wire  [13:0]    heap_size,
    input  wire  [47:0]    heap_cnt,
    input  wire            first_beat,
    input  wire            ts_advance,
    input  wire  [1023:0]  payload,
    output logic [1023:0]  data
);
    localparam int HALF = 512;
    localparam logic [63:0] HEADER = {8'h53, 8'h04, 8'h02, 8'h06, 16'h0000, 16'd7};

    logic            active;   // this packet is SPEAD (spead_en at its start)
    logic [63:0]     timestamp;
    logic [31:0]     channel_q;
    logic [13:0]     size_q;
    logic [HALF-1:0] carry_q;  // payload[HALF-1:0] of the previous beat
    logic [HALF-1:0] header;

    always_comb begin
        header = {
            HEADER,
            {1'b1, 15'h0001, heap_cnt},
            {1'b1, 15'h0002, 34'd0, size_q},
            {1'b1, 15'h0003, 48'd0},
            {1'b1, 15'h0004, 34'd0, size_q},
            {1'b1, TIMESTAMP_ID, timestamp[47:0]},
            {1'b1, CHANNEL_ID, 16'd0, channel_q},
            {1'b0, DATA_ID, 48'd0}
        };
        if (!active)
            data = payload;
        else if (first_beat)
            data = {header, payload[1023:HALF]};
        else
            data = {carry_q, payload[1023:HALF]};
    end

    always_ff @(posedge clk) begin
        carry_q <= payload[HALF-1:0];
        if (rst) begin
            timestamp <= '0;
            active    <= 1'b0;
            channel_q <= '0;
            size_q    <= '0;
        end else begin
            if (ts_advance) timestamp <= timestamp + 64'(ts_step);
            if (start) begin
                active    <= spead_en;
                channel_q <= channel;
                size_q    <= heap_size;
            end
        end
    end
endmodule
