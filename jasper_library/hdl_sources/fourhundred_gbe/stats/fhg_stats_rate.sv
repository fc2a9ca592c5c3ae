// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_stats_rate — per-second rates of N counts in the register block's clock (the 100G
// map's *_rate registers): each `rate` is the count of the last complete one-second window.
//
// Contract
//   * Input: per clk cycle, channel n adds `delta[16n +: 16]` when `valid[n]` (the output
//     of an fhg_cdc_delta crossing).
//   * Output: `rate[32n +: 32]` is loaded every CLK_HZ cycles with that window's total
//     (the increments of the window's last cycle included) and holds for the next second;
//     0 until the first window ends. One window counter serves every channel, so the
//     channels' windows line up.
//   * Reset: `rst` synchronous; restarts the window and clears the rates.
//   * Width: a window's total must fit 32 bits (at most 2^32 - 1 events per second).
module fhg_stats_rate #(
    parameter int N      = 1,
    parameter int CLK_HZ = 250000000
) (
    input  logic            clk,
    input  logic            rst,
    input  logic [N-1:0]    valid,
    input  logic [16*N-1:0] delta,
    output logic [32*N-1:0] rate
);
    logic [31:0]     sec_cnt;
    logic [32*N-1:0] acc;

    always_ff @(posedge clk) begin
        for (int n = 0; n < N; n++) begin
            if (sec_cnt == 32'(CLK_HZ - 1)) begin
                rate[32*n +: 32] <= acc[32*n +: 32] + (valid[n] ? 32'(delta[16*n +: 16]) : 32'd0);
                acc[32*n +: 32]  <= '0;
            end else begin
                acc[32*n +: 32] <= acc[32*n +: 32] + (valid[n] ? 32'(delta[16*n +: 16]) : 32'd0);
            end
        end
        if (sec_cnt == 32'(CLK_HZ - 1)) sec_cnt <= '0;
        else sec_cnt <= sec_cnt + 32'd1;
        if (rst) begin
            sec_cnt <= '0;
            acc     <= '0;
            rate    <= '0;
        end
    end
endmodule
