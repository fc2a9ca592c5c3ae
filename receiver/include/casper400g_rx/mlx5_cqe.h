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

// Striding RQ work queue entry: a 16-byte next segment (unused by a cyclic queue),
// then one 16-byte data segment (be32 byte_count, be32 lkey, be64 addr).
inline constexpr std::size_t wqe_next_seg = 16;
inline constexpr std::size_t wqe_data_seg = 16;
inline constexpr std::uint32_t doorbell_mask = 0xffffu;  // the doorbell record's 16-bit counter
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

// The striding RQ's producer side, kept here instead of in libmlx5. ibv_post_wq_recv
// checks each post against a tail that only ibv_poll_cq advances (mlx5_wq_overflow);
// completions are read directly here, so after one pass over the ring the provider
// would refuse every post. WQE k always owns buffer k and WQEs complete in ring order,
// so handing a WQE back is a step of the producer index, published through the work
// queue's doorbell record (as DPDK and other direct mlx5 users do).
class striding_wq {
public:
    // `wqes`: the work queue's ring (mlx5dv_rwq.buf), `stride` bytes per entry,
    // `wqe_cnt` entries (a power of two); `dbrec`: its doorbell record.
    striding_wq(std::uint8_t *wqes, std::size_t stride, std::uint32_t wqe_cnt,
                std::uint32_t *dbrec);
    // Points entry k at `bytes` bytes at `addr` (registered with `lkey`).
    void write(std::uint32_t k, std::uint64_t addr, std::uint32_t bytes, std::uint32_t lkey) noexcept;
    // Hands every entry to the NIC (once, after writing them all).
    void post_all();
    // Entry k's strides are all consumed: it goes back to the NIC. Entries come back in
    // ring order; anything else is a bookkeeping error and throws.
    void repost(std::uint32_t k);
    // Publishes the producer index (after the entries it covers are written).
    void ring() noexcept;
    std::uint64_t produced() const noexcept { return produced_; }
    std::uint64_t consumed() const noexcept { return consumed_; }
    std::uint32_t wqe_cnt() const noexcept { return wqe_cnt_; }
    // The value last written to the doorbell record, in host order.
    std::uint32_t doorbell() const noexcept { return doorbell_; }

private:
    std::uint8_t *wqes_;
    std::size_t stride_;
    std::uint32_t wqe_cnt_;
    std::uint32_t *dbrec_;
    std::uint64_t produced_ = 0;  // entries ever handed to the NIC
    std::uint64_t consumed_ = 0;  // entries ever handed back by completions
    std::uint32_t doorbell_ = 0;
};

}  // namespace casper400g_rx
