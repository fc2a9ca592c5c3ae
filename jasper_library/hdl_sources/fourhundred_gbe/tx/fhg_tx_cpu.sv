// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_cpu — the CPU TX buffer (register map region 0x4000) and its frame source.
//
// Contract
//   * AXI side (axil_clk): the register block's external-region strobes for cpu_tx_buf
//     (16 KiB, 32-bit words, big-endian bytes: frame byte 4w in bits 31:24 of word w);
//     reads and writes are acknowledged one cycle after the request. Writing cpu_tx_len
//     (len_write, len_value) sends the buffer's first len_value bytes once, if the buffer
//     is not busy and cpu_tx_en was set at that moment; `busy` stays high until the frame
//     has left (or was refused: disabled, shorter than 14 or longer than MAX_LEN = 16368
//     bytes, the most the control-frame path's 10-bit segment count describes; the buffer
//     holds 16384). A length written while busy is ignored.
//   * MAC side (mac_clk): the frame is offered to the control-frame arbiter as segments
//     of 16 bytes in wire order, zero padded to 60 bytes; bytes past the length are zero.
//     Words are prefetched so that, once the frame starts, one word is ready every cycle.
//   * Storage: 32 banks of 128 x 32 bits, so the MAC side reads a whole 1024-bit row per
//     cycle while software writes single words.
module fhg_tx_cpu #(
    localparam int NSEG_W = 10,
    localparam int ROWS   = 128,
    localparam int MAX_LEN = ((1 << NSEG_W) - 1) * 16
) (
    input  wire                 axil_clk,
    input  wire                 axil_rst,
    input  wire                 req,
    input  wire                 req_is_wr,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [13:0]         addr,           // byte address; bits 1:0 are always 0
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire  [31:0]         wr_data,
    output logic                rd_ack,
    output logic                wr_ack,
    output logic [31:0]         rd_data,
    input  wire                 len_write,
    input  wire  [15:0]         len_value,
    input  wire                 cpu_tx_en,
    output logic                busy,

    input  wire                 mac_clk,
    input  wire                 mac_rst,
    output logic                cpu_valid,
    output logic [NSEG_W-1:0]   cpu_nseg,
    output logic [3:0]          cpu_mty,
    output logic [1023:0]       cpu_word,
    output logic                cpu_word_valid,
    input  wire                 cpu_pop,
    input  wire                 cpu_done,
    output logic                stat_refused     // mac_clk: a request was refused
);
    // ================================================================ storage
    logic [4:0]  bank;
    logic [6:0]  row;
    assign bank = addr[6:2];
    assign row  = addr[13:7];

    logic [31:0] a_rdata [32];
    logic [31:0] b_rdata [32];
    logic        fetch;
    logic [6:0]  fetch_row;

    for (genvar b = 0; b < 32; b++) begin : g_bank
        fhg_ram_tdp #(.WIDTH(32), .DEPTH(ROWS)) u_ram (
            .a_clk(axil_clk), .a_en(req && bank == 5'(b)), .a_we(req_is_wr), .a_addr(row),
            .a_wdata(wr_data), .a_rdata(a_rdata[b]),
            .b_clk(mac_clk), .b_en(fetch), .b_we(1'b0), .b_addr(fetch_row),
            .b_wdata(32'd0), .b_rdata(b_rdata[b])
        );
    end

    logic [4:0] bank_q;
    always_ff @(posedge axil_clk) begin
        rd_ack <= req && !req_is_wr;
        wr_ack <= req && req_is_wr;
        bank_q <= bank;
        if (axil_rst) begin
            rd_ack <= 1'b0;
            wr_ack <= 1'b0;
        end
    end
    assign rd_data = a_rdata[bank_q];

    // ================================================================ handshake
    logic [15:0] len_hold;
    logic        en_hold, start_a, done_a, start_m, done_m;
    logic        len_written;
    always_ff @(posedge axil_clk) begin
        // The register's write strobe comes in the cycle the value is stored: act on it
        // one cycle later, when len_value holds the new length.
        len_written <= len_write;
        start_a <= 1'b0;
        if (len_written && !busy) begin
            busy     <= 1'b1;
            len_hold <= len_value;
            en_hold  <= cpu_tx_en;
            start_a  <= 1'b1;
        end
        if (done_a) busy <= 1'b0;
        if (axil_rst) begin
            busy <= 1'b0;
            start_a <= 1'b0;
            len_written <= 1'b0;
        end
    end
    fhg_pulse_sync u_start (.clk_a(axil_clk), .rst_a(axil_rst), .pulse_a(start_a), .busy_a(),
                            .clk_b(mac_clk), .rst_b(mac_rst), .pulse_b(start_m));
    fhg_pulse_sync u_done (.clk_a(mac_clk), .rst_a(mac_rst), .pulse_a(done_m), .busy_a(),
                           .clk_b(axil_clk), .rst_b(axil_rst), .pulse_b(done_a));

    // ================================================================ MAC side
    // len_hold/en_hold are stable while busy, and start_m arrives synchroniser stages after
    // they were written, so the MAC side samples them safely.
    logic        active;
    logic [14:0] len_m;             // bytes of the frame, before padding
    logic [7:0]  nwords, fetched, taken;
    logic [1023:0] q_mem [4];
    logic [1:0]  q_head, q_tail;
    logic [2:0]  q_count;
    logic        inflight;
    logic [6:0]  inflight_row;
    logic [14:0] padded;

    assign padded = (len_m < 15'd60) ? 15'd60 : len_m;

    assign fetch = active && (fetched < nwords) && (3'(q_count) + 3'(inflight) < 3'd4);
    assign fetch_row = fetched[6:0];

    // Wire order with bytes past the length cleared.
    logic [1023:0] arrived;
    always_comb begin
        for (int b = 0; b < 32; b++)
            for (int j = 0; j < 4; j++) begin
                logic [14:0] idx;
                idx = {inflight_row, 7'd0} + 15'(4 * b + j);
                arrived[8 * (4 * b + j) +: 8] = (idx < len_m) ? b_rdata[b][31 - 8 * j -: 8] : 8'h00;
            end
    end

    always_ff @(posedge mac_clk) begin
        done_m <= 1'b0;
        stat_refused <= 1'b0;
        inflight <= fetch;
        inflight_row <= fetch_row;
        if (fetch) fetched <= fetched + 8'd1;
        if (inflight) begin
            q_mem[q_tail] <= arrived;
            q_tail <= q_tail + 2'd1;
        end
        q_count <= q_count + 3'(inflight) - 3'(cpu_pop);
        if (cpu_pop) begin
            q_head <= q_head + 2'd1;
            taken <= taken + 8'd1;
        end
        if (start_m && !active) begin
            if (!en_hold || len_hold < 16'd14 || len_hold > 16'(MAX_LEN)) begin
                done_m <= 1'b1;
                stat_refused <= 1'b1;
            end else begin
                active  <= 1'b1;
                len_m   <= len_hold[14:0];
                nwords  <= 8'((((len_hold < 16'd60) ? 16'd60 : len_hold) + 16'd127) >> 7);
                fetched <= '0;
                taken   <= '0;
                q_head  <= '0;
                q_tail  <= '0;
                q_count <= '0;
            end
        end
        if (cpu_done) begin
            active <= 1'b0;
            done_m <= 1'b1;
        end
        if (mac_rst) begin
            active <= 1'b0;
            inflight <= 1'b0;
            q_count <= '0;
            q_head <= '0;
            q_tail <= '0;
            done_m <= 1'b0;
        end
    end

    // Offered once enough is fetched that the one-word-per-cycle stream cannot starve.
    assign cpu_valid      = active && taken == 8'd0
                            && (q_count >= 3'd3 || 8'(q_count) == nwords);
    assign cpu_nseg       = NSEG_W'((padded + 15'd15) >> 4);
    assign cpu_mty        = 4'(5'd16 - 5'(padded[3:0]));   // 16 wraps to 0 in 4 bits
    assign cpu_word       = q_mem[q_head];
    assign cpu_word_valid = active && q_count != 3'd0;
endmodule
