// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_icrc — writes the RoCEv2 invariant CRC (ICRC, IBTA Annex A17) into the last four
// bytes of every RoCEv2 frame on the DCMAC TX segment bus, at line rate (MAC clock domain).
//
// Contract
//   * Sits between the packer and the DCMAC: in_seg is the packer's bus, tx_seg the DCMAC's.
//     Every cycle passes through unchanged except for the ICRC bytes; the bus is delayed
//     by 13 cycles. The pipeline advances only while tx_tready is high and in_tready
//     is tx_tready, so the cycle sequence (and with it every PG369 rule the packer keeps)
//     is the packer's: tready low holds the whole bus, bubbles stay bubbles.
//   * A frame is patched when cfg_en is set and it is IPv4 (EtherType 0x0800, version/IHL
//     0x45), UDP (protocol 17) to port 4791 and at least four segments long: its last four
//     bytes are replaced by the ICRC over the frame as it is on the bus (the bytes it
//     replaces are not covered). That is every frame of the RDMA mode; a CPU frame that is
//     RoCEv2 gets its ICRC here too. Other frames are never changed.
//   * The CRC is computed from the bus without any per-frame metadata: frames start on a
//     segment boundary (PG369), at most two frames end per cycle (frames are >= 4 segments),
//     and a frame's cycles are consecutive (tvalid never drops inside a frame, which the
//     packer guarantees). The algorithm and its constants: casper400g_dev/icrc_gen.py
//     (fhg_icrc_pkg is generated there).
//   * Throughput: 8 segments per cycle, i.e. whatever the packer sends.
//   * Pipeline (register stage k holds the cycle that the bus delay line holds in dd[k]):
//     2 frame state per segment (inside a frame, index in it, bytes to zero; the next
//       cycle's first segment, still at the packer's output, says whether the ICRC starts
//       in this cycle's last segment);
//     3 masking (a frame's first segment zeroed, TTL/IP checksum/UDP checksum/BTH byte 4
//       set to ones, the ICRC and unused bytes zeroed) and the segments' checks; the
//       segments of each frame ending here and of the frame continuing, as masks;
//     4 per-segment CRC terms (a first segment's term is the constant it stands for);
//     5 per frame, the XOR of its segments' terms;
//     6 the carried state of a frame that spans cycles (the only feedback) and one value
//       per ending frame;
//     7-10 the un-advance to the frame's end, two bits of its byte count per stage;
//     11 the ICRC bytes rotated to their place in a segment;
//     12 the patch: into this cycle's segments, and into the previous cycle's last segment
//       (when the ICRC straddles the cycle boundary) on its way to the output register.
//   * Timing: every stage is a few LUT levels (docs/resources.md, "Timing estimate"): the
//     loops over the segments are written as closed forms, a choice among constant
//     matrices as products followed by a small mux.
module fhg_tx_icrc (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 cfg_en,          // RDMA mode (this clock domain)

    input  wire                 in_tvalid,
    output logic                in_tready,
    input  fhg_bus_pkg::seg_bus_t in_seg,

    output logic                tx_tvalid,
    input  wire                 tx_tready,
    output fhg_bus_pkg::seg_bus_t tx_seg,

    output logic [1:0]          stat_patched     // frames given an ICRC this cycle
);
    localparam int NSEG = 8;                     // segments per cycle
    localparam int SB   = 1 + NSEG * 4 + 32;     // sideband: valid, ena, sop, eop, err, mty
    localparam int DLY  = 11;                    // stages of the bus ahead of the patch
    localparam int MW   = 1024;                  // bits of a 32 x 32 matrix
    localparam int UNW  = 3 * MW;                // one un-advance step's three matrices

    logic ce;
    assign ce = tx_tready;

    // The output register kept as fields: the last segment's bytes are written one by one.
    logic [1023:0] tx_tdata;
    logic [7:0]    tx_ena, tx_sop, tx_eop, tx_err;
    logic [31:0]   tx_mty;
    assign tx_seg = {tx_tdata, tx_ena, tx_sop, tx_eop, tx_err, tx_mty};
    assign in_tready = tx_tready;

    function automatic logic [31:0] mul32(input logic [MW-1:0] m, input logic [31:0] v);
        for (int k = 0; k < 32; k++) mul32[k] = ^(m[32*k +: 32] & v);
    endfunction

    // One un-advance step: v times the matrix of digit k (k = 0: v itself). The three
    // products are built side by side and the digit picks one, so the step's depth is a
    // product's XOR tree and a 4:1 choice.
    function automatic logic [31:0] unadv(input logic [UNW-1:0] m, input logic [1:0] k,
                                          input logic [31:0] v);
        case (k)
            2'd0:    unadv = v;
            2'd1:    unadv = mul32(m[0 +: MW], v);
            2'd2:    unadv = mul32(m[MW +: MW], v);
            default: unadv = mul32(m[2*MW +: MW], v);
        endcase
    endfunction
    // The steps' matrices: n = 16 (7 - q) + mty + 4 < 132, so the last step's digit is at
    // most 2 (its third product is never chosen).
    localparam logic [UNW-1:0] UN_0 = fhg_icrc_pkg::ICRC_UN[0 +: UNW];
    localparam logic [UNW-1:0] UN_1 = fhg_icrc_pkg::ICRC_UN[UNW +: UNW];
    localparam logic [UNW-1:0] UN_2 = fhg_icrc_pkg::ICRC_UN[2*UNW +: UNW];
    localparam logic [UNW-1:0] UN_3 = {{MW{1'b0}}, fhg_icrc_pkg::ICRC_UN[3*UNW +: 2*MW]};

    // ------------------------------------------------------------------ delay line
    // The bus itself: D1..D11 (no reset on the data, so it maps to shift registers).
    logic [1023:0] dd [1:DLY];
    logic [SB-1:0] ds [1:DLY];
    logic [SB-1:0] in_sb;
    assign in_sb = {in_tvalid, in_seg.ena, in_seg.sop, in_seg.eop, in_seg.err, in_seg.mty};
    always_ff @(posedge clk) begin
        if (ce) begin
            dd[1] <= in_seg.tdata;
            ds[1] <= in_sb;
            for (int k = 2; k <= DLY; k++) begin
                dd[k] <= dd[k-1];
                ds[k] <= ds[k-1];
            end
        end
        if (rst) for (int k = 1; k <= DLY; k++) ds[k][SB-1] <= 1'b0;
    end

    // Fields of a stage's sideband; en/so/eo: enabled segments, their SOPs and EOPs.
    function automatic logic sb_v(input logic [SB-1:0] s);
        sb_v = s[SB-1];
    endfunction
    function automatic logic [7:0] sb_en(input logic [SB-1:0] s);
        sb_en = s[SB-1] ? s[SB-2 -: 8] : 8'd0;
    endfunction
    function automatic logic [7:0] sb_sop(input logic [SB-1:0] s);
        sb_sop = s[SB-10 -: 8];
    endfunction
    function automatic logic [7:0] sb_eop(input logic [SB-1:0] s);
        sb_eop = s[SB-18 -: 8];
    endfunction
    function automatic logic [31:0] sb_mty(input logic [SB-1:0] s);
        sb_mty = s[31:0];
    endfunction

    // ------------------------------------------------------------------ stage 2: frame state
    logic        v1;
    logic [7:0]  en1, so1, eo1, sop1, eop1;
    logic [31:0] mty1;
    assign v1   = sb_v(ds[1]);
    assign sop1 = sb_sop(ds[1]);
    assign eop1 = sb_eop(ds[1]);
    assign mty1 = sb_mty(ds[1]);
    assign en1  = sb_en(ds[1]);
    assign so1  = en1 & sop1;
    assign eo1  = en1 & eop1;

    logic        cont;               // a frame continues past the last cycle seen here
    logic [1:0]  rel_c;              // index of that frame's next segment (saturating at 3)
    logic [1:0]  rel [NSEG];         // a segment's index inside its frame (saturating at 3)
    logic [7:0]  infr;               // a frame is in progress at the segment
    logic [15:0] zero [NSEG];        // bytes the CRC sees as zero
    logic        la_eop0;            // the next cycle ends a frame on segment 0 ...
    logic [3:0]  la_mty0;            // ... with this many unused bytes
    assign la_eop0 = in_tvalid && in_seg.ena[0] && in_seg.eop[0];
    assign la_mty0 = in_seg.mty[3:0];

    always_comb begin
        for (int i = 0; i < NSEG; i++) begin
            logic       f, clear, nxt_eop;
            logic [3:0] mty_i, mty_n;
            // The latest SOP up to two segments back sets the index; further back, or the
            // continuing frame's index plus i, saturates.
            if (so1[i])                  rel[i] = 2'd0;
            else if (i >= 1 && so1[i-1]) rel[i] = 2'd1;
            else if (i >= 2 && so1[i-2]) rel[i] = 2'd2;
            else if (i >= 3)             rel[i] = 2'd3;
            else rel[i] = (3'(rel_c) + 3'(i) >= 3'd3) ? 2'd3 : 2'(rel_c + 2'(i));
            // In a frame: a SOP at or before i with no EOP from it up to i - 1, or the
            // continuing frame with no EOP before i.
            f = so1[i];
            for (int j = 0; j < i; j++) begin
                clear = 1'b1;
                for (int k = j; k < i; k++) clear = clear & !eo1[k];
                f = f | (so1[j] & clear);
            end
            clear = 1'b1;
            for (int k = 0; k < i; k++) clear = clear & !eo1[k];
            infr[i] = f | (cont & clear);
            // Zeroed: outside a frame, the first segment (it stands for a constant), the
            // ICRC bytes and whatever follows them (in this segment, or from the segment
            // before an EOP segment with fewer than four bytes).
            mty_i = mty1[4*i +: 4];
            if (i < NSEG - 1) begin
                nxt_eop = en1[i+1] && eop1[i+1] && !sop1[i+1];
                mty_n   = mty1[4*(i+1) +: 4];
            end else begin
                nxt_eop = la_eop0;
                mty_n   = la_mty0;
            end
            for (int b = 0; b < 16; b++)
                zero[i][b] = !(en1[i] && infr[i]) || rel[i] == 2'd0
                           || (eop1[i] && 5'(b) + 5'(mty_i) >= 5'd12)
                           || (!eop1[i] && nxt_eop && mty_n > 4'd12
                               && 5'(b) + 5'(mty_n) >= 5'd28);
        end
    end

    logic [7:0]  fseg2;              // the segment belongs to a frame
    logic [1:0]  rel2 [NSEG];
    logic [15:0] zero2 [NSEG];
    logic        cin2;               // a frame continues into this cycle
    logic [7:0]  cmp_a2, cmp_b2, cmp_c2;   // RoCEv2 fields of a frame's segments 0, 1, 2
    always_ff @(posedge clk) begin
        if (ce) begin
            for (int i = 0; i < NSEG; i++) begin
                logic [127:0] s;
                s = dd[1][128*i +: 128];
                fseg2[i]  <= en1[i] && infr[i];
                rel2[i]   <= rel[i];
                zero2[i]  <= zero[i];
                cmp_a2[i] <= s[8*12 +: 8] == 8'h08 && s[8*13 +: 8] == 8'h00
                             && s[8*14 +: 8] == 8'h45;
                cmp_b2[i] <= s[8*7 +: 8] == 8'd17;
                cmp_c2[i] <= s[8*4 +: 8] == 8'h12 && s[8*5 +: 8] == 8'hB7;
            end
            cin2 <= cont;
            if (v1) begin
                // The frame state after this cycle.
                cont  <= en1[7] && infr[7] && !eop1[7];
                rel_c <= so1[7] ? 2'd1 : so1[6] ? 2'd2 : 2'd3;
            end
        end
        if (rst) begin
            cont  <= 1'b0;
            rel_c <= 2'd0;
        end
    end

    // ------------------------------------------------------------------ stage 3: masking
    logic [7:0]  en2, so2, eo2;
    logic [31:0] mty2;
    assign en2  = sb_en(ds[2]);
    assign so2  = en2 & sb_sop(ds[2]);
    assign eo2  = en2 & sb_eop(ds[2]);
    assign mty2 = sb_mty(ds[2]);

    // Frame slots: 0 and 1 are the first and second frame ending in the cycle, c the frame
    // continuing past it. A segment of a frame belongs to slot 0 when no EOP comes before
    // it, to slot 1 when one does, to c when no EOP comes at or after it.
    logic [7:0] g0, g1, gc, fe0, fe1;
    always_comb begin
        for (int i = 0; i < NSEG; i++) begin
            logic [1:0] n;
            logic       after;
            n = 2'd0;
            for (int k = 0; k < i; k++) n = (n == 2'd0) ? 2'(eo2[k]) : (eo2[k] ? 2'd2 : n);
            after = 1'b0;
            for (int k = i; k < NSEG; k++) after = after | eo2[k];
            g0[i] = n == 2'd0;
            g1[i] = n == 2'd1;
            gc[i] = !after;
        end
        fe0 = eo2 & g0;
        fe1 = eo2 & g1;
    end

    function automatic logic [2:0] enc8(input logic [7:0] onehot);
        enc8 = {|(onehot & 8'hF0), |(onehot & 8'hCC), |(onehot & 8'hAA)};
    endfunction
    function automatic logic [3:0] pick_mty(input logic [7:0] onehot, input logic [31:0] mty);
        pick_mty = '0;
        for (int i = 0; i < NSEG; i++) pick_mty = pick_mty | (onehot[i] ? mty[4*i +: 4] : 4'd0);
    endfunction

    logic [127:0] m3 [NSEG];
    logic [7:0]   chk3;
    logic [7:0]   mask0_3, mask1_3, maskc_3;
    // Per cycle: frame 0 takes the carried state, the continuing frame takes it, a frame
    // ends in slot 0 / 1, its EOP segment is a frame's fourth or later.
    logic         uc0_3, ucc_3, has0_3, has1_3, okq0_3, okq1_3;
    logic [6:0]   fi3 [2];           // {EOP segment, mty} of the frames ending
    always_ff @(posedge clk) if (ce) begin
        for (int i = 0; i < NSEG; i++) begin
            for (int b = 0; b < 16; b++) begin
                logic one;
                one = (rel2[i] == 2'd1 && (b == 6 || b == 8 || b == 9))
                   || (rel2[i] == 2'd2 && (b == 8 || b == 9 || b == 14));
                m3[i][8*b +: 8] <= zero2[i][b] ? 8'h00 : one ? 8'hFF : dd[2][128*i + 8*b +: 8];
            end
            case (rel2[i])
                2'd0:    chk3[i] <= cmp_a2[i];
                2'd1:    chk3[i] <= cmp_b2[i];
                2'd2:    chk3[i] <= cmp_c2[i];
                default: chk3[i] <= 1'b1;
            endcase
        end
        mask0_3 <= fseg2 & g0;
        mask1_3 <= fseg2 & g1;
        maskc_3 <= fseg2 & gc;
        uc0_3   <= cin2 && !(|(so2 & g0));
        ucc_3   <= cin2 && !(|so2) && !(|eo2);
        has0_3  <= |fe0;
        has1_3  <= |fe1;
        okq0_3  <= |(fe0 & fseg2 & {rel2[7] == 2'd3, rel2[6] == 2'd3, rel2[5] == 2'd3,
                                    rel2[4] == 2'd3, rel2[3] == 2'd3, rel2[2] == 2'd3,
                                    rel2[1] == 2'd3, rel2[0] == 2'd3});
        okq1_3  <= |(fe1 & fseg2 & {rel2[7] == 2'd3, rel2[6] == 2'd3, rel2[5] == 2'd3,
                                    rel2[4] == 2'd3, rel2[3] == 2'd3, rel2[2] == 2'd3,
                                    rel2[1] == 2'd3, rel2[0] == 2'd3});
        fi3[0]  <= {enc8(fe0), pick_mty(fe0, mty2)};
        fi3[1]  <= {enc8(fe1), pick_mty(fe1, mty2)};
    end

    // ------------------------------------------------------------------ stage 4: segment terms
    logic [7:0]  so3;
    assign so3 = sb_en(ds[3]) & sb_sop(ds[3]);

    logic [31:0] w4 [NSEG];
    logic [7:0]  chk4, mask0_4, mask1_4, maskc_4;
    logic        uc0_4, ucc_4, has0_4, has1_4, okq0_4, okq1_4;
    logic [6:0]  fi4 [2];
    logic [7:0]  n4 [2];             // bytes to un-advance: 16 (7 - q) + mty + 4
    always_ff @(posedge clk) if (ce) begin
        // A frame's first segment is zero once masked; its term is the constant K it
        // stands for, at its position.
        for (int i = 0; i < NSEG; i++)
            for (int k = 0; k < 32; k++)
                w4[i][k] <= ^(fhg_icrc_pkg::ICRC_M[128*(32*i + k) +: 128] & m3[i])
                            ^ (so3[i] & fhg_icrc_pkg::ICRC_KP[32*i + k]);
        chk4    <= chk3;
        mask0_4 <= mask0_3;
        mask1_4 <= mask1_3;
        maskc_4 <= maskc_3;
        {uc0_4, ucc_4, has0_4, has1_4, okq0_4, okq1_4}
            <= {uc0_3, ucc_3, has0_3, has1_3, okq0_3, okq1_3};
        for (int f = 0; f < 2; f++) begin
            fi4[f] <= fi3[f];
            n4[f]  <= 8'({3'd7 - fi3[f][6:4], fi3[f][3:0]}) + 8'd4;
        end
    end

    // ------------------------------------------------------------------ stage 5: per frame
    logic [31:0] l0_5, l1_5, lc_5;
    logic        okl0_5, okl1_5, oklc_5;
    logic        uc0_5, ucc_5, has0_5, has1_5, okq0_5, okq1_5;
    logic [6:0]  fi5 [2];
    logic [7:0]  n5 [2];
    always_ff @(posedge clk) if (ce) begin
        logic [31:0] a0, a1, ac;
        a0 = '0;
        a1 = '0;
        ac = '0;
        for (int i = 0; i < NSEG; i++) begin
            a0 = a0 ^ (mask0_4[i] ? w4[i] : '0);
            a1 = a1 ^ (mask1_4[i] ? w4[i] : '0);
            ac = ac ^ (maskc_4[i] ? w4[i] : '0);
        end
        l0_5 <= a0;
        l1_5 <= a1;
        lc_5 <= ac;
        okl0_5 <= &(~mask0_4 | chk4);
        okl1_5 <= &(~mask1_4 | chk4);
        oklc_5 <= &(~maskc_4 | chk4);
        {uc0_5, ucc_5, has0_5, has1_5, okq0_5, okq1_5}
            <= {uc0_4, ucc_4, has0_4, has1_4, okq0_4, okq1_4};
        for (int f = 0; f < 2; f++) begin
            fi5[f] <= fi4[f];
            n5[f]  <= n4[f];
        end
    end

    // ------------------------------------------------------------------ stage 6: carried state
    logic        v5;
    assign v5 = sb_v(ds[5]);

    // The carried state of a frame that continues into the next cycle (weighted to this
    // cycle's end), and its check.
    logic [31:0] s_cur, s_adv;
    logic        s_ok;
    assign s_adv = mul32(fhg_icrc_pkg::ICRC_A1024, s_cur);

    logic [31:0] v6 [2];
    logic        ok6 [2];
    logic [6:0]  fi6 [2];
    logic [7:0]  n6 [2];
    always_ff @(posedge clk) begin
        if (ce) begin
            if (v5) begin
                s_cur <= lc_5 ^ (ucc_5 ? s_adv : '0);
                s_ok  <= oklc_5 && (!ucc_5 || s_ok);
            end
            v6[0]  <= l0_5 ^ (uc0_5 ? s_adv : '0);
            v6[1]  <= l1_5;
            ok6[0] <= has0_5 && okq0_5 && okl0_5 && (!uc0_5 || s_ok) && cfg_en;
            ok6[1] <= has1_5 && okq1_5 && okl1_5 && cfg_en;
            for (int f = 0; f < 2; f++) begin
                fi6[f] <= fi5[f];
                n6[f]  <= n5[f];
            end
        end
        if (rst) begin
            s_ok   <= 1'b0;
            s_cur  <= '0;
            ok6[0] <= 1'b0;
            ok6[1] <= 1'b0;
        end
    end

    // ------------------------------------------------------------------ stages 7-10: un-advance
    logic [31:0] v7 [2], v8 [2], v9 [2], crc10 [2];
    logic        ok7 [2], ok8 [2], ok9 [2], ok10 [2];
    logic [6:0]  fi7 [2], fi8 [2], fi9 [2], fi10 [2];
    logic [7:0]  n7 [2], n8 [2], n9 [2];
    always_ff @(posedge clk) begin
        if (ce) begin
            for (int f = 0; f < 2; f++) begin
                v7[f]    <= unadv(UN_0, n6[f][1:0], v6[f]);
                v8[f]    <= unadv(UN_1, n7[f][3:2], v7[f]);
                v9[f]    <= unadv(UN_2, n8[f][5:4], v8[f]);
                crc10[f] <= ~unadv(UN_3, n9[f][7:6], v9[f]);
                {ok7[f], ok8[f], ok9[f], ok10[f]} <= {ok6[f], ok7[f], ok8[f], ok9[f]};
                {fi7[f], fi8[f], fi9[f], fi10[f]} <= {fi6[f], fi7[f], fi8[f], fi9[f]};
                {n7[f], n8[f], n9[f]} <= {n6[f], n7[f], n8[f]};
            end
        end
        if (rst) begin
            for (int f = 0; f < 2; f++) {ok7[f], ok8[f], ok9[f], ok10[f]} <= '0;
        end
    end

    // ------------------------------------------------------------------ stage 11: placement
    // The ICRC of a frame ending in segment q with m = 16 - mty bytes there starts at byte
    // ra = (m - 4) mod 16 of segment q (m >= 4) or of the segment before (m < 4, which may
    // be the previous cycle's last one); in that case it ends in segment q's bytes 0..m-1.
    // img: the four bytes rotated to where they go in a segment (byte b holds ICRC byte
    // (b - ra) mod 16); at_a: the segment it starts in, as one-hot over {the previous
    // cycle's segment 7, segments 0..7}; at_b: segment q when it straddles; by_a / by_b:
    // the bytes of those segments.
    logic [127:0] img11 [2];
    logic [8:0]   at_a11 [2];
    logic [7:0]   at_b11 [2];
    logic [15:0]  by_a11 [2], by_b11 [2];
    logic         ok11 [2];
    always_ff @(posedge clk) begin
        if (ce) begin
            for (int f = 0; f < 2; f++) begin
                logic [2:0] q;
                logic [3:0] mty, ra;
                logic       strad;
                {q, mty} = fi10[f];
                ra    = 4'd12 - mty;
                strad = mty > 4'd12;
                for (int b = 0; b < 16; b++) begin
                    logic [3:0] j;
                    j = 4'(b) - ra;
                    img11[f][8*b +: 8] <= (j < 4'd4) ? crc10[f][8*j[1:0] +: 8] : 8'h00;
                    by_a11[f][b] <= 5'(b) >= 5'(ra) && 5'(b) <= 5'(ra) + 5'd3;
                    by_b11[f][b] <= strad && 5'(b) + 5'(mty) <= 5'd15;
                end
                // Positions of at_a: 0 is the previous cycle's segment 7, s + 1 segment s.
                at_a11[f] <= ok10[f] ? (9'd1 << (strad ? 4'(q) : 4'(q) + 4'd1)) : 9'd0;
                at_b11[f] <= (ok10[f] && strad) ? (8'd1 << q) : 8'd0;
                ok11[f]   <= ok10[f];
            end
        end
        if (rst) begin
            for (int f = 0; f < 2; f++) begin
                at_a11[f] <= '0;
                at_b11[f] <= '0;
                ok11[f]   <= 1'b0;
            end
        end
    end

    // ------------------------------------------------------------------ stage 12: patch, output
    // d12: this cycle's bus with its frames' ICRCs; its segment 7 may still take the next
    // cycle's first frame's ICRC (straddling) on its way to the output register.
    logic [1023:0] d12;
    logic [SB-1:0] s12;
    always_ff @(posedge clk) begin
        if (ce) begin
            for (int s = 0; s < NSEG; s++)
                for (int b = 0; b < 16; b++) begin
                    logic p0, p1;
                    p0 = (at_a11[0][s+1] && by_a11[0][b]) || (at_b11[0][s] && by_b11[0][b]);
                    p1 = (at_a11[1][s+1] && by_a11[1][b]) || (at_b11[1][s] && by_b11[1][b]);
                    d12[128*s + 8*b +: 8] <= p0 ? img11[0][8*b +: 8]
                                           : p1 ? img11[1][8*b +: 8]
                                           : dd[DLY][128*s + 8*b +: 8];
                end
            tx_tdata[895:0] <= d12[895:0];
            for (int b = 0; b < 16; b++)
                tx_tdata[896 + 8*b +: 8] <= (at_a11[0][0] && by_a11[0][b]) ? img11[0][8*b +: 8]
                                          : (at_a11[1][0] && by_a11[1][b]) ? img11[1][8*b +: 8]
                                          : d12[896 + 8*b +: 8];
            s12 <= ds[DLY];
            {tx_tvalid, tx_ena, tx_sop, tx_eop, tx_err, tx_mty} <= s12;
            stat_patched <= 2'(ok11[0]) + 2'(ok11[1]);
        end else begin
            stat_patched <= 2'd0;
        end
        if (rst) begin
            s12[SB-1] <= 1'b0;
            tx_tvalid <= 1'b0;
            tx_ena    <= '0;
            tx_sop    <= '0;
            tx_eop    <= '0;
            stat_patched <= 2'd0;
        end
    end
endmodule
