// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tone_gen — the example design's tone source: int8 complex samples of a tone plus
// pseudo-random noise, 64 samples per 1024-bit beat — what an ADC or F-engine stream looks
// like. fhg_pktgen puts them behind its sequence-counter header (pkt_mode = 1).
//
// Contract
//   * Samples are numbered from 0 after `rst`; sample i has phase i * step (mod 2^32, 2^32
//     = one turn). With k = phase[31:24] and COS_TAB[k] = round(127 cos(2 pi k / 256)):
//       I = sat8((COS_TAB[k]      >>> amp_shift) + nI)
//       Q = sat8((COS_TAB[k - 64] >>> amp_shift) + nQ)     (k - 64 mod 256: the sine)
//   * Noise: 64 lanes, each a xorshift32 stream (x ^= x << 13; x ^= x >> 17; x ^= x << 5)
//     from LANE_SEED[j] ^ {seed, seed}. Beats are numbered from 0 after `rst`; lane j of
//     beat B uses the state after B + 1 steps, w: nI = w[31:24], nQ = w[23:16] as signed
//     bytes >>> (8 - noise_bits) (noise_bits 0: no noise; above 8: 8). LANE_SEED[j] is
//     xorshift32 applied 4 times to (j + 1) * 0x9E3779B9 (mod 2^32); each has unequal
//     halves, so no seed makes a lane's state 0.
//   * Lane j of a beat is out[1023 - 16j -: 16], I in the upper byte: byte 2j and 2j + 1
//     of the 128-byte beat in payload order.
//   * One beat ahead: while `advance`, the beat presented in the next cycle is computed
//     and `out` holds it from then (latency 1, one beat per cycle). `first` marks a
//     packet's first beat: lanes 0-3 of it lie under the 8-byte header, its samples start
//     at lane 4, and `spp` is that packet's sample count (the next packet's first sample
//     follows its last). Other beats continue at 64 samples per beat.
//   * step, amp_shift, noise_bits and seed are meant to change only while `rst` holds
//     the generator; a change while it runs takes effect within two beats.
module fhg_tone_gen #(
    parameter int LANES = 64
) (
    input  wire            clk,
    input  wire            rst,
    input  wire            advance,
    input  wire            first,
    input  wire  [12:0]    spp,
    input  wire  [31:0]    step,
    input  wire  [3:0]     amp_shift,
    input  wire  [3:0]     noise_bits,
    input  wire  [15:0]    seed,
    output logic [1023:0]  out
);
    localparam int HEADER_LANES = 4;  // the 8-byte sequence counter

    // LANE_SEED[j] = LANE_SEED_BITS[32j +: 32]
    localparam logic [2047:0] LANE_SEED_BITS = {
        256'h011e494dac35acec4c1dfc49e49331031e0bc659280b7b1c6c5f25d1afe29247,
        256'hdb34b5b096efe8f78b7a878b74af6c7c213ea77c8861f563c6804fa2e1763c46,
        256'he06fcdf4d7fb9c8d4669cdfe9aabee2d5fea6c673ef16b10635c387a56d67241,
        256'h935cc0b7fe6e74393006b3ad45669b6f7de923f2182f558b888e7da180164ce8,
        256'he6f6aaae7dd634b33c847d81a117d72fc7035b901e259b63ffa60b13c099f02c,
        256'h8f56f71700a5633326b5e096744617e99b367c79bcba82ac835d95662c1e6afa,
        256'h9c021fcbff5bbc5f1b88f0b2ba735c7c4ea3ff1fe57b37132be2b034f22f540e,
        256'h12b189e53e4da6e4e599eaedea9809f73a99486e5f7daa88c1b470160183a8b5
    };

    // (Functions assign their name: Yosys does not read `return`.)
    // The cosine table from its first quarter (cos symmetry; round() keeps it exact):
    // COS_TAB[k] = +-quarter_cos(k[6] ? 64 - k[5:0] : k[5:0]), negative in the second
    // and third quarters.
    function automatic logic [6:0] quarter_cos(input logic [6:0] i);
        case (i)
            7'd0: quarter_cos = 7'd127;
            7'd1: quarter_cos = 7'd127;
            7'd2: quarter_cos = 7'd127;
            7'd3: quarter_cos = 7'd127;
            7'd4: quarter_cos = 7'd126;
            7'd5: quarter_cos = 7'd126;
            7'd6: quarter_cos = 7'd126;
            7'd7: quarter_cos = 7'd125;
            7'd8: quarter_cos = 7'd125;
            7'd9: quarter_cos = 7'd124;
            7'd10: quarter_cos = 7'd123;
            7'd11: quarter_cos = 7'd122;
            7'd12: quarter_cos = 7'd122;
            7'd13: quarter_cos = 7'd121;
            7'd14: quarter_cos = 7'd120;
            7'd15: quarter_cos = 7'd118;
            7'd16: quarter_cos = 7'd117;
            7'd17: quarter_cos = 7'd116;
            7'd18: quarter_cos = 7'd115;
            7'd19: quarter_cos = 7'd113;
            7'd20: quarter_cos = 7'd112;
            7'd21: quarter_cos = 7'd111;
            7'd22: quarter_cos = 7'd109;
            7'd23: quarter_cos = 7'd107;
            7'd24: quarter_cos = 7'd106;
            7'd25: quarter_cos = 7'd104;
            7'd26: quarter_cos = 7'd102;
            7'd27: quarter_cos = 7'd100;
            7'd28: quarter_cos = 7'd98;
            7'd29: quarter_cos = 7'd96;
            7'd30: quarter_cos = 7'd94;
            7'd31: quarter_cos = 7'd92;
            7'd32: quarter_cos = 7'd90;
            7'd33: quarter_cos = 7'd88;
            7'd34: quarter_cos = 7'd85;
            7'd35: quarter_cos = 7'd83;
            7'd36: quarter_cos = 7'd81;
            7'd37: quarter_cos = 7'd78;
            7'd38: quarter_cos = 7'd76;
            7'd39: quarter_cos = 7'd73;
            7'd40: quarter_cos = 7'd71;
            7'd41: quarter_cos = 7'd68;
            7'd42: quarter_cos = 7'd65;
            7'd43: quarter_cos = 7'd63;
            7'd44: quarter_cos = 7'd60;
            7'd45: quarter_cos = 7'd57;
            7'd46: quarter_cos = 7'd54;
            7'd47: quarter_cos = 7'd51;
            7'd48: quarter_cos = 7'd49;
            7'd49: quarter_cos = 7'd46;
            7'd50: quarter_cos = 7'd43;
            7'd51: quarter_cos = 7'd40;
            7'd52: quarter_cos = 7'd37;
            7'd53: quarter_cos = 7'd34;
            7'd54: quarter_cos = 7'd31;
            7'd55: quarter_cos = 7'd28;
            7'd56: quarter_cos = 7'd25;
            7'd57: quarter_cos = 7'd22;
            7'd58: quarter_cos = 7'd19;
            7'd59: quarter_cos = 7'd16;
            7'd60: quarter_cos = 7'd12;
            7'd61: quarter_cos = 7'd9;
            7'd62: quarter_cos = 7'd6;
            7'd63: quarter_cos = 7'd3;
            7'd64: quarter_cos = 7'd0;
            default: quarter_cos = 7'd0;
        endcase
    endfunction

    function automatic logic signed [9:0] cos_tab(input logic [7:0] k);
        logic [6:0] i, v;
        i = k[6] ? 7'd64 - {1'b0, k[5:0]} : {1'b0, k[5:0]};
        v = quarter_cos(i);
        cos_tab = (k[7] ^ k[6]) ? -$signed({3'b0, v}) : $signed({3'b0, v});
    endfunction

    function automatic logic [31:0] xorshift32(input logic [31:0] x);
        logic [31:0] y;
        y = x ^ (x << 13);
        y = y ^ (y >> 17);
        xorshift32 = y ^ (y << 5);
    endfunction

    function automatic logic [7:0] sat8(input logic signed [9:0] v);
        if (v > 10'sd127) sat8 = 8'h7f;
        else if (v < -10'sd128) sat8 = 8'h80;
        else sat8 = v[7:0];
    endfunction

    function automatic logic signed [9:0] noise(input logic [7:0] r, input logic [3:0] bits);
        logic signed [9:0] n;
        n = 10'(signed'(r));
        if (bits == 4'd0) noise = 10'sd0;
        else if (bits >= 4'd8) noise = n;
        else noise = n >>> (4'd8 - bits);
    endfunction

    logic [31:0] next_pkt_phase;  // phase of the next packet's first sample
    logic [31:0] beat_phase;      // phase of lane 0 of the next beat within a packet
    logic [31:0] lane_off [LANES];
    logic [31:0] state [LANES];
    logic [31:0] base;

    // Lane 0 of a first beat lies HEADER_LANES samples before the packet's first sample.
    assign base = first ? next_pkt_phase - (step << $clog2(HEADER_LANES)) : beat_phase;

    // j * step, lane by lane (static configuration: settles LANES cycles after a change).
    always_ff @(posedge clk) begin
        lane_off[0] <= '0;
        for (int j = 1; j < LANES; j++) lane_off[j] <= lane_off[j - 1] + step;
    end

    // spp * step by shift and add: no multiplier for the example design's bookkeeping.
    logic [31:0] pkt_advance;
    always_comb begin
        pkt_advance = '0;
        for (int b = 0; b < 13; b++)
            if (spp[b]) pkt_advance = pkt_advance + (step << b);
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            next_pkt_phase <= '0;
            beat_phase     <= '0;
            for (int j = 0; j < LANES; j++)
                state[j] <= LANE_SEED_BITS[32*j +: 32] ^ {seed, seed};
        end else if (advance) begin
            beat_phase <= base + (step << 6);
            if (first) next_pkt_phase <= next_pkt_phase + pkt_advance;
            for (int j = 0; j < LANES; j++) begin
                logic [31:0] w;
                logic [7:0]  k;
                logic signed [9:0] c, s;
                k = 8'((base + lane_off[j]) >> 24);
                c = cos_tab(k) >>> amp_shift;
                s = cos_tab(k - 8'd64) >>> amp_shift;
                w = xorshift32(state[j]);
                state[j] <= w;
                out[1023 - 16*j -: 8] <= sat8(c + noise(w[31:24], noise_bits));
                out[1015 - 16*j -: 8] <= sat8(s + noise(w[23:16], noise_bits));
            end
        end
    end
endmodule
