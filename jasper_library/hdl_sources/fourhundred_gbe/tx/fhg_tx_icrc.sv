// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_icrc — writes the RoCEv2 invariant CRC (ICRC, IBTA Annex A17) into the last four
// bytes of every RoCEv2 frame on the DCMAC TX segment bus, at line rate (MAC clock domain).
//
// Contract
//   * Sits between the packer and the DCMAC: in_* is the packer's bus, tx_* the DCMAC's.
//     Every cycle passes through unchanged except for the ICRC bytes; the bus is delayed
//     by 9 cycles. The pipeline advances only while tx_tready is high and in_tready
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
//   * Pipeline: D1 capture; D2 masking (a frame's first segment is replaced by a constant,
//     TTL/IP checksum/UDP checksum/BTH byte 4 set to ones, the ICRC and unused bytes
//     zeroed; the next cycle's first segment, still at the packer's output, says whether
//     the ICRC starts in this cycle's last segment); D3 per-segment CRC terms; D4 their
//     prefix XOR; D5 one value per ending frame (the carried state of a frame that spans
//     cycles is the only feedback); D6/D7 two un-advances; the patch goes into D8 (the
//     ICRC's segment) and the output register (the segment before it, when the ICRC
//     straddles a cycle boundary).
module fhg_tx_icrc (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 cfg_en,          // RDMA mode (this clock domain)

    input  wire                 in_tvalid,
    output logic                in_tready,
    input  wire  [1023:0]       in_tdata,
    input  wire  [7:0]          in_ena,
    input  wire  [7:0]          in_sop,
    input  wire  [7:0]          in_eop,
    input  wire  [7:0]          in_err,
    input  wire  [31:0]         in_mty,

    output logic                tx_tvalid,
    input  wire                 tx_tready,
    output logic [1023:0]       tx_tdata,
    output logic [7:0]          tx_ena,
    output logic [7:0]          tx_sop,
    output logic [7:0]          tx_eop,
    output logic [7:0]          tx_err,
    output logic [31:0]         tx_mty,

    output logic [1:0]          stat_patched     // frames given an ICRC this cycle
);
    localparam int SB = 1 + 8 * 4 + 32;          // sideband: valid, ena, sop, eop, err, mty

    logic ce;
    assign ce = tx_tready;
    assign in_tready = tx_tready;

    function automatic logic [31:0] mul32(input logic [1023:0] m, input logic [31:0] v);
        for (int k = 0; k < 32; k++) mul32[k] = ^(m[32*k +: 32] & v);
    endfunction

    // ------------------------------------------------------------------ delay line
    // The bus itself: D1..D8 (no reset on the data, so it maps to shift registers).
    logic [1023:0] dd [1:7];
    logic [SB-1:0] ds [1:7];
    logic [SB-1:0] in_sb;
    assign in_sb = {in_tvalid, in_ena, in_sop, in_eop, in_err, in_mty};
    always_ff @(posedge clk) begin
        if (ce) begin
            dd[1] <= in_tdata;
            ds[1] <= in_sb;
            for (int k = 2; k <= 7; k++) begin
                dd[k] <= dd[k-1];
                ds[k] <= ds[k-1];
            end
        end
        if (rst) for (int k = 1; k <= 7; k++) ds[k][SB-1] <= 1'b0;
    end

    // Sideband of stage 1.
    logic        v1;
    logic [7:0]  ena1, sop1, eop1;
    logic [31:0] mty1;
    logic [7:0]  unused_err1;
    assign {v1, ena1, sop1, eop1, unused_err1, mty1} = ds[1];

    // ------------------------------------------------------------------ D2: masking
    // rel: the segment's index inside its frame (saturating at 3).
    logic [1:0]  rel_c;              // rel of the next segment of a frame continuing
    logic        cont2;              // a frame continues past the last cycle seen here
    logic [1:0]  rel [8];
    logic [7:0]  fseg;               // segment belongs to a frame
    logic [127:0] mseg [8];
    logic [7:0]  chk;                // the segment passes its RoCEv2 check (rel 0..2)
    logic        la_eop0;            // the next cycle ends a frame on segment 0 ...
    logic [4:0]  la_m0;              // ... with this many bytes in it
    assign la_eop0 = in_tvalid && in_ena[0] && in_eop[0];
    assign la_m0   = 5'd16 - 5'(in_mty[3:0]);

    always_comb begin
        logic [1:0] r;
        logic       infr;
        r    = rel_c;
        infr = cont2;
        for (int i = 0; i < 8; i++) begin
            logic [127:0] s;
            logic [4:0]   m, mn;
            logic         en, nxt_eop;
            en = v1 && ena1[i];
            if (en && sop1[i]) begin
                r = 2'd0;
                infr = 1'b1;
            end
            rel[i]  = r;
            fseg[i] = en && infr;
            s = dd[1][128*i +: 128];
            // RoCEv2 check of the fields this segment carries.
            case (r)
                2'd0: chk[i] = s[8*12 +: 8] == 8'h08 && s[8*13 +: 8] == 8'h00
                               && s[8*14 +: 8] == 8'h45;
                2'd1: chk[i] = s[8*7 +: 8] == 8'd17;
                2'd2: chk[i] = s[8*4 +: 8] == 8'h12 && s[8*5 +: 8] == 8'hB7;
                default: chk[i] = 1'b1;
            endcase
            // Masks of the ICRC.
            case (r)
                2'd0: s = '0;
                2'd1: begin
                    s[8*6 +: 8] = 8'hFF;
                    s[8*8 +: 16] = 16'hFFFF;
                end
                2'd2: begin
                    s[8*8 +: 16] = 16'hFFFF;
                    s[8*14 +: 8] = 8'hFF;
                end
                default: ;
            endcase
            // Zero the ICRC bytes and whatever follows them.
            m = 5'd16 - 5'(mty1[4*i +: 4]);
            if (i < 7) begin
                nxt_eop = v1 && ena1[i+1] && eop1[i+1] && !sop1[i+1];
                mn = 5'd16 - 5'(mty1[4*(i+1) +: 4]);
            end else begin
                nxt_eop = la_eop0;
                mn = la_m0;
            end
            for (int b = 0; b < 16; b++) begin
                if (eop1[i] && 5'(b) + 5'd4 >= m) s[8*b +: 8] = 8'h00;
                if (!eop1[i] && nxt_eop && mn < 5'd4 && 5'(b) >= 5'd12 + mn) s[8*b +: 8] = 8'h00;
            end
            mseg[i] = fseg[i] ? s : '0;
            if (en && eop1[i]) infr = 1'b0;
            if (r != 2'd3) r = r + 2'd1;
        end
    end

    always_ff @(posedge clk) begin
        if (ce && v1) begin
            // The frame state after this cycle: what the loop above ends with.
            cont2 <= fseg[7] && !eop1[7];
            rel_c <= (rel[7] == 2'd3) ? 2'd3 : rel[7] + 2'd1;
        end
        if (rst) begin
            cont2 <= 1'b0;
            rel_c <= 2'd0;
        end
    end

    logic [127:0] m2 [8];
    logic [7:0]   chk2, rel3_2;
    always_ff @(posedge clk) if (ce) begin
        for (int i = 0; i < 8; i++) begin
            m2[i]     <= mseg[i];
            rel3_2[i] <= rel[i] == 2'd3;
        end
        chk2 <= chk;
    end

    // ------------------------------------------------------------------ D3: segment terms
    logic        v2;
    logic [7:0]  ena2, sop2, eop2;
    logic [31:0] mty2;
    logic [7:0]  unused_err2;
    assign {v2, ena2, sop2, eop2, unused_err2, mty2} = ds[2];

    logic [31:0] w3 [8];
    logic [7:0]  chk3, rel3_3;
    always_ff @(posedge clk) if (ce) begin
        for (int i = 0; i < 8; i++)
            for (int k = 0; k < 32; k++)
                w3[i][k] <= ^(fhg_icrc_pkg::ICRC_M[128*(32*i + k) +: 128] & m2[i]);
        chk3   <= chk2;
        rel3_3 <= rel3_2;
    end

    // ------------------------------------------------------------------ D4: prefix sums
    logic        v3;
    logic [7:0]  ena3, sop3, eop3;
    logic [31:0] mty3;
    logic [7:0]  unused_err3;
    assign {v3, ena3, sop3, eop3, unused_err3, mty3} = ds[3];

    logic [31:0] p4 [8];
    logic [7:0]  chk4, rel3_4;
    always_ff @(posedge clk) if (ce) begin
        logic [31:0] acc;
        acc = '0;
        for (int i = 0; i < 8; i++) begin
            acc = acc ^ w3[i];
            p4[i] <= acc;
        end
        chk4   <= chk3;
        rel3_4 <= rel3_3;
    end

    // ------------------------------------------------------------------ D5: per frame
    logic        v4;
    logic [7:0]  ena4, sop4, eop4;
    logic [31:0] mty4;
    logic [7:0]  unused_err4;
    assign {v4, ena4, sop4, eop4, unused_err4, mty4} = ds[4];

    // Carried state of a frame that continues into the next cycle, and its check.
    logic [31:0] s_cur;
    logic        s_ok, cont4;

    logic [7:0]  e_seg, s_seg;
    assign e_seg = (v4 ? ena4 : 8'd0) & eop4;
    assign s_seg = (v4 ? ena4 : 8'd0) & sop4;

    // Per frame ending here (at most two): its value before the un-advances.
    logic [31:0] fv [2];
    logic [2:0]  fq [2];
    logic [3:0]  fmty [2];
    logic        fok [2], fhas [2];
    logic [31:0] s_next;
    logic        s_ok_next, cont_next;
    always_comb begin
        logic [31:0] x;
        logic [31:0] pstart;
        logic        ok, infr;
        int          n;
        n = 0;
        // Frame in progress at segment i: its start term x (weighted), the prefix sum up
        // to its start (its SOP segment contributes nothing), its check so far.
        infr   = cont4;
        x      = mul32(fhg_icrc_pkg::ICRC_A1024, s_cur);
        pstart = '0;
        ok     = s_ok;
        for (int f = 0; f < 2; f++) begin
            fv[f] = '0; fq[f] = '0; fmty[f] = '0; fok[f] = 1'b0; fhas[f] = 1'b0;
        end
        for (int i = 0; i < 8; i++) begin
            if (s_seg[i]) begin
                infr   = 1'b1;
                x      = fhg_icrc_pkg::ICRC_KP[32*i +: 32];
                pstart = p4[i];
                ok     = 1'b1;
            end
            if (v4 && ena4[i]) ok = ok && chk4[i];
            if (e_seg[i] && n < 2) begin
                fv[n]   = x ^ p4[i] ^ pstart;
                fq[n]   = 3'(i);
                fmty[n] = mty4[4*i +: 4];
                fok[n]  = ok && rel3_4[i] && infr;
                fhas[n] = 1'b1;
                n = n + 1;
            end
            if (e_seg[i]) infr = 1'b0;
        end
        s_next    = x ^ p4[7] ^ pstart;
        s_ok_next = ok;
        cont_next = infr;
    end

    always_ff @(posedge clk) begin
        if (ce && v4) begin
            s_cur <= s_next;
            s_ok  <= s_ok_next;
            cont4 <= cont_next;
        end
        if (rst) begin
            cont4 <= 1'b0;
            s_ok  <= 1'b0;
            s_cur <= '0;
        end
    end

    logic [31:0] v5 [2];
    logic [2:0]  q5 [2];
    logic [3:0]  mty5 [2];
    logic        ok5 [2];
    always_ff @(posedge clk) if (ce) begin
        for (int f = 0; f < 2; f++) begin
            v5[f]   <= fv[f];
            q5[f]   <= fq[f];
            mty5[f] <= fmty[f];
            ok5[f]  <= fhas[f] && fok[f] && cfg_en;
        end
    end

    // ------------------------------------------------------------------ D6, D7: un-advances
    logic [31:0] v6 [2];
    logic [2:0]  q6 [2];
    logic [3:0]  mty6 [2];
    logic        ok6 [2];
    always_ff @(posedge clk) if (ce) begin
        for (int f = 0; f < 2; f++) begin
            v6[f]   <= mul32(fhg_icrc_pkg::ICRC_UNSEG[1024 * (3'd7 - q5[f]) +: 1024], v5[f]);
            q6[f]   <= q5[f];
            mty6[f] <= mty5[f];
            ok6[f]  <= ok5[f];
        end
    end

    logic [31:0] crc7 [2];
    logic [2:0]  q7 [2];
    logic [4:0]  m7 [2];
    logic        ok7 [2];
    always_ff @(posedge clk) begin
        if (ce) begin
            for (int f = 0; f < 2; f++) begin
                crc7[f] <= ~mul32(fhg_icrc_pkg::ICRC_UNEND[1024 * mty6[f] +: 1024], v6[f]);
                q7[f]   <= q6[f];
                m7[f]   <= 5'd16 - 5'(mty6[f]);
                ok7[f]  <= ok6[f];
            end
        end
        if (rst) begin
            ok7[0] <= 1'b0;
            ok7[1] <= 1'b0;
        end
    end

    // ------------------------------------------------------------------ patch, output
    // crc7/q7/m7/ok7 describe the frames ending in the cycle now in D7.
    logic [1023:0] d8, d8_next, out_next;
    logic [SB-1:0] s8;
    // Positions in the 256 bytes {this cycle, the cycle before}: the previous cycle's bytes
    // are 0..127, this cycle's 128..255; the ICRC starts at 128 + 16 q + m - 4.
    logic [8:0] icrc_at [2];
    always_comb for (int f = 0; f < 2; f++) icrc_at[f] = 9'(16 * q7[f]) + 9'(m7[f]) + 9'd124;

    always_comb begin
        logic [2047:0] pair;
        pair = {dd[7], d8};
        for (int f = 0; f < 2; f++)
            for (int b = 0; b < 256; b++)
                if (ok7[f] && 9'(b) >= icrc_at[f] && 9'(b) < icrc_at[f] + 9'd4)
                    pair[8*b +: 8] = crc7[f][8 * (b - int'(icrc_at[f])) +: 8];
        {d8_next, out_next} = pair;
    end

    always_ff @(posedge clk) begin
        if (ce) begin
            d8 <= d8_next;
            s8 <= ds[7];
            tx_tdata <= out_next;
            {tx_tvalid, tx_ena, tx_sop, tx_eop, tx_err, tx_mty} <= s8;
            stat_patched <= 2'(ok7[0]) + 2'(ok7[1]);
        end else begin
            stat_patched <= 2'd0;
        end
        if (rst) begin
            s8[SB-1]  <= 1'b0;
            tx_tvalid <= 1'b0;
            tx_ena    <= '0;
            tx_sop    <= '0;
            tx_eop    <= '0;
            stat_patched <= 2'd0;
        end
    end
endmodule
