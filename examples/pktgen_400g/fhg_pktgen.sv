// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_pktgen — the example design's user logic: sends the example stream (docs/design/architecture.md),
// or a tone, into a 400GbE block at a rate and size set by software registers.
//
// Contract
//   * Every packet's payload starts with its sequence number n, a big-endian 64-bit word;
//     the first payload byte is tx_data[1023:1016]. n starts at 0 and counts every packet
//     sent; `ctrl[1]` (reset) sets it back to 0, restarts the tone source and holds the
//     400GbE block's `rst`. A non-zero STREAM_ID takes that word's first byte: the word
//     is {STREAM_ID, n[55:0]}, so a receiver taking several generators' streams tells
//     them apart (byte 0 the stream, bytes 1..7 the sequence number); 0 leaves n whole.
//   * `mode` (sampled at each packet start) chooses the payload after the header:
//       MODE_EXAMPLE (0, and any mode not listed): the example stream, `size` bytes of
//         big-endian 64-bit words, word k (1..) = (n << 10) | k;
//       MODE_TONE (1): int8 complex samples (I, Q) of a tone plus noise (fhg_tone_gen,
//         contract there): packet n carries samples n*spp .. n*spp + spp - 1 of the
//         stream, spp = (size - 8) / 2; `tone_step` is the phase step per sample (2^32 =
//         one turn), `tone_shape` [3:0] the amplitude shift, [11:8] the noise bits,
//         [31:16] the noise seed.
//     The framing (`spead_ctrl`, below) is independent of the mode.
//   * `ctrl[0]` enables sending. A packet starts when the previous one has ended (at the
//     earliest right after its last word, no idle cycle), at least `period` user_clk cycles
//     after the previous start (0: back to back), and only while `tx_afull` is low (the
//     core asks the user to stop after the current frame).
//   * `count` (non-zero) ends a burst: once `count` packets have been sent since `ctrl[0]`
//     last rose, no new packet starts until enable is cleared and set again. 0: no limit.
//   * `size` is sampled at each packet start: 0 sends nothing, above 8192 sends 8192.
//   * Destination: the destination table (fhg_dest_table, contract there; its software
//     words are the `dest_tbl_*` ports) gives each packet's IP, UDP port and channel,
//     sampled at the packet's start and held through it. With the table off (its
//     configuration state) every packet goes to `dest_ip`/`dest_port` with channel
//     `spead_channel`; with it on, packet k of each spectrum of G packets goes to entry k.
//   * `sent` counts packets whose last word was handed to the core.
//   * `spead_ctrl[0]` (sampled at each packet start) sends the packet as a SPEAD heap
//     instead (fhg_pktgen_spead.sv): a 64-byte SPEAD header before the same payload (of
//     either mode), heap counter n, a timestamp advancing by `spead_ts_step` per
//     spectrum (per packet with the table off: every packet a spectrum of its own) and
//     the packet's channel (`spead_channel`, or its table entry's).
module fhg_pktgen #(
    parameter logic [7:0] STREAM_ID = 8'd0
) (
    input  wire            clk,
    input  wire  [31:0]    ctrl,
    input  wire  [31:0]    period,
    input  wire  [31:0]    count,
    input  wire  [31:0]    size,
    input  wire  [31:0]    dest_ip,
    input  wire  [31:0]    dest_port,
    input  wire  [31:0]    mode,
    input  wire  [31:0]    tone_step,
    input  wire  [31:0]    tone_shape,
    input  wire  [31:0]    spead_ctrl,
    input  wire  [31:0]    spead_channel,
    input  wire  [31:0]    spead_ts_step,
    input  wire  [31:0]    dest_tbl_ip,
    input  wire  [31:0]    dest_tbl_port,
    input  wire  [31:0]    dest_tbl_count,
    input  wire  [31:0]    dest_tbl_ctrl,
    output logic [31:0]    dest_tbl_status,
    output logic [31:0]    dest_tbl_switch,
    output logic [31:0]    dest_tbl_sent,
    output logic [31:0]    sent,
    output logic           gbe_rst,
    output logic [1023:0]  tx_data,
    output logic           tx_valid,
    output logic [127:0]   tx_byte_enable,
    output logic [31:0]    tx_dest_ip,
    output logic [15:0]    tx_dest_port,
    output logic           tx_end_of_frame,
    input  wire            tx_afull,
    input  wire            tx_overflow
);
    localparam int MAX_BYTES = 8192;
    localparam int HEADER_BYTES = 8;
    localparam logic [31:0] MODE_EXAMPLE = 32'd0;
    localparam logic [31:0] MODE_TONE    = 32'd1;

    logic        enable, reset;
    logic [63:0] seq;            // n of the packet being sent (or next)
    logic [9:0]  beat;           // beat within the packet (128 B each)
    logic [9:0]  last_beat;
    logic [7:0]  last_bytes;     // bytes in the last beat, 1..128
    logic        busy;
    logic [31:0] since_start;
    logic [13:0] size_c;
    logic        enable_q;
    logic [31:0] burst_sent;     // packets sent since enable last rose
    logic        burst_done;
    logic [31:0] burst_next;     // burst_sent counting a packet that ends this cycle
    logic        start;          // a packet starts next cycle (possibly right after EOF)
    logic [1023:0] payload;      // the payload beat; SPEAD framing wraps it
    logic [1023:0] example_data, tone_data, tone_samples;
    logic [31:0] pkt_mode;       // mode of the packet being sent (sampled at its start)
    logic [9:0]  last_payload_beat;  // of the packet being sent (SPEAD adds a frame beat)
    logic [14:0] frame_c;        // UDP payload bytes of the packet starting
    logic [31:0] route_ip, route_chan;  // the next packet's destination (the table's)
    logic [15:0] route_port;
    logic        route_last;     // it ends its spectrum
    logic        pkt_last;       // of the packet being sent
    logic [63:0] header;         // payload word 0: the sequence number (and stream id)

    assign enable  = ctrl[0];
    assign reset   = ctrl[1];
    assign gbe_rst = reset;
    assign size_c  = (size > MAX_BYTES) ? 14'(MAX_BYTES) : size[13:0];
    assign burst_next = burst_sent + {31'd0, tx_end_of_frame};
    assign burst_done = (count != 32'd0) && (burst_next >= count);

    assign header = (STREAM_ID == 8'd0) ? seq : {STREAM_ID, seq[55:0]};

    // Words 16*beat .. 16*beat+15 of packet `seq`, word 16*beat first (at the top).
    always_comb begin
        for (int j = 0; j < 16; j++) begin
            logic [63:0] k;
            k = 64'({beat, 4'(j)});
            example_data[1023 - 64*j -: 64] = (k == 64'd0) ? header : ((seq << 10) | k);
        end
    end

    // Tone: the source computes the payload beat of the next cycle (its output is
    // registered), so it is told now whether one follows and whether it starts a packet.
    fhg_tone_gen u_tone (
        .clk        (clk),
        .rst        (reset),
        .advance    ((start ? mode : pkt_mode) == MODE_TONE &&
                     (start || (busy && !tx_end_of_frame && beat < last_payload_beat))),
        .first      (start),
        .spp        (size_c >= 14'(HEADER_BYTES) ? 13'((size_c - 14'(HEADER_BYTES)) >> 1) : 13'd0),
        .step       (tone_step),
        .amp_shift  (tone_shape[3:0]),
        .noise_bits (tone_shape[11:8]),
        .seed       (tone_shape[31:16]),
        .out        (tone_samples)
    );
    assign tone_data = (beat == 10'd0) ? {header, tone_samples[1023 - 8*HEADER_BYTES:0]} : tone_samples;

    // The mode selects the payload; further modes add a case here.
    always_comb begin
        case (pkt_mode)
            MODE_TONE: payload = tone_data;
            default:   payload = example_data;
        endcase
    end

    always_comb begin
        tx_byte_enable = '1;
        if (tx_end_of_frame) tx_byte_enable = ~(128'(-1) >> last_bytes);
    end

    fhg_dest_table u_dest (
        .clk(clk), .rst(reset),
        .sw_ip(dest_tbl_ip), .sw_port(dest_tbl_port), .sw_count(dest_tbl_count),
        .sw_ctrl(dest_tbl_ctrl), .sw_status(dest_tbl_status), .sw_switch_n(dest_tbl_switch),
        .sw_sent(dest_tbl_sent),
        .default_ip(dest_ip), .default_port(dest_port[15:0]), .default_chan(spead_channel),
        .take(start), .dest_ip(route_ip), .dest_port(route_port), .dest_chan(route_chan),
        .dest_last(route_last)
    );

    assign frame_c = {1'b0, size_c} + (spead_ctrl[0] ? 15'd64 : 15'd0);
    fhg_pktgen_spead u_spead (
        .clk(clk), .rst(reset), .start(start), .spead_en(spead_ctrl[0]),
        .channel(route_chan), .ts_step(spead_ts_step), .heap_size(size_c), .heap_cnt(seq[47:0]),
        .first_beat(beat == 10'd0), .ts_advance(tx_end_of_frame && pkt_last),
        .payload(payload), .data(tx_data)
    );

    assign tx_valid        = busy;
    assign tx_end_of_frame = busy && (beat == last_beat);
    // The next packet may follow the last word of the previous one with no idle cycle:
    // back to back, a 64-word (8192 B) packet every 64 user_clk cycles.
    assign start = enable && enable_q && !burst_done && !tx_afull && size_c != 0 &&
                   since_start >= period && (!busy || tx_end_of_frame);

    always_ff @(posedge clk) begin
        if (reset) begin
            seq         <= '0;
            beat        <= '0;
            busy        <= 1'b0;
            sent        <= '0;
            since_start <= '1;
            last_beat   <= '0;
            last_bytes  <= 8'd128;
            tx_dest_ip   <= '0;
            tx_dest_port <= '0;
            enable_q     <= 1'b0;
            burst_sent   <= '0;
            pkt_mode     <= MODE_EXAMPLE;
            pkt_last     <= 1'b1;
            last_payload_beat <= '0;
        end else begin
            enable_q <= enable;
            if (enable && !enable_q) burst_sent <= '0;
            else if (tx_end_of_frame) burst_sent <= burst_sent + 32'd1;
            if (since_start != '1) since_start <= since_start + 32'd1;
            if (busy && tx_end_of_frame) begin
                seq  <= seq + 64'd1;
                sent <= sent + 32'd1;
            end
            if (start) begin
                busy         <= 1'b1;
                beat         <= '0;
                since_start  <= 32'd1;
                last_beat    <= 10'((frame_c - 15'd1) >> 7);
                last_bytes   <= 8'(frame_c - {(frame_c - 15'd1) >> 7, 7'd0});
                tx_dest_ip   <= route_ip;
                tx_dest_port <= route_port;
                pkt_last     <= route_last;
                pkt_mode     <= mode;
                last_payload_beat <= 10'((size_c - 14'd1) >> 7);
            end else if (busy && tx_end_of_frame) begin
                busy <= 1'b0;
                beat <= '0;
            end else if (busy) begin
                beat <= beat + 10'd1;
            end
        end
    end

    // Overflow is visible to software through the core's counters.
    logic unused_inputs;
    assign unused_inputs = ^{ctrl[31:2], dest_port[31:16], tx_overflow, spead_ctrl[31:1],
                             tone_shape[15:12], tone_shape[7:4]};
endmodule
