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
//   * FIFO: words reach `fifo_*` 10 cycles after they left the lane FIFO (register, mask,
//     the 3-cycle adder tree, then accumulate, add the header's part, fold: one adder each). A datagram
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
    // Stage 0: the taken word, registered as it leaves its lane.
    logic          m0_v;
    logic [LW-1:0] m0_word;
    logic [MW-1:0] m0_meta;
    always_ff @(posedge clk) begin
        m0_v    <= go;
        m0_word <= word;
        m0_meta <= meta_s;
        if (rst) m0_v <= 1'b0;
    end

    // Stage 1: mask the last word's unused bytes, feed the adder tree (3 cycles).
    logic          m1_v, m1_last, m1_ok;
    logic [7:0]    m1_cnt;
    logic [MW-1:0] m1_meta;
    logic [1023:0] m1_data;
    always_ff @(posedge clk) begin
        m1_v <= m0_v;
        m1_last <= m0_word[1025];
        m1_ok <= m0_word[1024];
        m1_cnt <= m0_word[1033:1026];
        m1_meta <= m0_meta;
        for (int b = 0; b < 128; b++)
            m1_data[8*b +: 8] <= (!m0_word[1025] || (!m0_word[1033] && 8'(b) <= m0_word[1033:1026]))
                                 ? m0_word[8*b +: 8] : 8'd0;
        if (rst) m1_v <= 1'b0;
    end

    logic [21:0] tsum;
    logic        t_v, t_sof, t_eof;
    fhg_tx_csum_tree u_tree (
        .clk(clk), .data(m1_data), .in_valid(m1_v), .in_sof(1'b0), .in_eof(m1_last),
        .sum(tsum), .out_valid(t_v), .out_sof(t_sof), .out_eof(t_eof)
    );

    // The words wait beside the tree (d_*[2] is aligned with its output), then three more
    // cycles while the datagram's sum is closed: accumulated (into d_*[3]), the header's
    // part added (d_*[4]), folded and compared (d_*[5]), which the FIFO write then uses.
    localparam int D = 6;
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

    // Accumulate per datagram, one adder per stage after the running sum.
    logic [31:0] acc, acc_next, dsum, total;
    logic [16:0] fold1;
    logic        sum_ok, bad_q;
    assign acc_next = acc + 32'(tsum);
    always_ff @(posedge clk) begin
        if (t_v) acc <= t_eof ? 32'd0 : acc_next;
        dsum  <= acc_next;                            // with d_*[3]
        total <= dsum + 32'(d_meta[3][19:0]);         // with d_*[4]
        // The ones'-complement fold of `total` is 0xFFFF exactly when its two halves add
        // up to 0xFFFF or 0x1FFFE.
        sum_ok <= fold1 == 17'h0FFFF || fold1 == 17'h1FFFE;   // with d_*[5]
        if (rst) acc <= '0;
    end
    assign fold1 = 17'(total[15:0]) + 17'(total[31:16]);
    // checksum field zero: not computed by the sender, nothing to verify
    assign bad_q = d_last[D-1] && d_meta[D-1][20] && !sum_ok;

    // ---------------------------------------------------------------- FIFO writes
    logic       dropping;
    logic [7:0] nwords;
    logic       ow, oend, okeep, ovr;
    localparam int L = D - 1;
    always_comb begin
        ow    = d_v[L] && !dropping && fifo_room && !(d_last[L] && !d_ok[L]);
        oend  = d_v[L] && d_last[L];
        ovr   = d_v[L] && !(d_last[L] && !d_ok[L]) && (dropping || !fifo_room);
        okeep = oend && d_ok[L] && !ovr;
    end
    assign fifo_wr   = ow;
    assign fifo_end  = oend;
    assign fifo_keep = okeep;
    assign fifo_data = {d_last[L] && d_cnt[L][7], d_meta[L][116:21], bad_q, d_last[L],
                        d_cnt[L][6:0], d_data[L]};

    always_ff @(posedge clk) begin
        st_delivered <= okeep;
        st_bad       <= okeep && bad_q;
        st_overrun   <= oend && d_ok[L] && ovr;
        st_words     <= nwords + 8'd1;
        st_bytes     <= 14'({nwords[6:0], 7'd0}) + (d_cnt[L][7] ? 14'd0 : 14'(d_cnt[L][6:0]) + 14'd1);
        if (d_v[L]) nwords <= oend ? 8'd0 : nwords + 8'd1;
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
