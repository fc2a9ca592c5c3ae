// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_bus_pkg — the bundles that pass between the core's modules unchanged, one type each, so
// a bundle's fields and widths are written once. fhg_core's own ports stay flat (the yellow
// block reads them from its source text) and fhg_core packs them into these types; a
// bundle's field order is its port order there, so the packing is one concatenation.
// Widths that follow a module parameter (buffer addresses, descriptors) stay plain ports:
// the Yosys front end takes no type parameters.
package fhg_bus_pkg;
    // User TX port (docs/design/core.md §1), user_clk.
    typedef struct packed {
        logic [1023:0] data;           // first wire byte in data[1023:1016]
        logic          valid;
        logic [127:0]  byte_enable;    // last word only, contiguous from bit 127
        logic [31:0]   dest_ip;        // sampled with end_of_frame
        logic [15:0]   dest_port;
        logic          end_of_frame;
    } tx_user_t;

    // What a transmit mode's user side reports in user_clk: the port's flow control and its
    // counters' one-cycle events; fhg_tx_path chooses one mode's set as a whole.
    typedef struct packed {
        logic          afull;          // tx_afull
        logic          overflow;       // tx_overflow, sticky until reset
        logic          word;           // a tx_valid word was accepted
        logic          frame_drop;     // a frame was dropped (overflow)
        logic [7:0]    words_lost;     // words discarded this cycle (0/1)
        logic          afull_rise;
    } tx_user_st_t;
endpackage
