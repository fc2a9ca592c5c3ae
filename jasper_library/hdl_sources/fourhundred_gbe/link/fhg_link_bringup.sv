// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_link_bringup — brings the DCMAC's 400GE port 0 and its GTM lanes up without software,
// keeps watching the alignment afterwards, and reports what it saw (clock of the DCMAC's
// AXI4-Lite register port, `clk`; run it on the same clock as the core's register block so
// the link_* register fields connect without a crossing).
//
// Contract
//   * Sequence of one bring-up run (link_status.state in brackets):
//       [1] GT TX+RX datapath resets for GT_RESET_CYCLES, release, wait until every lane
//           reports TX and RX reset done (GT_READY_TIMEOUT, else the attempt failed);
//       [2] DCMAC global (TX/RX core, macif, axi), port 0 (flexif, serdes) and channel 0
//           (flush) resets asserted over AXI4-Lite, held DCMAC_RESET_CYCLES;
//       [3] GLOBAL_MODE, C0_TX_MODE, C0_RX_MODE, C0 channel TX/RX configuration (FCS
//           insertion, maximum frame length) written, then every reset released in the
//           order: global TX, global RX, port TX, port RX, channel TX, channel RX;
//       [4] alignment loop: GT RX datapath reset (pulse, wait RX reset done), RX port serdes
//           reset (assert, RX_RESET_CYCLES, release), then up to ALIGN_POLLS polls of
//           C0_STAT_PORT_RX_PHY_STATUS: write all ones (its bits latch; writing 1 clears),
//           wait SETTLE_CYCLES, read it and C0_STAT_CHAN_RX_MAC_STATUS. Aligned when
//           (value & 5) == 5 (stat_rx_status and stat_rx_aligned). No alignment within the
//           polls: the attempt failed.
//       [5] up: the same poll every MONITOR_CYCLES; a failed poll is a link-down event
//           (`link_down` pulses once) and, with auto_bringup, the alignment loop [4] runs
//           again (retries restart from 0); without auto_bringup the sequencer goes idle.
//   * Retries: a failed attempt increments `retries` and repeats the step that failed (the
//     GT resets [1] when the GTs never became ready, else the alignment loop [4]). When
//     max_retries != 0 and `retries` has reached max_retries, the run stops in
//     [6] failed instead: `retries` == max_retries, 1 + max_retries attempts were made.
//   * Control: auto_bringup = start by itself after `rst` and re-run after a link loss;
//     `restart` (one-cycle pulse, any state) starts a full run [1] with retries = 0 and the
//     error flags cleared; it is the only way out of [6]. [0] idle is left by restart or by
//     auto_bringup = 1. A restart arriving during an AXI transaction waits for its end: the
//     master never abandons a handshake.
//   * AXI4-Lite master: one transaction at a time, full 32-bit writes (wstrb = 4'hF); AW
//     and W are presented together. A non-OKAY response sets `axi_error` (sticky until
//     restart/rst) and the sequence continues. A transaction that waits more than
//     AXI_TIMEOUT cycles sets `axi_stall` (sticky) while the master keeps waiting, so a
//     missing DCMAC clock or reset shows up in the status instead of as silence.
//   * DCMAC hardware resets: tx_core/serdes resets are high from [1] until every GT TX lane
//     is ready; rx_core/serdes resets are high from [1] and during each GT RX datapath reset
//     until every GT RX lane is ready. `mac_rst` (for the core's MAC-side logic) is high
//     from `rst`/restart until the resets are released at the end of [3].
//   * Status: `state`, `retries`, `rx_phy_status` (last value read from 0x1C00),
//     `rx_aligned`, `rx_local_fault`/`rx_remote_fault` (bits 1/0 of the last value read from
//     C0_STAT_CHAN_RX_MAC_STATUS), `gt_tx_ready`/`gt_rx_ready` (all lanes, synchronised),
//     `link_up` (state [5]).
//   * `gt_loopback` is passed to the GT loopback pins unchanged; the GTs take a new value
//     reliably only through a reset, so software writes it and then pulses restart.
//   * Facts: register offsets and bit meanings follow the DCMAC register map published by
//     AMD (PG369; AMD's MIT-licensed register tables and example-design software). The
//     values written to GLOBAL_MODE and the TX/RX mode registers for 400GAUI-4 + RS(544)
//     are taken from AMD's example software for a static 400GE configuration and are NOT
//     confirmed from documentation: they are parameters (see docs/hardware.md).
//   * `gt_*_reset_done` are asynchronous (GT clock domains) and synchronised here.
module fhg_link_bringup #(
    parameter int NUM_LANES          = 4,
    parameter int ADDR_W             = 32,
    parameter logic [31:0] DCMAC_BASE = 32'h0000_0000,  // DCMAC register block on our master
    // Timing in cycles of clk (defaults for a 250 MHz register clock).
    parameter int GT_RESET_CYCLES    = 2500,        // 10 us datapath reset pulse
    parameter int GT_READY_TIMEOUT   = 25_000_000,  // 100 ms for the GT reset-done flags
    parameter int DCMAC_RESET_CYCLES = 2500,        // 10 us with the DCMAC held in reset
    parameter int RX_RESET_CYCLES    = 2500,        // 10 us RX port serdes reset
    parameter int SETTLE_CYCLES      = 2_500_000,   // 10 ms between clearing and reading status
    parameter int ALIGN_POLLS        = 20,          // polls per alignment attempt (~200 ms)
    parameter int MONITOR_CYCLES     = 25_000_000,  // 100 ms between polls while up
    parameter int AXI_TIMEOUT        = 65536,       // cycles before a transaction counts as stalled
    // Register values (see the header's Facts note; unconfirmed ones are marked).
    parameter logic [31:0] GLOBAL_MODE_VALUE  = 32'h0733_0000,  // UNCONFIRMED (AMD example software)
    parameter logic [31:0] TX_MODE_VALUE      = 32'h0010_0412,  // UNCONFIRMED: 400G rate code, FEC mode 0x10
    parameter logic [31:0] RX_MODE_VALUE      = 32'h0010_2802,  // UNCONFIRMED: 400G rate code, FEC mode 0x10
    parameter logic [31:0] TX_CHAN_CFG_VALUE  = 32'h0000_0C01,  // FCS insertion on, IPG 12, standard preamble
    parameter logic [15:0] RX_CHAN_CFG_FLAGS  = 16'h0042,       // delete FCS, ignore in-range length errors; FCS strip default UNCONFIRMED
    parameter int          MAX_FRAME_LEN      = 9600,           // C0 max packet length (14 bits)
    parameter logic [31:0] GLOBAL_RESET_VALUE = 32'h0000_0007,  // core + macif + axi soft resets
    parameter logic [31:0] PORT_RESET_VALUE   = 32'h0000_0003,  // flexif + serdes soft resets
    parameter logic [31:0] RX_PORT_RESET_VALUE = 32'h0000_0002  // serdes soft reset only
) (
    input  wire                  clk,
    input  wire                  rst,

    // ---- software override (link_ctrl)
    input  wire                  auto_bringup,
    input  wire                  restart,
    input  wire  [7:0]           max_retries,
    input  wire  [2:0]           gt_loopback_in,

    // ---- status (link_status, link_retries, rx_phy_status, link_down_counter)
    output logic [3:0]           state,
    output logic                 gt_tx_ready,
    output logic                 gt_rx_ready,
    output logic                 rx_aligned,
    output logic                 link_up,
    output logic                 rx_local_fault,
    output logic                 rx_remote_fault,
    output logic [31:0]          retries,
    output logic [31:0]          rx_phy_status,
    output logic                 link_down,
    output logic                 axi_error,
    output logic                 axi_stall,

    // ---- GTs
    output logic [NUM_LANES-1:0] gt_reset_tx_datapath,
    output logic [NUM_LANES-1:0] gt_reset_rx_datapath,
    input  wire  [NUM_LANES-1:0] gt_tx_reset_done,
    input  wire  [NUM_LANES-1:0] gt_rx_reset_done,
    output logic [2:0]           gt_loopback,

    // ---- DCMAC hardware resets and the core's MAC-side reset
    output logic                 dcmac_tx_core_reset,
    output logic                 dcmac_rx_core_reset,
    output logic [5:0]           dcmac_tx_serdes_reset,
    output logic [5:0]           dcmac_rx_serdes_reset,
    output logic                 mac_rst,

    // ---- AXI4-Lite master to the DCMAC's s_axi
    output logic                 m_axi_awvalid,
    input  wire                  m_axi_awready,
    output logic [ADDR_W-1:0]    m_axi_awaddr,
    output logic [2:0]           m_axi_awprot,
    output logic                 m_axi_wvalid,
    input  wire                  m_axi_wready,
    output logic [31:0]          m_axi_wdata,
    output logic [3:0]           m_axi_wstrb,
    input  wire                  m_axi_bvalid,
    output logic                 m_axi_bready,
    input  wire  [1:0]           m_axi_bresp,
    output logic                 m_axi_arvalid,
    input  wire                  m_axi_arready,
    output logic [ADDR_W-1:0]    m_axi_araddr,
    output logic [2:0]           m_axi_arprot,
    input  wire                  m_axi_rvalid,
    output logic                 m_axi_rready,
    input  wire  [31:0]          m_axi_rdata,
    input  wire  [1:0]           m_axi_rresp
);
    // ------------------------------------------------------------ DCMAC register offsets (PG369)
    localparam logic [31:0] R_GLOBAL_MODE    = 32'h0000_0004;
    localparam logic [31:0] R_GLOBAL_CTL_RX  = 32'h0000_00F0;
    localparam logic [31:0] R_GLOBAL_CTL_TX  = 32'h0000_00F8;
    localparam logic [31:0] R_C0_CHAN_CFG_TX = 32'h0000_1000;
    localparam logic [31:0] R_C0_CHAN_CFG_RX = 32'h0000_1004;
    localparam logic [31:0] R_C0_CHAN_CTL_RX = 32'h0000_1030;
    localparam logic [31:0] R_C0_CHAN_CTL_TX = 32'h0000_1038;
    localparam logic [31:0] R_C0_TX_MODE     = 32'h0000_1040;
    localparam logic [31:0] R_C0_RX_MODE     = 32'h0000_1044;
    localparam logic [31:0] R_C0_PORT_CTL_RX = 32'h0000_10F0;
    localparam logic [31:0] R_C0_PORT_CTL_TX = 32'h0000_10F8;
    localparam logic [31:0] R_C0_RX_MAC_STAT = 32'h0000_1140;
    localparam logic [31:0] R_C0_RX_PHY_STAT = 32'h0000_1C00;

    localparam logic [31:0] RX_CHAN_CFG_VALUE =
        {2'b00, 14'(MAX_FRAME_LEN), RX_CHAN_CFG_FLAGS};

    if (MAX_FRAME_LEN < 64 || MAX_FRAME_LEN > 16383) begin : g_bad_len
        $error("fhg_link_bringup: MAX_FRAME_LEN must be 64..16383 (14-bit field)");
    end
    if (NUM_LANES < 1 || ALIGN_POLLS < 1) begin : g_bad_cfg
        $error("fhg_link_bringup: NUM_LANES and ALIGN_POLLS must be at least 1");
    end

    // ------------------------------------------------------------ sequencer states
    typedef enum logic [4:0] {
        S_IDLE, S_GT_RST, S_GT_WAIT, S_DC_ASSERT, S_DC_HOLD, S_CFG, S_RELEASE,
        S_RXGT_RST, S_RXGT_WAIT, S_RXP_ASSERT, S_RXP_HOLD, S_RXP_RELEASE,
        S_POLL_CLR, S_POLL_WAIT, S_POLL_READ, S_UP, S_FAILED
    } seq_t;
    seq_t st;

    localparam logic [3:0] REP_IDLE = 4'd0, REP_GT = 4'd1, REP_DCRST = 4'd2, REP_CFG = 4'd3,
                           REP_ALIGN = 4'd4, REP_UP = 4'd5, REP_FAILED = 4'd6;

    // ------------------------------------------------------------ GT reset-done synchronisers
    logic [NUM_LANES-1:0] tx_done_s, rx_done_s;
    fhg_sync_bits #(.WIDTH(2 * NUM_LANES)) u_sync_done (
        .clk(clk), .rst(1'b0),
        .d({gt_tx_reset_done, gt_rx_reset_done}),
        .q({tx_done_s, rx_done_s})
    );
    logic tx_all, rx_all;
    assign tx_all = &tx_done_s;
    assign rx_all = &rx_done_s;
    assign gt_tx_ready = tx_all;
    assign gt_rx_ready = rx_all;

    // ------------------------------------------------------------ AXI4-Lite master engine
    typedef enum logic [1:0] { AX_IDLE, AX_WRITE, AX_READ } ax_t;
    ax_t ax_st;
    logic        ax_req, ax_write, ax_done;
    logic [31:0] ax_addr, ax_wdata, ax_rdata;
    logic [31:0] ax_wait;

    // Sequencer bookkeeping (used by the engine for restart and by the sequencer below).
    logic        restart_pend, restart_take;
    logic        issued;         // the current step's transaction was requested
    logic [2:0]  step;
    logic [31:0] timer;
    logic [31:0] polls;
    logic        mon;            // the poll in progress is a monitoring poll (state [5])
    logic        poll_ok, give_up;

    // A restart is taken only with the AXI engine idle and nothing requested.
    assign restart_take = restart_pend && ax_st == AX_IDLE && !ax_req;
    assign poll_ok = (ax_rdata & 32'h5) == 32'h5;
    // `>=`: software may lower max_retries below the count during a run.
    assign give_up = max_retries != 8'd0 && retries >= {24'd0, max_retries};

    assign m_axi_awprot = 3'b000;
    assign m_axi_arprot = 3'b000;
    assign m_axi_wstrb  = 4'hF;

    always_ff @(posedge clk) begin
        ax_done <= 1'b0;
        case (ax_st)
            AX_IDLE: begin
                ax_wait <= '0;
                if (ax_req) begin
                    if (ax_write) begin
                        m_axi_awvalid <= 1'b1;
                        m_axi_awaddr  <= ADDR_W'(DCMAC_BASE + ax_addr);
                        m_axi_wvalid  <= 1'b1;
                        m_axi_wdata   <= ax_wdata;
                        m_axi_bready  <= 1'b1;
                        ax_st         <= AX_WRITE;
                    end else begin
                        m_axi_arvalid <= 1'b1;
                        m_axi_araddr  <= ADDR_W'(DCMAC_BASE + ax_addr);
                        m_axi_rready  <= 1'b1;
                        ax_st         <= AX_READ;
                    end
                end
            end
            AX_WRITE: begin
                if (m_axi_awready) m_axi_awvalid <= 1'b0;
                if (m_axi_wready)  m_axi_wvalid  <= 1'b0;
                if (m_axi_bvalid) begin
                    m_axi_bready <= 1'b0;
                    ax_done      <= 1'b1;
                    ax_st        <= AX_IDLE;
                    if (m_axi_bresp != 2'b00) axi_error <= 1'b1;
                end
            end
            AX_READ: begin
                if (m_axi_arready) m_axi_arvalid <= 1'b0;
                if (m_axi_rvalid) begin
                    m_axi_rready <= 1'b0;
                    ax_rdata     <= m_axi_rdata;
                    ax_done      <= 1'b1;
                    ax_st        <= AX_IDLE;
                    if (m_axi_rresp != 2'b00) axi_error <= 1'b1;
                end
            end
            default: ax_st <= AX_IDLE;
        endcase
        if (ax_st != AX_IDLE) begin
            if (ax_wait == 32'(AXI_TIMEOUT)) axi_stall <= 1'b1;
            else ax_wait <= ax_wait + 32'd1;
        end
        // Flags clear on a restart the sequencer takes (it only takes one while idle here).
        if (restart_take) begin
            axi_error <= 1'b0;
            axi_stall <= 1'b0;
        end
        if (rst) begin
            ax_st         <= AX_IDLE;
            m_axi_awvalid <= 1'b0;
            m_axi_wvalid  <= 1'b0;
            m_axi_bready  <= 1'b0;
            m_axi_arvalid <= 1'b0;
            m_axi_rready  <= 1'b0;
            m_axi_awaddr  <= '0;
            m_axi_araddr  <= '0;
            m_axi_wdata   <= '0;
            ax_rdata      <= '0;
            ax_wait       <= '0;
            axi_error     <= 1'b0;
            axi_stall     <= 1'b0;
        end
    end

    // ------------------------------------------------------------ register write lists
    // Step k of each list; the last step of a list is *_LAST. [2] asserts the DCMAC's reset
    // controls in the order of reset_op, [3] releases them (writes 0) in the same order.
    localparam logic [2:0] RST_LAST = 3'd5, CFG_LAST = 3'd4;

    function automatic logic [63:0] reset_op(input logic [2:0] k);
        case (k)
            3'd0:    reset_op = {R_GLOBAL_CTL_TX,  GLOBAL_RESET_VALUE};
            3'd1:    reset_op = {R_GLOBAL_CTL_RX,  GLOBAL_RESET_VALUE};
            3'd2:    reset_op = {R_C0_PORT_CTL_TX, PORT_RESET_VALUE};
            3'd3:    reset_op = {R_C0_PORT_CTL_RX, PORT_RESET_VALUE};
            3'd4:    reset_op = {R_C0_CHAN_CTL_TX, 32'h1};
            default: reset_op = {R_C0_CHAN_CTL_RX, 32'h1};
        endcase
    endfunction

    function automatic logic [63:0] cfg_op(input logic [2:0] k);
        case (k)
            3'd0:    cfg_op = {R_GLOBAL_MODE,    GLOBAL_MODE_VALUE};
            3'd1:    cfg_op = {R_C0_TX_MODE,     TX_MODE_VALUE};
            3'd2:    cfg_op = {R_C0_RX_MODE,     RX_MODE_VALUE};
            3'd3:    cfg_op = {R_C0_CHAN_CFG_TX, TX_CHAN_CFG_VALUE};
            default: cfg_op = {R_C0_CHAN_CFG_RX, RX_CHAN_CFG_VALUE};
        endcase
    endfunction

    // ------------------------------------------------------------ sequencer

    // The transaction of the current state and step, and the step that ends its list.
    logic        op_axi, op_wr;
    logic [63:0] op, rst_op;
    logic [2:0]  op_last_step;
    always_comb begin
        op_axi = 1'b1;
        op_wr  = 1'b1;
        rst_op = reset_op(step);
        case (st)
            S_DC_ASSERT, S_RELEASE: op_last_step = RST_LAST;
            S_CFG:                  op_last_step = CFG_LAST;
            S_POLL_CLR, S_POLL_READ: op_last_step = 3'd1;  // PHY status, then MAC status
            default:                op_last_step = 3'd0;
        endcase
        case (st)
            S_DC_ASSERT:   op = rst_op;
            S_CFG:         op = cfg_op(step);
            S_RELEASE:     op = {rst_op[63:32], 32'h0};
            S_RXP_ASSERT:  op = {R_C0_PORT_CTL_RX, RX_PORT_RESET_VALUE};
            S_RXP_RELEASE: op = {R_C0_PORT_CTL_RX, 32'h0};
            S_POLL_CLR:    op = {(step == 3'd0) ? R_C0_RX_PHY_STAT : R_C0_RX_MAC_STAT, 32'hFFFF_FFFF};
            S_POLL_READ: begin
                op_wr = 1'b0;
                op    = {(step == 3'd0) ? R_C0_RX_PHY_STAT : R_C0_RX_MAC_STAT, 32'h0};
            end
            default: begin
                op_axi = 1'b0;
                op     = '0;
            end
        endcase
    end

    // One structure for what every state repeated: a step's transaction completing, the
    // state timer running out, and an attempt failing (retry, or give up).
    logic op_done, op_last, timer_out, attempt_failed;
    seq_t retry_from;
    assign op_done   = issued && ax_done;
    assign op_last   = op_done && step == op_last_step;
    assign timer_out = timer == 32'd0;
    always_comb begin
        attempt_failed = 1'b0;
        retry_from     = S_RXGT_RST;  // the alignment loop [4]
        case (st)
            S_GT_WAIT: begin  // the GTs never reported ready: GT resets [1] again
                attempt_failed = timer_out && !(tx_all && rx_all);
                retry_from     = S_GT_RST;
            end
            S_RXGT_WAIT: attempt_failed = timer_out && !rx_all;
            // The last poll of an alignment attempt found no alignment.
            S_POLL_READ: attempt_failed = op_last && !rx_aligned && !mon && polls <= 32'd1;
            default: ;
        endcase
    end

    // The transition table: the state after `st` and whether it is taken this cycle (`go`).
    // A state moves on when its list of transactions ends (op_last), its timer runs out or
    // what it waits for arrives; a failed attempt retries or gives up; a restart comes
    // before everything.
    seq_t nxt;
    logic go;
    always_comb begin
        go  = 1'b1;
        nxt = st;
        if (restart_take) begin
            nxt = S_GT_RST;
        end else if (attempt_failed) begin
            nxt = give_up ? S_FAILED : retry_from;
        end else begin
            case (st)
                S_IDLE:        begin go = auto_bringup;     nxt = S_GT_RST;      end
                S_GT_RST:      begin go = timer_out;        nxt = S_GT_WAIT;     end
                S_GT_WAIT:     begin go = tx_all && rx_all; nxt = S_DC_ASSERT;   end
                S_DC_ASSERT:   begin go = op_last;          nxt = S_DC_HOLD;     end
                S_DC_HOLD:     begin go = timer_out;        nxt = S_CFG;         end
                S_CFG:         begin go = op_last;          nxt = S_RELEASE;     end
                S_RELEASE:     begin go = op_last;          nxt = S_RXGT_RST;    end
                S_RXGT_RST:    begin go = timer_out;        nxt = S_RXGT_WAIT;   end
                S_RXGT_WAIT:   begin go = rx_all;           nxt = S_RXP_ASSERT;  end
                S_RXP_ASSERT:  begin go = op_last;          nxt = S_RXP_HOLD;    end
                S_RXP_HOLD:    begin go = timer_out;        nxt = S_RXP_RELEASE; end
                S_RXP_RELEASE: begin go = op_last;          nxt = S_POLL_CLR;    end
                S_POLL_CLR:    begin go = op_last;          nxt = S_POLL_WAIT;   end
                S_POLL_WAIT:   begin go = timer_out;        nxt = S_POLL_READ;   end
                // Aligned: (stay) up and poll again later. Lost while up: the alignment
                // loop again (auto_bringup) or idle. Else the attempt's next poll.
                S_POLL_READ: begin
                    go  = op_last && (rx_aligned || mon || polls > 32'd1);
                    nxt = rx_aligned ? S_UP
                        : !mon       ? S_POLL_CLR
                        : auto_bringup ? S_RXGT_RST : S_IDLE;
                end
                S_UP:          begin go = timer_out;        nxt = S_POLL_CLR;    end
                S_FAILED:      go = 1'b0;  // [6] is left by restart only
                default:       nxt = S_IDLE;
            endcase
        end
    end

    // Each state is entered with its timer loaded; states without a timer ignore it.
    function automatic logic [31:0] entry_time(input seq_t s);
        case (s)
            S_GT_RST, S_RXGT_RST:   entry_time = 32'(GT_RESET_CYCLES);
            S_GT_WAIT, S_RXGT_WAIT: entry_time = 32'(GT_READY_TIMEOUT);
            S_DC_HOLD:              entry_time = 32'(DCMAC_RESET_CYCLES);
            S_RXP_HOLD:             entry_time = 32'(RX_RESET_CYCLES);
            S_POLL_WAIT:            entry_time = 32'(SETTLE_CYCLES);
            S_UP:                   entry_time = 32'(MONITOR_CYCLES);
            default:                entry_time = 32'd0;
        endcase
    endfunction

    // Reset pulses: `rst` and [1] assert every hardware reset, [4] the RX side's; the GT
    // datapath resets drop as the pulse's timer runs out.
    logic pulse_all, pulse_rx;
    assign pulse_all = rst || (st == S_GT_RST && !restart_take);
    assign pulse_rx  = pulse_all || (st == S_RXGT_RST && !restart_take);

    always_ff @(posedge clk) begin
        ax_req    <= 1'b0;
        link_down <= 1'b0;
        if (!timer_out) timer <= timer - 32'd1;
        if (go) begin
            st    <= nxt;
            timer <= entry_time(nxt);
        end
        // A completed transaction: the next step of the state's list, or back to step 0
        // (every state is entered at step 0: it is left at the end of its list).
        if (op_done) begin
            issued <= 1'b0;
            step   <= op_last ? 3'd0 : step + 3'd1;
        end
        if (restart) restart_pend <= 1'b1;
        // Request the step's transaction once; the state advances on its ax_done.
        if (op_axi && !issued && !restart_take) begin
            ax_req   <= 1'b1;
            ax_write <= op_wr;
            ax_addr  <= op[63:32];
            ax_wdata <= op[31:0];
            issued   <= 1'b1;
        end

        if (restart_take) begin
            restart_pend <= 1'b0;
            issued       <= 1'b0;
            step         <= '0;
            retries      <= '0;
            mon          <= 1'b0;
            link_up      <= 1'b0;
            rx_aligned   <= 1'b0;
        end else begin
            // What the states do besides moving on.
            case (st)
                S_IDLE: if (auto_bringup) retries <= '0;
                // [3] done: the DCMAC is out of reset.
                S_RELEASE: if (op_last) mac_rst <= 1'b0;
                S_RXP_RELEASE: begin
                    if (op_last) begin
                        polls <= 32'(ALIGN_POLLS);
                        mon   <= 1'b0;
                    end
                end
                S_POLL_READ: begin
                    if (op_done && !op_last) begin
                        rx_phy_status <= ax_rdata;
                        rx_aligned    <= poll_ok;
                    end else if (op_last) begin
                        rx_remote_fault <= ax_rdata[0];
                        rx_local_fault  <= ax_rdata[1];
                        if (rx_aligned) begin
                            link_up <= 1'b1;
                            mon     <= 1'b1;
                        end else if (mon) begin
                            link_up   <= 1'b0;
                            link_down <= 1'b1;
                            mon       <= 1'b0;
                            if (auto_bringup) retries <= '0;
                        end else if (polls > 32'd1) begin
                            polls <= polls - 32'd1;
                        end
                    end
                end
                default: ;
            endcase
            // Waiting for the GTs ([1], [4]): each side's DCMAC resets are released as soon
            // as its lanes report ready (reset-done flags still high from before the pulse
            // need a few cycles to fall through the synchroniser; GT_RESET_CYCLES covers it).
            if ((st == S_GT_WAIT || st == S_RXGT_WAIT) && rx_all) begin
                dcmac_rx_core_reset   <= 1'b0;
                dcmac_rx_serdes_reset <= '0;
            end
            if (st == S_GT_WAIT && tx_all) begin
                dcmac_tx_core_reset   <= 1'b0;
                dcmac_tx_serdes_reset <= '0;
            end
            if (attempt_failed && !give_up) retries <= retries + 32'd1;
        end

        if (pulse_rx) begin
            rx_aligned            <= 1'b0;
            gt_reset_rx_datapath  <= {NUM_LANES{rst || !timer_out}};
            dcmac_rx_core_reset   <= 1'b1;
            dcmac_rx_serdes_reset <= '1;
        end
        if (pulse_all) begin
            gt_reset_tx_datapath  <= {NUM_LANES{rst || !timer_out}};
            dcmac_tx_core_reset   <= 1'b1;
            dcmac_tx_serdes_reset <= '1;
            mac_rst               <= 1'b1;
            link_up               <= 1'b0;
        end

        if (rst) begin
            st              <= auto_bringup ? S_GT_RST : S_IDLE;
            restart_pend    <= 1'b0;
            issued          <= 1'b0;
            step            <= '0;
            timer           <= 32'(GT_RESET_CYCLES);
            polls           <= '0;
            mon             <= 1'b0;
            retries         <= '0;
            link_down       <= 1'b0;
            rx_phy_status   <= '0;
            rx_local_fault  <= 1'b0;
            rx_remote_fault <= 1'b0;
            ax_req          <= 1'b0;
            ax_write        <= 1'b0;
            ax_addr         <= '0;
            ax_wdata        <= '0;
        end
    end

    always_ff @(posedge clk) gt_loopback <= gt_loopback_in;

    always_comb begin
        case (st)
            S_IDLE:                                       state = REP_IDLE;
            S_GT_RST, S_GT_WAIT:                          state = REP_GT;
            S_DC_ASSERT, S_DC_HOLD:                       state = REP_DCRST;
            S_CFG, S_RELEASE:                             state = REP_CFG;
            S_UP:                                         state = REP_UP;
            S_FAILED:                                     state = REP_FAILED;
            S_POLL_CLR, S_POLL_WAIT, S_POLL_READ:         state = mon ? REP_UP : REP_ALIGN;
            default:                                      state = REP_ALIGN;
        endcase
    end
endmodule
