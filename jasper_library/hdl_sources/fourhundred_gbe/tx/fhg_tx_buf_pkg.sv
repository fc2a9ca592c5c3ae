// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_buf_pkg — the TX buffer's layout (docs/design/core.md §2), written once for its two
// writers (fhg_tx_writer: UDP frames; fhg_rdma_writer: RoCEv2 packets) and its reader side
// (fhg_tx_path): the constants, the writer's side of the buffer as one bundle each way, and
// the rules both writers place words by, as functions.
//
// The buffer is a stream of 16-byte DCMAC segments in wire order, eight to a 1024-bit word
// (byte x of a word in bits 8x+7:8x), even words in bank 0 and odd words in bank 1, at
// address word / 2. Frame k starts on the segment after frame k-1 ends, with a HDR_BYTES gap
// the packer fills with the Ethernet/IPv4/UDP header. A descriptor per frame, {start
// segment, UDP payload length, destination IP, destination port, UDP checksum}, tells the
// MAC side where it is. Words below a writer's final_word are never written again.
//
// The rules are functions, not a module: the timing estimate maps each module on its own,
// so a module between a writer's placement logic and its registers would cut each path's
// last LUT in two; a function is the writer's own logic.
package fhg_tx_buf_pkg;
    localparam int WORD_BYTES  = 128;   // one buffer word: the DCMAC bus's eight segments
    localparam int HDR_BYTES   = 42;    // Ethernet 14 + IPv4 20 + UDP 8, merged by the packer
    localparam int LEN_W       = 14;    // UDP payload length (bytes) in a descriptor
    // A descriptor besides its start segment: {length, dst_ip, dst_port, csum}.
    localparam int DESC_TAIL_W = LEN_W + 32 + 16 + 16;
    // Descriptor slots a writer keeps free: a frame it has begun may still push its
    // descriptor after the queue looked nearly full.
    localparam int DESC_MARGIN = 16;

    // The largest buffer the bundles describe: 2^MAX_AW words (8 MiB). The Yosys front end
    // takes no type parameters, so a bundle has its fields at this size and a buffer of
    // 2^AW words uses their low bits (its word numbers' bits above AW are zero, its bank
    // addresses' bits above AW-2 are not used).
    localparam int MAX_AW     = 16;
    localparam int MAX_WP     = MAX_AW + 1;    // word number with its wrap bit
    localparam int MAX_SP     = MAX_AW + 4;    // segment number with its wrap bit
    localparam int MAX_USED_W = 17;            // descriptors queued, up to 2^16 slots

    // The two bank write ports (registered in the writer).
    typedef struct packed {
        logic                   en0;
        logic [MAX_AW-2:0]      addr0;
        logic [1023:0]          data0;
        logic                   en1;
        logic [MAX_AW-2:0]      addr1;
        logic [1023:0]          data1;
    } bank_wr_t;

    // What a writer gives the buffer: its writes, the words it will never write again,
    // its descriptors.
    typedef struct packed {
        bank_wr_t               wr;
        logic [MAX_WP-1:0]      final_word;    // words below it are final
        logic                   desc_valid;
        logic [MAX_SP-1:0]      desc_seg;      // the frame's start segment
        logic [DESC_TAIL_W-1:0] desc_tail;     // {length, dst_ip, dst_port, csum}
    } buf_wr_t;

    // What it hears back from the MAC side.
    typedef struct packed {
        logic [MAX_WP-1:0]      rd_word;       // oldest word the reader still needs
        logic [MAX_USED_W-1:0]  desc_used;     // descriptors queued
    } buf_rd_t;

    // Buffer words to reserve for a frame of `body` bytes after the header gap: the words
    // it spans from a word boundary, plus two (the partial word it may start in, shared
    // with the frame before, and one of slack).
    function automatic int frame_words(input int body);
        frame_words = (HDR_BYTES + body + WORD_BYTES - 1) / WORD_BYTES + 2;
    endfunction

    // A cycle's writes as the banks take them: `lo` at word idx and, with hi_en, `hi` at
    // idx1 = idx + 1 (the writer has it ready). lo goes to the bank of idx's parity and hi
    // to the other, so the two never meet in a bank. Bank 1's address is idx / 2 either way
    // (an even idx shares it with idx + 1); bank 0's is idx1 / 2 when it takes hi. A bank
    // not written keeps address and data (`held`: the registers), only its enable drops.
    // (Plain vectors in and out, a bank_wr_t's bits: Yosys takes no struct members of a
    // function's result, nor $bits of a type.)
    localparam int BANK_W   = 2 * (1 + (MAX_AW - 1) + 1024);               // bank_wr_t
    localparam int BUF_WR_W = BANK_W + MAX_WP + 1 + MAX_SP + DESC_TAIL_W;  // buf_wr_t
    function automatic logic [BANK_W-1:0] bank_writes(
        input logic [BANK_W-1:0]   held,
        input logic                lo_en,
        input logic                hi_en,
        input logic [MAX_WP-1:0]   idx,
        input logic [MAX_WP-1:0]   idx1,
        input logic [1023:0]       lo,
        input logic [1023:0]       hi
    );
        logic              lo_odd, en0, en1, held_en0, held_en1;
        logic [MAX_AW-2:0] addr0, addr1;
        logic [1023:0]     data0, data1;
        {held_en0, addr0, data0, held_en1, addr1, data1} = held;
        lo_odd = idx[0];                  // lo goes to bank 1
        en0 = lo_odd ? hi_en : lo_en;
        en1 = lo_odd ? lo_en : hi_en;
        if (en0) begin
            addr0 = lo_odd ? idx1[MAX_AW-1:1] : idx[MAX_AW-1:1];
            data0 = lo_odd ? hi : lo;
        end
        if (en1) begin
            addr1 = idx[MAX_AW-1:1];
            data1 = lo_odd ? lo : hi;
        end
        bank_writes = {en0, addr0, data0, en1, addr1, data1};
    endfunction

    // Sealing: with no frame being placed (`busy` low), the next frame due to start inside
    // the partly filled word (its start segment not 0 in that word) and the reader near
    // enough to be waiting for that word, the word is given up: the next frame starts on
    // the word after it, which becomes final_word. (With the reader far behind, a seal
    // would only leave a hole that costs the packer its segment packing.)
    function automatic logic seal_due(input logic busy, input logic [2:0] start_in_word,
                                      input logic reader_near);
        seal_due = !busy && start_in_word != 3'd0 && reader_near;
    endfunction

    // The writer's bundle for the buffer from its registers (a buf_wr_t's bits).
    function automatic logic [BUF_WR_W-1:0] to_buffer(
        input logic [BANK_W-1:0]      wr,
        input logic [MAX_WP-1:0]      final_word,
        input logic                   desc_valid,
        input logic [MAX_SP-1:0]      desc_seg,
        input logic [DESC_TAIL_W-1:0] desc_tail
    );
        to_buffer = {wr, final_word, desc_valid, desc_seg, desc_tail};
    endfunction
endpackage
