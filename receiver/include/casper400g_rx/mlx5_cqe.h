// The mlx5 64-byte completion queue entry, read byte by byte (big-endian fields at
// the offsets of struct mlx5_cqe64 in rdma-core's mlx5dv.h), and the bookkeeping of
// a striding (multi-packet) receive queue. Pure functions: no rdma-core needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace casper400g_rx {

namespace mlx5 {
// Byte offsets inside the 64-byte CQE.
inline constexpr std::size_t cqe_size = 64;
inline constexpr std::size_t off_wqe_id = 2;           // be16: multi-packet WQE index
inline constexpr std::size_t off_hds_ip_ext = 28;      // L2/L3/L4 checksum-ok flags
inline constexpr std::size_t off_l4_hdr_type = 29;     // l3 header type in bits 3:2
inline constexpr std::size_t off_vendor_syndrome = 54;  // error CQE
inline constexpr std::size_t off_syndrome = 55;         // error CQE
inline constexpr std::size_t off_byte_cnt = 44;        // be32
inline constexpr std::size_t off_timestamp = 48;       // be64
inline constexpr std::size_t off_wqe_counter = 60;     // be16: WQE index, or stride index
inline constexpr std::size_t off_op_own = 63;          // opcode 7:4, format 3:2, owner 0

inline constexpr std::uint8_t op_resp_send = 2;
inline constexpr std::uint8_t op_req_err = 13;
inline constexpr std::uint8_t op_resp_err = 14;
inline constexpr std::uint8_t op_invalid = 15;

inline constexpr std::uint8_t l3_ok = 1 << 1;
inline constexpr std::uint8_t l4_ok = 1 << 2;

// Striding RQ byte_cnt: filler flag, strides consumed, packet length.
inline constexpr std::uint32_t mprq_filler = 0x80000000u;
inline constexpr std::uint32_t mprq_strides_mask = 0x3fff0000u;
inline constexpr unsigned mprq_strides_shift = 16;
inline constexpr std::uint32_t mprq_len_mask = 0x0000ffffu;
}  // namespace mlx5

struct cqe_info {
    std::uint8_t opcode = mlx5::op_invalid;
    std::uint8_t format = 0;
    bool owner = false;
    std::uint32_t byte_cnt = 0;  // raw field
    std::uint16_t wqe_counter = 0;
    std::uint16_t wqe_id = 0;
    std::uint64_t timestamp = 0;
    bool l3_ok = false;
    bool l4_ok = false;
    std::uint8_t syndrome = 0;         // error CQEs only
    std::uint8_t vendor_syndrome = 0;  // error CQEs only
    // Striding RQ view of byte_cnt and wqe_counter.
    bool filler = false;
    std::uint16_t strides = 0;
    std::uint16_t length = 0;
    std::uint16_t stride_index = 0;
};

cqe_info parse_cqe64(const std::uint8_t *cqe) noexcept;

// True when the CQE at consumer index `ci` (ring of `cqe_cnt` entries, a power of two)
// has been written by the hardware for this pass over the ring.
bool cqe_sw_owned(const std::uint8_t *cqe, std::uint32_t ci, std::uint32_t cqe_cnt) noexcept;

// Where striding-RQ completions put their packets. WQE k of the ring always owns buffer
// k (WQEs are reposted in the order they complete, so the ring position is stable).
class stride_ring {
public:
    struct packet {
        const std::uint8_t *data = nullptr;
        std::size_t size = 0;
        bool valid = false;  // false: a filler, or a completion that does not fit the ring
    };

    // n_wqe buffers of (1 << log_strides) strides of (1 << log_stride) bytes, from `base`.
    stride_ring(std::uint8_t *base, std::size_t n_wqe, unsigned log_stride, unsigned log_strides);

    // Accounts one completion; `done` is set to the WQE index when this completion used
    // its last stride (the WQE may be posted again), else to -1.
    packet consume(const cqe_info &c, std::int64_t &done);

    std::size_t wqe_bytes() const noexcept { return std::size_t{1} << (log_stride_ + log_strides_); }
    std::size_t stride_bytes() const noexcept { return std::size_t{1} << log_stride_; }
    std::size_t strides_per_wqe() const noexcept { return std::size_t{1} << log_strides_; }
    std::uint8_t *wqe(std::size_t k) const noexcept { return base_ + k * wqe_bytes(); }
    std::size_t n_wqe() const noexcept { return used_.size(); }
    std::uint64_t malformed() const noexcept { return malformed_; }

private:
    std::uint8_t *base_;
    unsigned log_stride_;
    unsigned log_strides_;
    std::vector<std::uint32_t> used_;  // strides consumed per WQE
    std::uint64_t malformed_ = 0;
};

}  // namespace casper400g_rx
