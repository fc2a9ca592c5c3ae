// DLPack export from the pybind11 bindings (used by the bindings only): the dlpack.h ABI
// (versions 0.8 and 1.x) and the one capsule every chunk type hands to consumers.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>

namespace casper400g_rx {

struct dl_device {
    std::int32_t device_type;
    std::int32_t device_id;
};
struct dl_dtype {
    std::uint8_t code;
    std::uint8_t bits;
    std::uint16_t lanes;
};
struct dl_tensor {
    void *data;
    dl_device device;
    std::int32_t ndim;
    dl_dtype dtype;
    std::int64_t *shape;
    std::int64_t *strides;
    std::uint64_t byte_offset;
};
struct dl_managed {
    dl_tensor tensor;
    void *ctx;
    void (*deleter)(dl_managed *);
};
struct dl_version {
    std::uint32_t major;
    std::uint32_t minor;
};
struct dl_managed_versioned {
    dl_version version;
    void *ctx;
    void (*deleter)(dl_managed_versioned *);
    std::uint64_t flags;
    dl_tensor tensor;
};
inline constexpr std::int32_t dl_cuda = 2;

// A 1-D or 2-D array of bytes (uint8 or bool), or of `bits`-wide unsigned integers, owned
// by a Python object. Strides are in elements; a 1-D view uses shape[0] and strides[0] only.
struct dl_view {
    void *data;
    dl_device device;
    int ndim;
    std::int64_t shape[2];
    std::int64_t strides[2];
    bool is_bool;
    std::uint8_t bits = 8;
};

namespace dl_detail {

// One exported tensor: keeps the Python owner (the chunk) alive until the consumer drops it.
struct export_ctx {
    PyObject *owner;
    std::int64_t shape[2];
    std::int64_t strides[2];
    dl_managed managed;
    dl_managed_versioned versioned;
};

inline void drop(export_ctx *ctx) {
    // Consumers may call the deleter from any thread, with or without the GIL.
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(ctx->owner);
    delete ctx;
    PyGILState_Release(g);
}

template <class Managed>
const char *capsule_name();
template <>
inline const char *capsule_name<dl_managed>() {
    return "dltensor";
}
template <>
inline const char *capsule_name<dl_managed_versioned>() {
    return "dltensor_versioned";
}

template <class Managed>
pybind11::capsule capsule_of(Managed *m) {
    return pybind11::capsule(m, capsule_name<Managed>(), [](PyObject *cap) {
        // Only a capsule nobody consumed (its name not changed to "used_...") is ours to free.
        if (PyCapsule_IsValid(cap, capsule_name<Managed>())) {
            auto *p = static_cast<Managed *>(PyCapsule_GetPointer(cap, capsule_name<Managed>()));
            if (p != nullptr && p->deleter != nullptr) p->deleter(p);
        }
    });
}

}  // namespace dl_detail

// The "dltensor" capsule of `v` (DLPack 0.8), or with `versioned` the "dltensor_versioned"
// one (DLPack 1.0); `owner` stays alive until the consumer calls the deleter.
inline pybind11::capsule dl_capsule(pybind11::object owner, const dl_view &v, bool versioned) {
    auto *ctx = new dl_detail::export_ctx{};
    ctx->owner = owner.release().ptr();
    for (int i = 0; i < 2; i++) {
        ctx->shape[i] = v.shape[i];
        ctx->strides[i] = v.strides[i];
    }
    dl_tensor t{};
    t.data = v.data;
    t.device = v.device;
    t.ndim = v.ndim;
    t.dtype = dl_dtype{static_cast<std::uint8_t>(v.is_bool ? 6 : 1), v.bits, 1};  // kDLBool : kDLUInt
    t.shape = ctx->shape;
    t.strides = ctx->strides;
    t.byte_offset = 0;
    if (versioned) {
        ctx->versioned.version = dl_version{1, 0};
        ctx->versioned.ctx = ctx;
        ctx->versioned.deleter = [](dl_managed_versioned *m) {
            dl_detail::drop(static_cast<dl_detail::export_ctx *>(m->ctx));
        };
        ctx->versioned.flags = 0;
        ctx->versioned.tensor = t;
        return dl_detail::capsule_of(&ctx->versioned);
    }
    ctx->managed.ctx = ctx;
    ctx->managed.deleter = [](dl_managed *m) {
        dl_detail::drop(static_cast<dl_detail::export_ctx *>(m->ctx));
    };
    ctx->managed.tensor = t;
    return dl_detail::capsule_of(&ctx->managed);
}

}  // namespace casper400g_rx
