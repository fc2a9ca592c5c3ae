// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_ctl_arb — picks the next control frame for the packer: hardware ARP replies
// first, then frames from the CPU TX buffer (MAC clock domain).
//
// Contract
//   * ARP source: one frame of at most 64 bytes in one word (arp_frame, wire order, byte k
//     in bits 8k+7:8k, zero padded to 60 bytes); arp_ready pops it when the packer takes it.
//   * CPU source: a frame of cpu_nseg segments presented word by word (cpu_word valid with
//     cpu_word_valid); cpu_pop/cpu_done mirror the packer's ctl_pop/ctl_done while the CPU
//     frame is selected.
//   * The choice is made when a control frame starts and held until its last word has
//     been taken, so frames never interleave. Combinational, no latency; the statistics
//     (stat_*_sent) are registered, one cycle after the frame's last word was taken.
module fhg_tx_ctl_arb #(
    localparam int NSEG_W = 10
) (
    input  wire                 clk,
    input  wire                 rst,

    input  wire                 arp_valid,
    input  wire  [511:0]        arp_frame,
    output logic                arp_ready,

    input  wire                 cpu_valid,
    input  wire  [NSEG_W-1:0]   cpu_nseg,
    input  wire  [3:0]          cpu_mty,
    input  wire  [1023:0]       cpu_word,
    input  wire                 cpu_word_valid,
    output logic                cpu_pop,
    output logic                cpu_done,

    output logic                ctl_valid,
    output logic [NSEG_W-1:0]   ctl_nseg,
    output logic [3:0]          ctl_mty,
    output logic [1023:0]       ctl_word,
    output logic                ctl_word_valid,
    input  wire                 ctl_pop,
    input  wire                 ctl_done,

    output logic                stat_arp_sent,
    output logic                stat_cpu_sent
);
    // ARP replies are 60 bytes on the wire before the FCS: 4 segments, 4 unused bytes.
    localparam logic [NSEG_W-1:0] ARP_NSEG = NSEG_W'(4);
    localparam logic [3:0]        ARP_MTY  = 4'd4;

    logic locked, locked_cpu, pick_cpu;
    assign pick_cpu = locked ? locked_cpu : !arp_valid;

    always_comb begin
        if (pick_cpu) begin
            ctl_valid      = cpu_valid;
            ctl_nseg       = cpu_nseg;
            ctl_mty        = cpu_mty;
            ctl_word       = cpu_word;
            ctl_word_valid = cpu_word_valid;
        end else begin
            ctl_valid      = arp_valid;
            ctl_nseg       = ARP_NSEG;
            ctl_mty        = ARP_MTY;
            ctl_word       = {512'b0, arp_frame};
            ctl_word_valid = arp_valid;
        end
        arp_ready = ctl_pop && !pick_cpu;
        cpu_pop   = ctl_pop && pick_cpu;
        cpu_done  = ctl_done && pick_cpu;
    end

    // Statistics one cycle later, from a register.
    always_ff @(posedge clk) begin
        stat_arp_sent <= ctl_done && !pick_cpu;
        stat_cpu_sent <= ctl_done && pick_cpu;
        if (rst) begin
            stat_arp_sent <= 1'b0; stat_cpu_sent <= 1'b0;
        end
    end

    always_ff @(posedge clk) begin
        if (ctl_pop && !ctl_done) begin
            locked     <= 1'b1;
            locked_cpu <= pick_cpu;
        end
        if (ctl_done) locked <= 1'b0;
        if (rst) locked <= 1'b0;
    end
endmodule
