#include "casper400g_rx/mlx5_cqe.h"

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

#ifdef CASPER400G_RX_HAVE_IBV
#include <infiniband/mlx5dv.h>

#include <cstddef>
#endif

namespace casper400g_rx {

namespace {

std::uint16_t be16(const std::uint8_t *p) noexcept {
    return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

std::uint32_t be32(const std::uint8_t *p) noexcept {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           p[3];
}

}  // namespace

#ifdef CASPER400G_RX_HAVE_IBV
// The offsets above are the documented layout; the installed header must agree.
static_assert(sizeof(mlx5_cqe64) == mlx5::cqe_size);
static_assert(offsetof(mlx5_cqe64, wqe_id) == mlx5::off_wqe_id);
static_assert(offsetof(mlx5_cqe64, hds_ip_ext) == mlx5::off_hds_ip_ext);
static_assert(offsetof(mlx5_cqe64, l4_hdr_type_etc) == mlx5::off_l4_hdr_type);
static_assert(offsetof(mlx5_cqe64, byte_cnt) == mlx5::off_byte_cnt);
static_assert(offsetof(mlx5_cqe64, timestamp) == mlx5::off_timestamp);
static_assert(offsetof(mlx5_cqe64, wqe_counter) == mlx5::off_wqe_counter);
static_assert(offsetof(mlx5_cqe64, op_own) == mlx5::off_op_own);
static_assert(offsetof(mlx5_err_cqe, syndrome) == mlx5::off_syndrome);
static_assert(offsetof(mlx5_err_cqe, vendor_err_synd) == mlx5::off_vendor_syndrome);
static_assert(MLX5_CQE_RESP_SEND == mlx5::op_resp_send && MLX5_CQE_INVALID == mlx5::op_invalid);
static_assert(MLX5_CQE_L3_OK == mlx5::l3_ok && MLX5_CQE_L4_OK == mlx5::l4_ok);
static_assert(sizeof(mlx5_wqe_srq_next_seg) == mlx5::wqe_next_seg);
static_assert(sizeof(mlx5_wqe_data_seg) == mlx5::wqe_data_seg);
static_assert(offsetof(mlx5_wqe_data_seg, byte_count) == 0 && offsetof(mlx5_wqe_data_seg, lkey) == 4 &&
              offsetof(mlx5_wqe_data_seg, addr) == 8);
#endif

cqe_info parse_cqe64(const std::uint8_t *cqe) noexcept {
    cqe_info c;
    const std::uint8_t op_own = cqe[mlx5::off_op_own];
    c.opcode = op_own >> 4;
    c.format = (op_own >> 2) & 0x3;
    c.owner = (op_own & 1) != 0;
    c.byte_cnt = be32(cqe + mlx5::off_byte_cnt);
    c.wqe_counter = be16(cqe + mlx5::off_wqe_counter);
    c.wqe_id = be16(cqe + mlx5::off_wqe_id);
    c.timestamp = (std::uint64_t{be32(cqe + mlx5::off_timestamp)} << 32) |
                  be32(cqe + mlx5::off_timestamp + 4);
    c.l3_ok = (cqe[mlx5::off_hds_ip_ext] & mlx5::l3_ok) != 0;
    c.l4_ok = (cqe[mlx5::off_hds_ip_ext] & mlx5::l4_ok) != 0;
    if (c.opcode == mlx5::op_req_err || c.opcode == mlx5::op_resp_err) {
        c.syndrome = cqe[mlx5::off_syndrome];
        c.vendor_syndrome = cqe[mlx5::off_vendor_syndrome];
    }
    c.filler = (c.byte_cnt & mlx5::mprq_filler) != 0;
    c.strides = static_cast<std::uint16_t>((c.byte_cnt & mlx5::mprq_strides_mask) >>
                                           mlx5::mprq_strides_shift);
    c.length = static_cast<std::uint16_t>(c.byte_cnt & mlx5::mprq_len_mask);
    c.stride_index = c.wqe_counter;
    return c;
}

bool cqe_sw_owned(const std::uint8_t *cqe, std::uint32_t ci, std::uint32_t cqe_cnt) noexcept {
    const std::uint8_t op_own = cqe[mlx5::off_op_own];
    // The owner bit flips on every pass over the ring; a never-written entry is INVALID.
    return (op_own >> 4) != mlx5::op_invalid && ((op_own & 1) != 0) == ((ci & cqe_cnt) != 0);
}

stride_ring::stride_ring(std::uint8_t *base, std::size_t n_wqe, unsigned log_stride,
                         unsigned log_strides)
    : base_(base), log_stride_(log_stride), log_strides_(log_strides), used_(n_wqe, 0) {
    if (n_wqe == 0) throw std::invalid_argument("striding RQ needs at least one WQE");
    if (log_stride < 6 || log_stride > 16 || log_strides > 16)
        throw std::invalid_argument("striding RQ geometry out of range: 2^" +
                                    std::to_string(log_stride) + " B strides, 2^" +
                                    std::to_string(log_strides) + " strides per WQE");
}

stride_ring::packet stride_ring::consume(const cqe_info &c, std::int64_t &done) {
    done = -1;
    packet p;
    const std::size_t k = c.wqe_id;
    const std::size_t per = strides_per_wqe();
    if (k >= used_.size() || c.strides == 0 || c.stride_index >= per ||
        c.stride_index + std::size_t{c.strides} > per) {
        malformed_++;
        return p;
    }
    used_[k] += c.strides;
    if (used_[k] >= per) {
        used_[k] = 0;
        done = static_cast<std::int64_t>(k);
    }
    if (c.filler) return p;  // strides skipped at the end of a WQE, no packet
    const std::size_t span = std::size_t{c.strides} << log_stride_;
    if (c.length == 0 || c.length > span) {
        malformed_++;
        return p;
    }
    p.data = wqe(k) + (std::size_t{c.stride_index} << log_stride_);
    p.size = c.length;
    p.valid = true;
    return p;
}

namespace {

void put_be32(std::uint8_t *p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 24);
    p[1] = static_cast<std::uint8_t>(v >> 16);
    p[2] = static_cast<std::uint8_t>(v >> 8);
    p[3] = static_cast<std::uint8_t>(v);
}

}  // namespace

striding_wq::striding_wq(std::uint8_t *wqes, std::size_t stride, std::uint32_t wqe_cnt,
                         std::uint32_t *dbrec)
    : wqes_(wqes), stride_(stride), wqe_cnt_(wqe_cnt), dbrec_(dbrec) {
    if (wqe_cnt == 0 || (wqe_cnt & (wqe_cnt - 1)) != 0 || wqe_cnt > mlx5::doorbell_mask + 1)
        throw std::invalid_argument("striding RQ entries must be a power of two up to 65536, got " +
                                    std::to_string(wqe_cnt));
    if (stride < mlx5::wqe_next_seg + mlx5::wqe_data_seg)
        throw std::invalid_argument("striding RQ entry stride " + std::to_string(stride) +
                                    " B cannot hold a next and a data segment (32 B)");
}

void striding_wq::write(std::uint32_t k, std::uint64_t addr, std::uint32_t bytes,
                        std::uint32_t lkey) noexcept {
    std::uint8_t *e = wqes_ + static_cast<std::size_t>(k % wqe_cnt_) * stride_;
    std::memset(e, 0, mlx5::wqe_next_seg);
    std::uint8_t *d = e + mlx5::wqe_next_seg;
    put_be32(d, bytes);
    put_be32(d + 4, lkey);
    put_be32(d + 8, static_cast<std::uint32_t>(addr >> 32));
    put_be32(d + 12, static_cast<std::uint32_t>(addr));
}

void striding_wq::post_all() {
    if (produced_ != 0) throw std::logic_error("striding RQ entries were already posted");
    produced_ = wqe_cnt_;
}

void striding_wq::repost(std::uint32_t k) {
    const std::uint32_t expected = static_cast<std::uint32_t>(consumed_ % wqe_cnt_);
    if (produced_ == consumed_)
        throw std::logic_error("striding RQ entry " + std::to_string(k) +
                               " completed while none was posted");
    if (k != expected)
        throw std::logic_error("striding RQ entry " + std::to_string(k) +
                               " completed out of ring order (expected " +
                               std::to_string(expected) + ")");
    consumed_++;
    produced_++;  // the same entry, same buffer: nothing to rewrite
}

void striding_wq::ring() noexcept {
    const std::uint32_t v = static_cast<std::uint32_t>(produced_) & mlx5::doorbell_mask;
    doorbell_ = v;
    std::uint8_t be[4];
    put_be32(be, v);
    std::uint32_t word;
    std::memcpy(&word, be, 4);
    // The entries (and the buffers' last reads) come before the NIC may see the index.
    std::atomic_thread_fence(std::memory_order_release);
    *reinterpret_cast<volatile std::uint32_t *>(dbrec_) = word;
}

}  // namespace casper400g_rx
