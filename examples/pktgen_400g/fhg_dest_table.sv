// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_dest_table — per-packet destinations for one stream: a table of up to ENTRIES
// destinations (IP, UDP port, channel) used in turn, as an F-engine spreads its channel
// groups over hosts or multicast groups, rewritten while the stream runs by switching
// between two copies of it at a spectrum boundary (no packet lost, sent twice or sent
// by a mix of two tables).
//
// Contract
//   * Spectra. With G = the count of the table in force, packets go in spectra of G; the
//     k-th packet of a spectrum (k = 0 .. G-1) goes to entry k: its IP and UDP port, and
//     its channel (the first channel of the group, which the sender puts in the packet).
//     Several entries may name one destination: a host that takes a range of channel
//     groups has a run of entries. G = 0 is the table off: every packet goes to
//     `default_ip`/`default_port` with `default_chan` and is a spectrum of its own. After
//     configuration the table is off.
//   * Sender side (one clock). `dest_ip`, `dest_port`, `dest_chan` and `dest_last` (the
//     packet ends its spectrum) describe the next packet; `take` says it starts in this
//     cycle, and from the next cycle they describe the one after it (a packet per cycle
//     at most). Packet numbers n count the takes since `rst`; `rst` also starts a new
//     spectrum and clears the per-entry counts. The table, its count and the last command
//     done are configuration: `rst` leaves them as they are.
//   * Software side: the words of four software registers — `sw_ip` (an entry's IP),
//     `sw_port` ([15:0] its UDP port, [31:16] its channel), `sw_count` (the count of the
//     next table) and `sw_ctrl`, a command: [7:0] entry index, [8] 0 write / 1 switch,
//     [23:16] its sequence number (0: no command) — and three read back: `sw_status`,
//     `sw_switch_n`, `sw_sent`. A command runs once, when its sequence number differs from
//     that of the last command done (status[23:16]); it is done when status[23:16] shows
//     its number, refused if status[24] is then set. One command at a time: a new one
//     replaces one not done yet. The software registers' reset value is no command.
//       - Write: entry [7:0] of the copy not in use takes `sw_ip` and `sw_port` (refused
//         for an index >= ENTRIES). The copy in use is never written.
//       - Switch: the other copy goes in force with `sw_count` entries at the next
//         spectrum boundary — between the last packet of a spectrum and the first of the
//         next, at once while no packet is mid-spectrum or `rst` is high (a stream stopped
//         mid-spectrum holds it until it runs again or is reset). Refused for a count >
//         ENTRIES: the table in force stays. `sw_switch_n` then holds n mod 2^32 of the
//         first packet the new table sends.
//     A command runs only once all four words have been unchanged for SETTLE cycles: each
//     software register crosses clocks on its own (fhg_cfg_sync), so the words written
//     before the command may arrive after it; two crossings differ by less than two
//     handshake round trips, 2 x (5 user_clk + 4 register clock cycles): 36 cycles with
//     the register clock at 100 MHz, the slowest the platforms give it.
//   * sw_status: [7:0] count in force (0: off), [15:8] ENTRIES, [23:16] sequence number of
//     the last command done, [24] it was refused. sw_sent: packets taken through entry
//     sw_ctrl[7:0] since `rst`, either copy (0 for an index >= ENTRIES), one cycle after
//     the index.
//   * The copies are 2^IDX_W entries each, read without a clock (distributed RAM); all
//     state is per stream, so a design with two ports has one table per port.
module fhg_dest_table #(
    parameter int ENTRIES = 16,   // 1 .. 255
    parameter int SETTLE  = 64,   // user_clk cycles the software words stay unchanged
    localparam int IDX_W = (ENTRIES > 1) ? $clog2(ENTRIES) : 1,
    localparam int CNT_W = $clog2(ENTRIES + 1),
    localparam int SET_W = $clog2(SETTLE + 1)
) (
    input  wire            clk,
    input  wire            rst,

    input  wire  [31:0]    sw_ip,
    input  wire  [31:0]    sw_port,
    input  wire  [31:0]    sw_count,
    input  wire  [31:0]    sw_ctrl,
    output logic [31:0]    sw_status,
    output logic [31:0]    sw_switch_n,
    output logic [31:0]    sw_sent,

    input  wire  [31:0]    default_ip,
    input  wire  [15:0]    default_port,
    input  wire  [31:0]    default_chan,

    input  wire            take,
    output logic [31:0]    dest_ip,
    output logic [15:0]    dest_port,
    output logic [31:0]    dest_chan,
    output logic           dest_last
);
    localparam int OP_SWITCH = 8;     // sw_ctrl bit: 1 switch, 0 write

    // ------------------------------------------------------------ software words, settled
    // s1 samples the words, s2 is what commands read; `settled` falls with the edge that
    // brings a changed word into s2 and rises SETTLE cycles after the last change.
    logic [127:0] s_now, s1, s2;
    logic         s_diff;
    logic [SET_W-1:0] quiet;
    logic         settled;
    logic         idx_bad, cnt_bad, seq_none;  // of s2's words, registered beside them
    assign s_now = {sw_ip, sw_port, sw_count, sw_ctrl};

    logic [31:0] c_ip, c_port, c_count, c_ctrl;
    assign {c_ip, c_port, c_count, c_ctrl} = s2;

    always_ff @(posedge clk) begin
        s1 <= s_now;
        s2 <= s1;
        s_diff   <= s1 != s_now;
        idx_bad  <= s1[7:0] >= 8'(ENTRIES);
        cnt_bad  <= s1[63:32] > 32'(ENTRIES);
        seq_none <= s1[23:16] == 8'd0;
        if (s_diff) begin
            quiet   <= '0;
            settled <= 1'b0;
        end else if (quiet != SET_W'(SETTLE)) begin
            quiet <= quiet + 1'b1;
        end else begin
            settled <= 1'b1;
        end
    end

    // ------------------------------------------------------------ the two copies
    localparam int DEPTH = 2 << IDX_W;
    logic [63:0] tbl [DEPTH];      // {ip, channel, port}
    // Configuration state starts with the device's configuration (initial values): the
    // stream's `rst` must not turn off or change the table in force.
    /* verilator lint_off PROCASSINIT */
    logic             bank     = 1'b0;   // copy in force
    logic [CNT_W-1:0] count    = '0;     // its entries (0: off)
    logic             on       = 1'b0;   // count != 0
    logic [IDX_W-1:0] last_pos = '0;     // count - 1
    logic [7:0]       done_seq = '0;     // sequence number of the last command done
    logic             refused  = 1'b0;   // and whether it was refused
    logic [31:0]      switch_n = '0;
    logic [IDX_W-1:0] pos = '0;          // the next packet's place in its spectrum
    logic [31:0]      n   = '0;          // the next packet's number
    /* verilator lint_on PROCASSINIT */
    logic [63:0]      entry;
    assign entry = tbl[{bank, pos}];

    always_comb begin
        dest_ip   = on ? entry[63:32] : default_ip;
        dest_port = on ? entry[15:0] : default_port;
        dest_chan = on ? {16'd0, entry[31:16]} : default_chan;
        dest_last = !on || pos == last_pos;
    end

    // ------------------------------------------------------------ commands and the stream
    logic req, do_write, bad_switch, arm;
    logic [IDX_W-1:0] pos_adv;           // the place after the next packet's
    logic apply;
    always_comb begin
        req        = settled && !seq_none && c_ctrl[23:16] != done_seq;
        do_write   = req && !c_ctrl[OP_SWITCH];
        bad_switch = req && c_ctrl[OP_SWITCH] && cnt_bad;
        arm        = req && c_ctrl[OP_SWITCH] && !cnt_bad;
        pos_adv    = dest_last ? '0 : pos + 1'b1;
        // The switch lands where the next packet starts a spectrum: after a take of a
        // spectrum's last packet, in a cycle without a take at the start of one, or in
        // reset (packet 0 next).
        apply      = arm && (rst || (take ? dest_last : pos == '0));
    end

    always_ff @(posedge clk) begin
        if (do_write && !idx_bad) tbl[{!bank, c_ctrl[IDX_W-1:0]}] <= {c_ip, c_port};
        if (do_write || bad_switch || apply) begin
            done_seq <= c_ctrl[23:16];
            refused  <= (do_write && idx_bad) || bad_switch;
        end
        if (apply) begin
            bank     <= !bank;
            count    <= CNT_W'(c_count);
            on       <= c_count != 32'd0;
            last_pos <= IDX_W'(c_count - 32'd1);
            switch_n <= rst ? 32'd0 : take ? n + 32'd1 : n;
        end

        if (rst) begin
            pos <= '0;
            n   <= '0;
        end else begin
            if (apply) pos <= '0;
            else if (take) pos <= pos_adv;
            if (take) n <= n + 32'd1;
        end
    end

    // ------------------------------------------------------------ per-entry counts
    logic [ENTRIES-1:0][31:0] sent;
    always_ff @(posedge clk) begin
        for (int e = 0; e < ENTRIES; e++) begin
            if (rst) sent[e] <= '0;
            else if (take && on && pos == IDX_W'(e)) sent[e] <= sent[e] + 32'd1;
        end
        sw_sent <= (sw_ctrl[7:0] < 8'(ENTRIES)) ? sent[IDX_W'(sw_ctrl[7:0])] : 32'd0;
    end

    assign sw_status   = {7'd0, refused, done_seq, 8'(ENTRIES), 8'(count)};
    assign sw_switch_n = switch_n;

    initial if (ENTRIES < 1 || ENTRIES > 255) $error("fhg_dest_table: ENTRIES is 1 .. 255");
endmodule
