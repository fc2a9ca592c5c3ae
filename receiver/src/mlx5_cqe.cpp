#include "casper400g_rx/mlx5_cqe.h"

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

}  // namespace casper400g_rx
