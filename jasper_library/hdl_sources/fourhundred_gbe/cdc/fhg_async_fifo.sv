// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_async_fifo: dual-clock FIFO with gray-coded pointers and a first-word-fall-through
// valid/ready read port.
//
// Contract
//   * Write side (wr_clk): `wr_data` is stored at a wr_clk edge where `wr_en` is high and
//     `full` is low. Writing while `full` is high is ignored (the word is dropped); the caller
//     checks `full` first. `full` is registered and conservative: it is set as soon as DEPTH
//     words are in the RAM and clears STAGES+3..STAGES+4 wr_clk edges after a read freed one.
//   * `wr_count` (0..DEPTH) is the number of RAM words as seen by the writer. It lags reads, so
//     it never under-reports; `full` is exactly `wr_count == DEPTH`.
//   * Read side (rd_clk): `rd_data`/`rd_valid` come straight from registers. A word is popped
//     at an rd_clk edge where `rd_valid` and `rd_ready` are both high; the next word (if any)
//     is shown in the following cycle, so a continuously ready reader gets one word per cycle.
//     `rd_data` keeps its value while `rd_valid` is high and `rd_ready` is low.
//   * `rd_count` (0..DEPTH+1) is the number of words the reader can see, including the one in
//     the output register. It lags writes, so it never over-reports.
//   * Capacity: DEPTH words in the RAM plus one in the output register.
//   * Latency: a write becomes visible as `rd_valid` STAGES+3..STAGES+4 rd_clk edges later
//     (the other side's pointer is decoded from gray in two registered steps after the
//     synchroniser, so no path carries decode and arithmetic in one cycle).
//   * Resets: `wr_rst` and `rd_rst` are synchronous to their own clocks. For a clean flush both
//     must be asserted so that they overlap for at least one edge of each clock (normally one
//     reset source synchronised into each domain). Resetting one side alone leaves the two
//     pointer pairs inconsistent. Writes during `wr_rst` are discarded.
//   * CDC: only the gray-coded pointers cross, each through fhg_sync_bits, so at most one bit
//     changes per source cycle. The RAM word read by the reader was written at least STAGES
//     rd_clk cycles earlier (the reader only reads behind the synchronised write pointer). The
//     pointer crossings need set_max_delay -datapath_only of about one source period; the RAM
//     write-to-read path is covered by the same argument as for a dual-port RAM.
//   * RAM: an fhg_ram_sdp (no reset, registered read with enable), so Vivado maps it to
//     LUTRAM or block RAM depending on size; RAM_STYLE passes through as ram_style.
module fhg_async_fifo #(
    parameter int WIDTH     = 32,
    parameter int DEPTH     = 16,
    parameter int STAGES    = 3,
    parameter     RAM_STYLE = "auto"
) (
    input  logic                   wr_clk,
    input  logic                   wr_rst,
    input  logic                   wr_en,
    input  logic [      WIDTH-1:0] wr_data,
    output logic                   full,
    output logic [$clog2(DEPTH):0] wr_count,

    input  logic                   rd_clk,
    input  logic                   rd_rst,
    output logic                   rd_valid,
    output logic [      WIDTH-1:0] rd_data,
    input  logic                   rd_ready,
    output logic [$clog2(DEPTH):0] rd_count
);

  localparam int AW = $clog2(DEPTH);

  // Gray-code wrap-around is only a single-bit change when DEPTH is a power of two.
  if (DEPTH < 4 || (1 << AW) != DEPTH) begin : g_bad_depth
    $error("fhg_async_fifo: DEPTH must be a power of two, at least 4");
  end

  // Assignments to the function name rather than `return`: the Yosys front end rejects it.
  function automatic logic [AW:0] bin2gray(input logic [AW:0] b);
    bin2gray = b ^ (b >> 1);
  endfunction

  // Gray to binary: bit i is the parity of the gray bits from i up. Decoded in two
  // registered halves (upper bits' prefix parities first, then the lower bits against the
  // upper half's parity), so neither step is a long chain of XORs.
  localparam int H = (AW + 1) / 2;
  function automatic logic [AW:0] upper_prefix(input logic [AW:0] g);
    logic [AW:0] u;
    u = g;
    for (int i = AW - 1; i >= H; i = i - 1) u[i] = u[i+1] ^ g[i];
    upper_prefix = u;
  endfunction
  function automatic logic [AW:0] lower_prefix(input logic [AW:0] u);
    logic [AW:0] b;
    b = u;
    for (int i = H - 1; i >= 0; i = i - 1) b[i] = u[H] ^ (^(u[H-1:0] >> i));
    lower_prefix = b;
  endfunction

  // ---------------- write side ----------------
  // Pointers carry one extra bit so that full (wrapped once) and empty (equal) differ.
  logic [AW:0] wr_bin, wr_gray, wr_bin_next, wr_used_next;
  logic [AW:0] rd_gray_w;  // reader's gray pointer, synchronised into wr_clk
  logic        wr_do;

  logic [AW:0] rd_bin_w, rd_half_w;   // decoded in two registered steps
  always_ff @(posedge wr_clk) begin
    rd_half_w <= wr_rst ? '0 : upper_prefix(rd_gray_w);
    rd_bin_w  <= wr_rst ? '0 : lower_prefix(rd_half_w);
  end

  assign wr_do        = wr_en && !full;
  assign wr_bin_next  = wr_bin + {{AW{1'b0}}, wr_do};
  assign wr_used_next = wr_bin_next - rd_bin_w;

  always_ff @(posedge wr_clk) begin
    if (wr_rst) begin
      wr_bin   <= '0;
      wr_gray  <= '0;
      wr_count <= '0;
      full     <= 1'b0;
    end else begin
      wr_bin   <= wr_bin_next;
      wr_gray  <= bin2gray(wr_bin_next);
      wr_count <= wr_used_next;
      // wr_used_next never exceeds DEPTH, so its top bit set means exactly DEPTH.
      full     <= wr_used_next[AW];
    end
  end

  // ---------------- read side ----------------
  logic [AW:0] rd_bin, rd_gray, rd_bin_next, wr_bin_r, rd_bin1, avail;
  logic [AW:0] wr_gray_r;  // writer's gray pointer, synchronised into rd_clk
  logic        rd_load, rd_valid_next, ram_empty;

  logic [AW:0] wr_half_r;
  always_ff @(posedge rd_clk) begin
    wr_half_r <= rd_rst ? '0 : upper_prefix(wr_gray_r);
    wr_bin_r  <= rd_rst ? '0 : lower_prefix(wr_half_r);
  end
  assign ram_empty     = (wr_bin_r == rd_bin);
  // Refill the output register when it is empty or being popped this cycle.
  assign rd_load       = (!rd_valid || rd_ready) && !ram_empty;
  assign rd_bin1       = rd_bin + 1'b1;
  assign rd_bin_next   = rd_load ? rd_bin1 : rd_bin;
  assign rd_valid_next = rd_load || (rd_valid && !rd_ready);
  assign avail         = wr_bin_r - rd_bin;

  // The RAM: written at the write pointer, read into rd_data (registered, with enable) at
  // the read pointer whenever the output register is refilled.
  fhg_ram_sdp #(
      .WIDTH     (WIDTH),
      .DEPTH     (DEPTH),
      .RD_LATENCY(1),
      .RAM_STYLE (RAM_STYLE)
  ) u_ram (
      .wr_clk (wr_clk),
      .wr_en  (wr_do),
      .wr_addr(wr_bin[AW-1:0]),
      .wr_data(wr_data),
      .rd_clk (rd_clk),
      .rd_en  (rd_load),
      .rd_addr(rd_bin[AW-1:0]),
      .rd_data(rd_data)
  );

  always_ff @(posedge rd_clk) begin
    if (rd_rst) begin
      rd_bin   <= '0;
      rd_gray  <= '0;
      rd_valid <= 1'b0;
      rd_count <= '0;
    end else begin
      rd_bin   <= rd_bin_next;
      rd_gray  <= rd_load ? bin2gray(rd_bin1) : bin2gray(rd_bin);
      rd_valid <= rd_valid_next;
      // words in the RAM after this cycle's load, plus the one in the output register
      rd_count <= avail - (AW+1)'(rd_load) + (AW+1)'(rd_valid_next);
    end
  end

  // ---------------- pointer crossings ----------------
  fhg_sync_bits #(
      .WIDTH (AW + 1),
      .STAGES(STAGES)
  ) u_rd2wr (
      .clk(wr_clk),
      .rst(wr_rst),
      .d  (rd_gray),
      .q  (rd_gray_w)
  );

  fhg_sync_bits #(
      .WIDTH (AW + 1),
      .STAGES(STAGES)
  ) u_wr2rd (
      .clk(rd_clk),
      .rst(rd_rst),
      .d  (wr_gray),
      .q  (wr_gray_r)
  );

endmodule
