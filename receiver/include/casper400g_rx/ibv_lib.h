// rdma-core entry points resolved with dlopen/dlsym at run time. Only compiled when
// the rdma-core headers were found at build time (CASPER400G_RX_HAVE_IBV).
//
// Many verbs are inline functions in verbs.h that call through the context's
// operation table; the ones used here never fall back to a library symbol, so the
// extension has no link-time dependency on libibverbs (a test checks its symbols).
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace casper400g_rx {

struct ibv_lib {
    decltype(&::ibv_get_device_list) get_device_list = nullptr;
    decltype(&::ibv_free_device_list) free_device_list = nullptr;
    decltype(&::ibv_get_device_name) get_device_name = nullptr;
    decltype(&::ibv_open_device) open_device = nullptr;
    decltype(&::ibv_close_device) close_device = nullptr;
    decltype(&::ibv_query_device) query_device = nullptr;
    decltype(&::ibv_query_port) query_port_compat = nullptr;  // legacy struct only
    decltype(&::ibv_alloc_pd) alloc_pd = nullptr;
    decltype(&::ibv_dealloc_pd) dealloc_pd = nullptr;
    decltype(&::ibv_reg_mr) reg_mr = nullptr;
    decltype(&::ibv_dereg_mr) dereg_mr = nullptr;
    decltype(&::ibv_reg_dmabuf_mr) reg_dmabuf_mr = nullptr;  // rdma-core >= 34; may be missing
    decltype(&::ibv_create_cq) create_cq = nullptr;
    decltype(&::ibv_destroy_cq) destroy_cq = nullptr;
    decltype(&::ibv_create_comp_channel) create_comp_channel = nullptr;
    decltype(&::ibv_destroy_comp_channel) destroy_comp_channel = nullptr;
    decltype(&::ibv_get_cq_event) get_cq_event = nullptr;
    decltype(&::ibv_ack_cq_events) ack_cq_events = nullptr;
    decltype(&::ibv_create_qp) create_qp = nullptr;
    decltype(&::ibv_destroy_qp) destroy_qp = nullptr;
    decltype(&::ibv_modify_qp) modify_qp = nullptr;
    // libmlx5 (direct verbs): striding RQ and direct completion access. May be absent.
    decltype(&::mlx5dv_is_supported) mlx5_is_supported = nullptr;
    decltype(&::mlx5dv_query_device) mlx5_query_device = nullptr;
    decltype(&::mlx5dv_create_wq) mlx5_create_wq = nullptr;
    decltype(&::mlx5dv_init_obj) mlx5_init_obj = nullptr;

    bool has_mlx5() const noexcept {
        return mlx5_is_supported && mlx5_query_device && mlx5_create_wq && mlx5_init_obj;
    }

    // The loaded library, or throws ibv_unavailable naming what is missing. Library
    // names come from CASPER400G_RX_LIBIBVERBS / CASPER400G_RX_LIBMLX5 when set.
    static const ibv_lib &get();
    static std::string load_error();  // "" when get() succeeds

    // ibv_query_port with the full attribute struct, without the library fallback
    // symbol that verbs.h's inline version refers to.
    int query_port(ibv_context *ctx, std::uint8_t port, ibv_port_attr *attr) const;
};

}  // namespace casper400g_rx
