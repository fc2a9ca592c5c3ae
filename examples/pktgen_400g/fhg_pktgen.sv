// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_pktgen — the example design's user logic: sends the example stream (docs/design/architecture.md)
// into a 400GbE block at a rate and size set by software registers.
//
// Contract
//   * Packet n carries `size` bytes of big-endian 64-bit words: word 0 = n, word k =
//     (n << 10) | k; the first payload byte is tx_data[1023:1016]. n starts at 0 and counts
//     every packet sent; `ctrl[1]` (reset) sets it back to 0 and holds the 400GbE block's
//     `rst`.
//   * `ctrl[0]` enables sending. A packet starts when the previous one has ended (at the
//     earliest right after its last word, no idle cycle), at least `period` user_clk cycles
//     after the previous start (0: back to back), and only while `tx_afull` is low (the
//     core asks the user to stop after the current frame).
//   * `count` (non-zero) ends a burst: once `count` packets have been sent since `ctrl[0]`
//     last rose, no new packet starts until enable is cleared and set again. 0: no limit.
//   * `size` is sampled at each packet start: 0 sends nothing, above 8192 sends 8192.
//     `dest_ip`/`dest_port` are sampled at the start too and held through the packet.
//   * `sent` counts packets whose last word was handed to the core.
//   * `spead_ctrl[0]` (sampled at each packet start) sends the packet as a SPEAD heap
//     instead (fhg_pktgen_spead.sv): a 64-byte SPEAD header before the same payload, heap
//     counter n, a timestamp advancing by `spead_ts_step` per packet and `spead_channel`.
module fhg_pktgen (
    input  wire            clk,
    input  wire  [31:0]    ctrl,
    input  wire  [31:0]    period,
    input  wire  [31:0]    count,
    input  wire  [31:0]    size,
    input  wire  [31:0]    dest_ip,
    input  wire  [31:0]    dest_port,
    input  wire  [31:0]    spead_ctrl,
    input  wire  [31:0]    spead_channel,
    input  wire  [31:0]    spead_ts_step,
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
    logic [14:0] frame_c;        // UDP payload bytes of the packet starting

    assign enable  = ctrl[0];
    assign reset   = ctrl[1];
    assign gbe_rst = reset;
    assign size_c  = (size > MAX_BYTES) ? 14'(MAX_BYTES) : size[13:0];
    assign burst_next = burst_sent + {31'd0, tx_end_of_frame};
    assign burst_done = (count != 32'd0) && (burst_next >= count);

    // Words 16*beat .. 16*beat+15 of packet `seq`, word 16*beat first (at the top).
    always_comb begin
        for (int j = 0; j < 16; j++) begin
            logic [63:0] k;
            k = 64'({beat, 4'(j)});
            payload[1023 - 64*j -: 64] = (k == 64'd0) ? seq : ((seq << 10) | k);
        end
    end

    always_comb begin
        tx_byte_enable = '1;
        if (tx_end_of_frame) tx_byte_enable = ~(128'(-1) >> last_bytes);
    end

    assign frame_c = {1'b0, size_c} + (spead_ctrl[0] ? 15'd64 : 15'd0);
    fhg_pktgen_spead u_spead (
        .clk(clk), .rst(reset), .start(start), .spead_en(spead_ctrl[0]),
        .channel(spead_channel), .ts_step(spead_ts_step), .heap_size(size_c), .heap_cnt(seq[47:0]),
        .first_beat(beat == 10'd0), .frame_end(tx_end_of_frame), .payload(payload),
        .data(tx_data)
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
                tx_dest_ip   <= dest_ip;
                tx_dest_port <= dest_port[15:0];
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
    assign unused_inputs = ^{ctrl[31:2], dest_port[31:16], tx_overflow, spead_ctrl[31:1]};
endmodule
