// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rx_merge — joins the three lanes' datagrams into one stream in arrival order, checks
// their UDP checksum and writes them into the RX frame FIFO (rx MAC clock domain).
//
// Contract
//   * Order: `ord_*` names the lane of each accepted datagram in arrival order, with its
//     meta (fhg_rx_lane acc_meta). The datagram's words are taken from that lane's FIFO one
//     per cycle until its last entry; the next datagram starts in the very next cycle, so the
//     FIFO sees one word per cycle while datagrams are back to back.
//   * UDP checksum (RFC 768): summed over the payload words (bytes past the length masked)
//     plus the lane's header sum; verified when the datagram's checksum field is non-zero.
//     A failure still delivers the datagram, with `bad` set on its last word.
//   * FIFO: words reach `fifo_*` CSUM_DELAY cycles after they left the lane FIFO. A datagram
//     whose lane marked it bad (ok=0 on its last entry) is discarded and not counted here (the
//     lane counted it). When the FIFO has no room for a word, the rest of that datagram is
//     dropped and the whole datagram discarded: st_overrun.
//   * Statistics, one cycle each: st_delivered with the payload length (st_bytes) and word
//     count (st_words), st_bad (delivered with a bad checksum), st_overrun.
//   * FIFO entry (ENTRY_W bits): {empty, meta[95:0], bad, last, byte count - 1 [6:0], data};
//     `empty` marks the one word of a datagram without payload (UDP length 8).
module fhg_rx_merge #(
    localparam int LW = 1024 + 1 + 1 + 8,   // lane FIFO entry {cnt-1[7:0], last, ok, data}
    localparam int MW = 117,
    localparam int ENTRY_W = 1 + 96 + 1 + 1 + 7 + 1024
) (
    input  wire                 clk,
    input  wire                 rst,

    input  wire                 ord_valid,
    input  wire  [1:0]          ord_lane,
    input  wire  [MW-1:0]       ord_meta,
    output logic                ord_pop,

    input  wire  [2:0]          lf_valid,
    input  wire  [3*LW-1:0]     lf_data,
    output logic [2:0]          lf_pop,

    output logic                fifo_wr,
    output logic [ENTRY_W-1:0]  fifo_data,
    output logic                fifo_end,
    output logic                fifo_keep,
    input  wire                 fifo_room,

    output logic                st_delivered,
    output logic [13:0]         st_bytes,
    output logic [7:0]          st_words,
    output logic                st_bad,
    output logic                st_overrun
);
    // ---------------------------------------------------------------- pick and pop
    logic          cur_active;
    logic [1:0]    cur_lane, lane_s;
    logic [MW-1:0] cur_meta, meta_s;
    logic          go, start;
    logic [LW-1:0] word;
    always_comb begin
        start  = !cur_active && ord_valid;
        lane_s = cur_active ? cur_lane : ord_lane;
        meta_s = cur_active ? cur_meta : ord_meta;
        go     = (cur_active || ord_valid) && lf_valid[lane_s];
        word   = lf_data[LW*lane_s +: LW];
        lf_pop = go ? 3'(1 << lane_s) : 3'd0;
        ord_pop = start;
    end
    always_ff @(posedge clk) begin
        if (start) begin
            cur_lane <= ord_lane; cur_meta <= ord_meta; cur_active <= 1'b1;
        end
        if (go && word[1025]) cur_active <= 1'b0;
        if (rst) cur_active <= 1'b0;
    end

    // ---------------------------------------------------------------- checksum pipeline
    // Stage 1: mask the last word's unused bytes, feed the adder tree (3 cycles).
    logic          m1_v, m1_last, m1_ok;
    logic [7:0]    m1_cnt;
    logic [MW-1:0] m1_meta;
    logic [1023:0] m1_data;
    always_ff @(posedge clk) begin
        m1_v <= go;
        m1_last <= word[1025];
        m1_ok <= word[1024];
        m1_cnt <= word[1033:1026];
        m1_meta <= meta_s;
        for (int b = 0; b < 128; b++)
            m1_data[8*b +: 8] <= (!word[1025] || (!word[1033] && 8'(b) <= word[1033:1026]))
                                 ? word[8*b +: 8] : 8'd0;
        if (rst) m1_v <= 1'b0;
    end

    logic [21:0] tsum;
    logic        t_v, t_sof, t_eof;
    fhg_tx_csum_tree u_tree (
        .clk(clk), .data(m1_data), .in_valid(m1_v), .in_sof(1'b0), .in_eof(m1_last),
        .sum(tsum), .out_valid(t_v), .out_sof(t_sof), .out_eof(t_eof)
    );

    // The words wait beside the tree, then one more cycle for the end-around fold.
    localparam int D = 4;
    logic          d_v [D], d_last [D], d_ok [D];
    logic [7:0]    d_cnt [D];
    logic [MW-1:0] d_meta [D];
    logic [1023:0] d_data [D];
    always_ff @(posedge clk) begin
        d_v[0] <= m1_v; d_last[0] <= m1_last; d_ok[0] <= m1_ok; d_cnt[0] <= m1_cnt;
        d_meta[0] <= m1_meta; d_data[0] <= m1_data;
        for (int i = 1; i < D; i++) begin
            d_v[i] <= d_v[i-1]; d_last[i] <= d_last[i-1]; d_ok[i] <= d_ok[i-1];
            d_cnt[i] <= d_cnt[i-1]; d_meta[i] <= d_meta[i-1]; d_data[i] <= d_data[i-1];
        end
        if (rst) for (int i = 0; i < D; i++) d_v[i] <= 1'b0;
    end

    // Accumulate per datagram; d_*[2] is aligned with the tree output.
    logic [31:0] acc, acc_next, total;
    logic [16:0] fold1;
    logic [15:0] fold;
    logic        bad_q, v_last_q;
    always_comb begin
        acc_next = acc + 32'(tsum);
    end
    always_ff @(posedge clk) begin
        if (t_v) acc <= t_eof ? 32'd0 : acc_next;
        v_last_q <= t_v && t_eof;
        total <= acc_next + 32'(d_meta[2][19:0]);
        if (rst) acc <= '0;
    end
    always_comb begin
        fold1 = 17'(total[15:0]) + 17'(total[31:16]);
        fold  = fold1[15:0] + 16'(fold1[16]);
        // checksum field zero: not computed by the sender, nothing to verify
        bad_q = v_last_q && d_meta[3][20] && fold != 16'hFFFF;
    end

    // ---------------------------------------------------------------- FIFO writes
    logic       dropping;
    logic [7:0] nwords;
    logic       ow, oend, okeep, ovr;
    always_comb begin
        ow    = d_v[3] && !dropping && fifo_room && !(d_last[3] && !d_ok[3]);
        oend  = d_v[3] && d_last[3];
        ovr   = d_v[3] && !(d_last[3] && !d_ok[3]) && (dropping || !fifo_room);
        okeep = oend && d_ok[3] && !ovr;
    end
    assign fifo_wr   = ow;
    assign fifo_end  = oend;
    assign fifo_keep = okeep;
    assign fifo_data = {d_last[3] && d_cnt[3][7], d_meta[3][116:21], bad_q && d_last[3], d_last[3],
                        d_cnt[3][6:0], d_data[3]};

    always_ff @(posedge clk) begin
        st_delivered <= okeep;
        st_bad       <= okeep && bad_q;
        st_overrun   <= oend && d_ok[3] && ovr;
        st_words     <= nwords + 8'd1;
        st_bytes     <= 14'({nwords[6:0], 7'd0}) + (d_cnt[3][7] ? 14'd0 : 14'(d_cnt[3][6:0]) + 14'd1);
        if (d_v[3]) nwords <= oend ? 8'd0 : nwords + 8'd1;
        if (ovr) dropping <= 1'b1;
        if (oend) dropping <= 1'b0;
        if (rst) begin
            dropping <= 1'b0; nwords <= '0;
            st_delivered <= 1'b0; st_bad <= 1'b0; st_overrun <= 1'b0;
        end
    end

    logic unused_ok;
    assign unused_ok = &{1'b0, t_sof};
endmodule
