#ifdef CASPER400G_RX_HAVE_IBV

#include "casper400g_rx/ibv_lib.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "casper400g_rx/ibv_source.h"

namespace casper400g_rx {

namespace {

struct loaded {
    ibv_lib lib;
    std::string error;
};

std::string env_or(const char *name, const char *fallback) {
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : fallback;
}

template <typename T>
bool sym(void *handle, const char *name, T &out) {
    out = reinterpret_cast<T>(dlsym(handle, name));
    return out != nullptr;
}

loaded load() {
    loaded r;
    const std::string verbs_name = env_or("CASPER400G_RX_LIBIBVERBS", "libibverbs.so.1");
    // The handles stay open for the life of the process: the verbs objects created
    // through them may outlive any owner we could give the handle to.
    void *verbs = dlopen(verbs_name.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (verbs == nullptr) {
        const char *why = dlerror();
        r.error = "rdma-core is not installed or not loadable (" + verbs_name + ": " +
                  (why ? why : "unknown error") +
                  "); install it with `apt-get install rdma-core ibverbs-providers` (Debian/Ubuntu) "
                  "or the NVIDIA MLNX_OFED/DOCA-OFED driver";
        return r;
    }
    ibv_lib &l = r.lib;
    const char *missing = nullptr;
#define CASPER400G_SYM(field, name) \
    if (!missing && !sym(verbs, name, l.field)) missing = name
    CASPER400G_SYM(get_device_list, "ibv_get_device_list");
    CASPER400G_SYM(free_device_list, "ibv_free_device_list");
    CASPER400G_SYM(get_device_name, "ibv_get_device_name");
    CASPER400G_SYM(open_device, "ibv_open_device");
    CASPER400G_SYM(close_device, "ibv_close_device");
    CASPER400G_SYM(query_device, "ibv_query_device");
    CASPER400G_SYM(query_port_compat, "ibv_query_port");
    CASPER400G_SYM(alloc_pd, "ibv_alloc_pd");
    CASPER400G_SYM(dealloc_pd, "ibv_dealloc_pd");
    CASPER400G_SYM(reg_mr, "ibv_reg_mr");
    CASPER400G_SYM(dereg_mr, "ibv_dereg_mr");
    CASPER400G_SYM(create_cq, "ibv_create_cq");
    CASPER400G_SYM(destroy_cq, "ibv_destroy_cq");
    CASPER400G_SYM(create_comp_channel, "ibv_create_comp_channel");
    CASPER400G_SYM(destroy_comp_channel, "ibv_destroy_comp_channel");
    CASPER400G_SYM(get_cq_event, "ibv_get_cq_event");
    CASPER400G_SYM(ack_cq_events, "ibv_ack_cq_events");
    CASPER400G_SYM(create_qp, "ibv_create_qp");
    CASPER400G_SYM(destroy_qp, "ibv_destroy_qp");
    CASPER400G_SYM(modify_qp, "ibv_modify_qp");
#undef CASPER400G_SYM
    if (missing) {
        r.error = verbs_name + " lacks " + missing + " (rdma-core too old?)";
        return r;
    }
    sym(verbs, "ibv_reg_dmabuf_mr", l.reg_dmabuf_mr);  // optional: GPUDirect via dma-buf
    const std::string mlx5_name = env_or("CASPER400G_RX_LIBMLX5", "libmlx5.so.1");
    if (void *mlx5 = dlopen(mlx5_name.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
        decltype(l.mlx5_is_supported) a = nullptr;
        decltype(l.mlx5_query_device) b = nullptr;
        decltype(l.mlx5_create_wq) c = nullptr;
        decltype(l.mlx5_init_obj) d = nullptr;
        if (sym(mlx5, "mlx5dv_is_supported", a) && sym(mlx5, "mlx5dv_query_device", b) &&
            sym(mlx5, "mlx5dv_create_wq", c) && sym(mlx5, "mlx5dv_init_obj", d)) {
            l.mlx5_is_supported = a;
            l.mlx5_query_device = b;
            l.mlx5_create_wq = c;
            l.mlx5_init_obj = d;
        }
    }
    return r;
}

const loaded &instance() {
    static const loaded l = load();
    return l;
}

}  // namespace

const ibv_lib &ibv_lib::get() {
    const loaded &l = instance();
    if (!l.error.empty()) throw ibv_unavailable(l.error);
    return l.lib;
}

std::string ibv_lib::load_error() { return instance().error; }

int ibv_lib::query_port(ibv_context *ctx, std::uint8_t port, ibv_port_attr *attr) const {
    std::memset(attr, 0, sizeof(*attr));
    if (verbs_context *vctx = verbs_get_ctx_op(ctx, query_port))
        return vctx->query_port(ctx, port, attr, sizeof(*attr));
    return query_port_compat(ctx, port, reinterpret_cast<_compat_ibv_port_attr *>(attr));
}

}  // namespace casper400g_rx

#endif  // CASPER400G_RX_HAVE_IBV
