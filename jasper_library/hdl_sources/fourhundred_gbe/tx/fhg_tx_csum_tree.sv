// SPDX-License-Identifier: GPL-3.0-or-later
// fhg_tx_csum_tree — pipelined sum of the 64 big-endian 16-bit words of a 1024-bit word.
//
// Contract: `data` holds 128 bytes in wire order, byte k in bits 8k+7:8k; 16-bit word i is
// byte 2i (high) and byte 2i+1 (low), as the Internet checksum (RFC 1071) reads a payload
// that starts at an even offset. `sum` is the plain 22-bit sum (no end-around carry yet:
// the caller folds once per frame). One word per cycle, latency LAT = 3 cycles; the
// sideband bits travel with the data.
module fhg_tx_csum_tree #(
    parameter int LAT = 3   // fixed by the adder tree below; a parameter so callers can align
) (
    input  wire          clk,
    input  wire [1023:0] data,
    input  wire          in_valid,
    input  wire          in_sof,
    input  wire          in_eof,
    output logic [21:0]  sum,
    output logic         out_valid,
    output logic         out_sof,
    output logic         out_eof
);
    initial if (LAT != 3) $error("fhg_tx_csum_tree: LAT must be 3");

    logic [17:0] l1 [16];
    logic [19:0] l2 [4];
    logic [2:0]  v, s, e;

    always_ff @(posedge clk) begin
        for (int g = 0; g < 16; g++) begin
            logic [17:0] acc;
            acc = '0;
            for (int k = 0; k < 4; k++) begin
                int i;
                i = 4 * g + k;
                acc = acc + 18'({data[16*i +: 8], data[16*i+8 +: 8]});
            end
            l1[g] <= acc;
        end
        for (int g = 0; g < 4; g++)
            l2[g] <= 20'(l1[4*g]) + 20'(l1[4*g+1]) + 20'(l1[4*g+2]) + 20'(l1[4*g+3]);
        sum <= 22'(l2[0]) + 22'(l2[1]) + 22'(l2[2]) + 22'(l2[3]);
        v <= {v[1:0], in_valid};
        s <= {s[1:0], in_sof};
        e <= {e[1:0], in_eof};
    end

    assign out_valid = v[2];
    assign out_sof   = s[2];
    assign out_eof   = e[2];
endmodule
