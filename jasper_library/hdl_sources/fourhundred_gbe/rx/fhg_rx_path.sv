// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_rx_path — the receive path (docs/design/core.md §3): DCMAC RX bus -> three lanes -> merger ->
// RX frame FIFO -> user port, with the CPU RX buffer's writer and the ARP event queue.
//
// Contract
//   * MAC side (mac_clk): the DCMAC RX client bus, every cycle taken (no backpressure). At
//     most two frames start per cycle; every frame is given exactly one verdict (st_*).
//   * User side (user_clk): docs/design/core.md §1 rx_* ports, the word and its fields in `rx`
//     (fhg_bus_pkg::rx_user_t). Payload bytes MSB-first (rx.data[1023:1016] is the first),
//     byte_enable contiguous from bit 127 on the last word, all ones before; a datagram
//     without payload (UDP length 8) is one word with byte_enable all zero; addresses/ports
//     valid with valid; end_of_frame and bad_frame (UDP checksum failed) on the last word;
//     `rx_ack` pops the shown word.
//     Frames appear whole or not at all; when the FIFO is full a frame is dropped whole,
//     counted (st_cnt[V_OVERRUN]) and `rx_overrun` stays set until `rx_overrun_ack`.
//     `user_rst` empties the FIFO (at a frame boundary).
//   * CPU RX: frames the filter sends to the CPU are written through cpu_wr (registered); `cpu_placed` (with a stable `cpu_len`), after the frame's last
//     words, hands one over; a frame for the CPU whose header is decided while the buffer is
//     not free (written, or waiting for `cpu_released`) is dropped (V_CPU_BUSY).
//   * ARP: consumed ARP frames leave through the arp queue ({reply, sha, spa}); while it
//     is nearly full further ARP frames are not consumed (V_ARP_DROP or to the CPU).
//   * Latency: bus to the lanes 3 cycles (fhg_rx_unpack), lane 4 (fhg_rx_lane), merger and
//     FIFO beyond; the statistics follow a frame's verdict by one cycle. Every output that
//     leaves for another module is registered, except the user port, which the RX FIFO's
//     read register drives.
//   * Statistics (mac_clk, one cycle each): st_cnt holds, per verdict code of fhg_rx_pkg, the
//     number of frames that got it this cycle (3 bits each; code V_PEND is not used: the
//     merger's st_delivered counts those), st_frames/st_bytes all frames and their bytes
//     (no FCS), st_delivered/st_udp_bytes/st_words/st_bad from the merger.
module fhg_rx_path #(
    parameter bit FCS_ON_BUS = 1'b0,
    parameter int FIFO_WORDS = 512,
    localparam int NL = 3,
    localparam int NC = fhg_rx_pkg::NCODES,
    localparam int MW = 117,
    localparam int LW = 1024 + 1 + 1 + 8,
    localparam int EW = 1 + 96 + 1 + 1 + 7 + 1024
) (
    input  wire                 mac_clk,
    input  wire                 mac_rst,
    input  wire                 rx_tvalid,
    input  wire  [1023:0]       rx_data_bus,
    input  wire  [7:0]          rx_ena,
    input  wire  [7:0]          rx_sop,
    input  wire  [7:0]          rx_eop,
    input  wire  [7:0]          rx_err,
    input  wire  [31:0]         rx_mty,

    input  fhg_bus_pkg::rx_cfg_t cfg,


    // user side
    input  wire                 user_clk,
    input  wire                 user_rst,
    output fhg_bus_pkg::rx_user_t rx,
    input  wire                 rx_ack,
    output logic                rx_overrun,
    input  wire                 rx_overrun_ack,
    output logic                rx_empty,

    // CPU RX buffer writer
    output fhg_bus_pkg::rx_cpu_wr_t cpu_wr,     // registered
    output logic                cpu_placed,
    output logic [13:0]         cpu_len,
    input  wire                 cpu_released,

    // ARP events
    output logic                arp_q_valid,
    output logic [80:0]         arp_q_data,      // {reply, sha, spa}
    input  wire                 arp_q_pop,

    output logic [3*NC-1:0]     st_cnt,
    output logic [1:0]          st_frames,
    output logic [15:0]         st_bytes,
    output logic                st_delivered,
    output logic [13:0]         st_udp_bytes,
    output logic [7:0]          st_words,
    output logic                st_bad
);
    // ================================================================ unpacker
    logic [1023:0]   u_data;
    logic [NL-1:0]   u_valid, u_sop, u_eop, u_err;
    logic [3*NL-1:0] u_lo, u_tag;
    logic [4*NL-1:0] u_n, u_mty;
    fhg_rx_unpack u_unpack (
        .clk(mac_clk), .rst(mac_rst), .rx_tvalid(rx_tvalid), .rx_data(rx_data_bus),
        .rx_ena(rx_ena), .rx_sop(rx_sop), .rx_eop(rx_eop), .rx_err(rx_err), .rx_mty(rx_mty),
        .out_data(u_data), .ln_valid(u_valid), .ln_lo(u_lo), .ln_n(u_n), .ln_sop(u_sop),
        .ln_eop(u_eop), .ln_err(u_err), .ln_mty(u_mty), .ln_tag(u_tag)
    );

    // ================================================================ lanes
    logic [NL-1:0]    hdr_evt, acc_push, cpu_want, lf_valid, lf_pop;
    logic [NL-1:0]    cpu_grant;
    logic [NL-1:0]    l_end, l_end_ok, arp_evt, arp_reply, vd_valid;
    logic [2:0]       hdr_tag [NL], acc_tag [NL], ev_tag [NL];
    logic [MW-1:0]    acc_meta [NL];
    logic [LW-1:0]    lf_data [NL];
    fhg_bus_pkg::rx_cpu_wr_t cpu_sel;  // the lane that writes the CPU buffer
    // (plain vectors: Yosys gives an unpacked array of a struct type 1-bit elements)
    logic [$bits(cpu_sel)-1:0] l_cpu [NL];
    logic [13:0]      l_len [NL];
    logic [47:0]      arp_sha [NL];
    logic [31:0]      arp_spa [NL];
    logic [4:0]       vd_code [NL];
    logic [14:0]      vd_bytes [NL];
    logic             acc_room, arp_room;

    for (genvar l = 0; l < NL; l++) begin : g_lane
        fhg_rx_lane #(.FCS_ON_BUS(FCS_ON_BUS)) u_lane (
            .clk(mac_clk), .rst(mac_rst),
            .in_valid(u_valid[l]), .in_data(u_data), .in_lo(u_lo[3*l +: 3]),
            .in_n(u_n[4*l +: 4]), .in_sop(u_sop[l]), .in_eop(u_eop[l]), .in_err(u_err[l]),
            .in_mty(u_mty[4*l +: 4]), .in_tag(u_tag[3*l +: 3]),
            .cfg(cfg),
            .hdr_evt(hdr_evt[l]), .hdr_tag(hdr_tag[l]), .acc_room(acc_room),
            .cpu_want(cpu_want[l]), .cpu_grant(cpu_grant[l]), .arp_room(arp_room),
            .acc_push(acc_push[l]), .acc_meta(acc_meta[l]), .acc_tag(acc_tag[l]),
            .lf_valid(lf_valid[l]), .lf_data(lf_data[l]), .lf_pop(lf_pop[l]),
            .cpu_wr(l_cpu[l]),
            .cpu_end(l_end[l]), .cpu_end_ok(l_end_ok[l]), .cpu_len(l_len[l]),
            .arp_evt(arp_evt[l]), .arp_evt_reply(arp_reply[l]), .arp_sha(arp_sha[l]),
            .arp_spa(arp_spa[l]), .ev_tag(ev_tag[l]),
            .vd_valid(vd_valid[l]), .vd_code(vd_code[l]), .vd_bytes(vd_bytes[l])
        );
    end

    // Frames decided in the same cycle are ordered by their arrival tags (at most three
    // consecutive frames are in flight at one stage, so a 3-bit tag distance tells them apart).
    // (a table of the six tag bits: one LUT, no subtractor)
    logic older_tab [64];
    initial
        for (int i = 0; i < 64; i++) begin
            logic [2:0] d;
            d = 3'(i) - 3'(i >> 3);     // b - a for {a, b} = i
            older_tab[i] = d != 3'd0 && d <= 3'd3;
        end
    function automatic logic older(input logic [2:0] a, input logic [2:0] b);
        older = older_tab[{a, b}];
    endfunction
    function automatic logic [1:0] rank_of(input int l, input logic [NL-1:0] ev,
                                           input logic [3*NL-1:0] tags);
        logic [1:0] r;
        r = '0;
        for (int m = 0; m < NL; m++)
            if (m != l && ev[m] && older(tags[3*m +: 3], tags[3*l +: 3])) r = r + 2'd1;
        rank_of = r;
    endfunction

    logic [3*NL-1:0] tags, acc_tags, ev_tags;
    always_comb
        for (int l = 0; l < NL; l++) begin
            tags[3*l +: 3]     = hdr_tag[l];
            acc_tags[3*l +: 3] = acc_tag[l];
            ev_tags[3*l +: 3]  = ev_tag[l];
        end

    // ================================================================ order queue
    // Pushes reach the queue a cycle after the header decision that checked `acc_room`, so
    // the check leaves room for two frames per lane: one decided now, one still on its way.
    localparam int OQ = 16;
    logic [$clog2(OQ):0]   oq_count;
    logic [NL*(MW+2)-1:0]  oq_in;
    logic [2*NL-1:0]       oq_rank;
    logic                  oq_valid, oq_pop;
    logic [MW+1:0]         oq_head;
    always_comb begin
        for (int l = 0; l < NL; l++) begin
            oq_in[(MW+2)*l +: MW+2] = {2'(l), acc_meta[l]};
            oq_rank[2*l +: 2] = rank_of(l, acc_push, acc_tags);
        end
    end
    assign acc_room = oq_count <= ($clog2(OQ)+1)'(OQ - 2 * NL);
    fhg_mpush_fifo #(.WIDTH(MW + 2), .DEPTH(OQ), .NP(NL)) u_order (
        .clk(mac_clk), .rst(mac_rst), .push(acc_push), .data(oq_in), .rank(oq_rank),
        .count(oq_count), .valid(oq_valid), .head(oq_head), .pop(oq_pop)
    );

    // ================================================================ merger + RX FIFO
    logic [3*LW-1:0] lf_flat;
    always_comb for (int l = 0; l < NL; l++) lf_flat[LW*l +: LW] = lf_data[l];
    logic          f_wr, f_end, f_keep, f_room, m_overrun;
    logic [EW-1:0] f_data;
    fhg_rx_merge u_merge (
        .clk(mac_clk), .rst(mac_rst),
        .ord_valid(oq_valid), .ord_lane(oq_head[MW +: 2]), .ord_meta(oq_head[MW-1:0]),
        .ord_pop(oq_pop),
        .lf_valid(lf_valid), .lf_data(lf_flat), .lf_pop(lf_pop),
        .fifo_wr(f_wr), .fifo_data(f_data), .fifo_end(f_end), .fifo_keep(f_keep),
        .fifo_room(f_room),
        .st_delivered(st_delivered), .st_bytes(st_udp_bytes), .st_words(st_words),
        .st_bad(st_bad), .st_overrun(m_overrun)
    );

    logic          r_valid;
    logic [EW-1:0] r_data;
    fhg_rx_frame_fifo #(.WIDTH(EW), .DEPTH(FIFO_WORDS)) u_fifo (
        .wr_clk(mac_clk), .wr_rst(mac_rst), .wr_en(f_wr), .wr_data(f_data),
        .wr_end(f_end), .wr_keep(f_keep), .wr_room(f_room),
        .rd_clk(user_clk), .rd_rst(1'b0), .rd_flush(user_rst), .rd_valid(r_valid),
        .rd_data(r_data), .rd_pop(rx_ack), .rd_empty(rx_empty)
    );

    // User port: bytes MSB-first, byte enables from the last word's byte count.
    logic [6:0] r_cnt;
    logic       r_last, r_empty;
    assign r_cnt   = r_data[1030:1024];
    assign r_last  = r_data[1031];
    assign r_empty = r_data[EW-1];
    // k <= cnt as (group of 16 below cnt's) or (same group, place not above cnt's): each
    // enable a small function of the count, not a comparator.
    logic [7:0]  g_lt, g_eq;
    logic [15:0] l_le;
    always_comb begin
        for (int g = 0; g < 8; g++) begin
            g_lt[g] = 3'(g) < r_cnt[6:4];
            g_eq[g] = 3'(g) == r_cnt[6:4];
        end
        for (int l = 0; l < 16; l++) l_le[l] = 4'(l) <= r_cnt[3:0];
        for (int k = 0; k < 128; k++) begin
            rx.data[1023 - 8*k -: 8] = r_data[8*k +: 8];
            rx.byte_enable[127 - k]  = !r_last
                                       || (!r_empty && (g_lt[k / 16] || (g_eq[k / 16] && l_le[k % 16])));
        end
        rx.valid        = r_valid;
        rx.end_of_frame = r_valid && r_last;
        rx.bad_frame    = r_valid && r_last && r_data[1032];
        rx.source_ip    = r_data[1033 + 64 +: 32];
        rx.dest_ip      = r_data[1033 + 32 +: 32];
        rx.source_port  = r_data[1033 + 16 +: 16];
        rx.dest_port    = r_data[1033 +: 16];
    end

    // ================================================================ CPU RX buffer owner
    // The buffer goes to the oldest lane that wants it at header time while it is free; the
    // owner's end (registered in the lane) then places the frame or frees the buffer again.
    localparam logic [1:0] C_FREE = 2'd0, C_WRITING = 2'd1, C_FULL = 2'd2;
    logic [1:0]    c_st;
    logic [1:0]    c_owner;
    logic          c_granted;
    logic [1:0]    c_new;
    always_comb begin
        cpu_grant = '0; c_granted = 1'b0; c_new = c_owner;
        for (int l = 0; l < NL; l++)
            if (cpu_want[l] && rank_of(l, cpu_want, tags) == 2'd0 && c_st == C_FREE) begin
                cpu_grant[l] = 1'b1; c_granted = 1'b1; c_new = 2'(l);
            end
    end
    assign cpu_sel = l_cpu[c_new];
    always_ff @(posedge mac_clk) begin
        // the writer: a frame granted now (its first words may come at once), else the owner
        cpu_wr     <= cpu_sel;
        cpu_wr.we0 <= cpu_sel.we0 && (c_granted || c_st == C_WRITING);
        cpu_wr.we1 <= cpu_sel.we1 && (c_granted || c_st == C_WRITING);
        if (mac_rst) begin
            cpu_wr.we0 <= 1'b0; cpu_wr.we1 <= 1'b0;
        end
    end
    always_ff @(posedge mac_clk) begin
        cpu_placed <= 1'b0;
        if (c_st == C_FULL && cpu_released) c_st <= C_FREE;
        if (c_st == C_WRITING && l_end[c_owner]) begin
            c_st <= l_end_ok[c_owner] ? C_FULL : C_FREE;
            if (l_end_ok[c_owner]) begin
                cpu_placed <= 1'b1; cpu_len <= l_len[c_owner];
            end
        end
        if (c_granted) begin
            c_owner <= c_new;
            c_st <= C_WRITING;
        end
        if (mac_rst) begin
            c_st <= C_FREE; cpu_placed <= 1'b0;
        end
    end

    // ================================================================ ARP event queue
    // Checked at header time; a lane's event is pushed at its frame's end, registered, so
    // each lane may have two on their way (one ended, one decided).
    localparam int AQ = 16;
    logic [$clog2(AQ):0] aq_count;
    logic [NL*81-1:0]    aq_in;
    logic [2*NL-1:0]     aq_rank;
    always_comb begin
        for (int l = 0; l < NL; l++) begin
            aq_in[81*l +: 81] = {arp_reply[l], arp_sha[l], arp_spa[l]};
            aq_rank[2*l +: 2] = rank_of(l, arp_evt, ev_tags);
        end
    end
    assign arp_room = aq_count <= ($clog2(AQ)+1)'(AQ - 2 * NL);
    fhg_mpush_fifo #(.WIDTH(81), .DEPTH(AQ), .NP(NL)) u_arpq (
        .clk(mac_clk), .rst(mac_rst), .push(arp_evt), .data(aq_in), .rank(aq_rank),
        .count(aq_count), .valid(arp_q_valid), .head(arp_q_data), .pop(arp_q_pop)
    );

    // ================================================================ statistics
    // Per code, how many lanes gave it this cycle (the lanes' verdicts are registered; a
    // lane's vd_bytes is zero without a verdict).
    logic [2:0]  cnt_n [NC];
    logic [1:0]  fr_n;
    logic [15:0] by_n;
    logic        ovr_any;
    always_comb begin
        for (int c = 0; c < NC; c++) begin
            cnt_n[c] = '0;
            for (int l = 0; l < NL; l++)
                cnt_n[c] = cnt_n[c] + 3'(vd_valid[l] && vd_code[l] == 5'(c));
        end
        cnt_n[fhg_rx_pkg::V_OVERRUN] = cnt_n[fhg_rx_pkg::V_OVERRUN] + 3'(m_overrun);
        cnt_n[fhg_rx_pkg::V_PEND] = '0;
        fr_n = '0;
        for (int l = 0; l < NL; l++) fr_n = fr_n + 2'(vd_valid[l]);
        by_n = 16'(vd_bytes[0]) + 16'(vd_bytes[1]) + 16'(vd_bytes[2]);
        ovr_any = m_overrun;
        for (int l = 0; l < NL; l++)
            ovr_any = ovr_any || (vd_valid[l] && vd_code[l] == fhg_rx_pkg::V_OVERRUN);
    end
    always_ff @(posedge mac_clk) begin
        for (int c = 0; c < NC; c++) st_cnt[3*c +: 3] <= cnt_n[c];
        st_frames <= fr_n;
        st_bytes  <= by_n;
    end

    // ================================================================ overrun flag
    logic ovr_u, ovr_busy;
    fhg_pulse_sync u_ovr (
        .clk_a(mac_clk), .rst_a(mac_rst), .pulse_a(ovr_any),
        .busy_a(ovr_busy), .clk_b(user_clk), .rst_b(1'b0), .pulse_b(ovr_u)
    );
    always_ff @(posedge user_clk) begin
        if (rx_overrun_ack) rx_overrun <= 1'b0;
        if (ovr_u) rx_overrun <= 1'b1;
        if (user_rst) rx_overrun <= 1'b0;
    end

    logic unused_ok;
    assign unused_ok = &{1'b0, hdr_evt, ovr_busy};
endmodule
