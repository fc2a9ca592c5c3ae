// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"), and RAII
// owners for what it hands out. Nothing here links against CUDA: the package
// builds and imports on machines without a GPU, and only asking for a device
// reaches the driver. The few types and constants are declared here from the
// driver API's documentation; cuda_kernels.cu checks them against cuda.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace casper400g_rx::cu {

using result = int;
using device_t = int;
using deviceptr = unsigned long long;
struct ctx_st;
struct stream_st;
struct event_st;
struct module_st;
struct func_st;
using context = ctx_st *;
using stream = stream_st *;
using event = event_st *;
using module = module_st *;
using function = func_st *;

constexpr result success = 0;
constexpr result error_not_ready = 600;
constexpr unsigned stream_non_blocking = 0x1;
constexpr unsigned event_blocking_sync = 0x1;
constexpr unsigned event_disable_timing = 0x2;
constexpr unsigned memhostalloc_portable = 0x1;
constexpr unsigned memhostalloc_devicemap = 0x2;
constexpr unsigned memhostregister_portable = 0x1;
constexpr int attr_multiprocessor_count = 16;
constexpr int attr_compute_capability_major = 75;
constexpr int attr_compute_capability_minor = 76;
constexpr int attr_can_map_host_memory = 19;
constexpr int attr_pci_bus_id = 33;
constexpr int attr_pci_device_id = 34;
constexpr int attr_pci_domain_id = 50;
constexpr int func_attr_max_dynamic_shared_size_bytes = 8;
constexpr int attr_dma_buf_supported = 124;
constexpr int mem_range_handle_dma_buf_fd = 1;
// The special stream handles of the DLPack / __cuda_array_interface__ conventions.
inline stream legacy_stream() { return reinterpret_cast<stream>(std::uintptr_t{1}); }
inline stream per_thread_stream() { return reinterpret_cast<stream>(std::uintptr_t{2}); }

// A CUDA call failed; the message names the call and the driver's error.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The driver library, loaded once per process. get() throws error naming why
// CUDA is unusable here (no libcuda, no device, driver too old).
class driver {
public:
    static const driver &get();

    // Throws error("<call>: CUDA_ERROR_... (<description>)") unless r == success.
    void check(result r, const char *call) const;
    std::string error_text(result r) const;

    result (*cuInit)(unsigned);
    result (*cuDriverGetVersion)(int *);
    result (*cuGetErrorName)(result, const char **);
    result (*cuGetErrorString)(result, const char **);
    result (*cuDeviceGetCount)(int *);
    result (*cuDeviceGet)(device_t *, int);
    result (*cuDeviceGetName)(char *, int, device_t);
    result (*cuDeviceGetAttribute)(int *, int, device_t);
    result (*cuDevicePrimaryCtxRetain)(context *, device_t);
    result (*cuDevicePrimaryCtxRelease)(device_t);
    result (*cuCtxSetCurrent)(context);
    result (*cuCtxSynchronize)();
    result (*cuMemAlloc)(deviceptr *, std::size_t);
    result (*cuMemFree)(deviceptr);
    result (*cuMemHostAlloc)(void **, std::size_t, unsigned);
    result (*cuMemFreeHost)(void *);
    result (*cuMemHostGetDevicePointer)(deviceptr *, void *, unsigned);
    result (*cuMemHostRegister)(void *, std::size_t, unsigned);
    result (*cuMemHostUnregister)(void *);
    result (*cuMemcpyHtoDAsync)(deviceptr, const void *, std::size_t, stream);
    result (*cuMemcpyDtoHAsync)(void *, deviceptr, std::size_t, stream);
    result (*cuMemcpyDtoDAsync)(deviceptr, deviceptr, std::size_t, stream);
    result (*cuMemsetD8Async)(deviceptr, unsigned char, std::size_t, stream);
    result (*cuStreamCreate)(stream *, unsigned);
    result (*cuStreamDestroy)(stream);
    result (*cuStreamSynchronize)(stream);
    result (*cuStreamWaitEvent)(stream, event, unsigned);
    result (*cuStreamGetCtx)(stream, context *);
    result (*cuEventCreate)(event *, unsigned);
    result (*cuEventDestroy)(event);
    result (*cuEventRecord)(event, stream);
    result (*cuEventSynchronize)(event);
    result (*cuEventQuery)(event);
    result (*cuEventElapsedTime)(float *, event, event);
    result (*cuModuleLoadData)(module *, const void *);
    result (*cuModuleUnload)(module);
    result (*cuModuleGetFunction)(function *, module, const char *);
    result (*cuLaunchKernel)(function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, stream, void **, void **);
    result (*cuFuncSetAttribute)(function, int, int);
    // CUDA >= 11.7 (dma-buf export for NIC registration); nullptr on older drivers.
    result (*cuMemGetHandleForAddressRange)(void *, deviceptr, std::size_t, int,
                                            unsigned long long) = nullptr;

private:
    driver();
    void *lib_ = nullptr;
};

// One GPU's primary context (the one CuPy, PyTorch and JAX use), retained for
// the object's lifetime. make_current() binds it to the calling thread.
class device {
public:
    explicit device(int ordinal);
    ~device();
    device(const device &) = delete;
    device &operator=(const device &) = delete;

    void make_current() const;
    int ordinal() const noexcept { return ordinal_; }
    int sm_count() const noexcept { return sm_count_; }
    const std::string &name() const noexcept { return name_; }
    // "dddd:bb:dd.0", as in /sys/bus/pci/devices, and the NUMA node the kernel gives it
    // there (-1: unknown, e.g. one node or no sysfs).
    const std::string &pci_address() const noexcept { return pci_; }
    int numa_node() const noexcept { return numa_node_; }
    const driver &drv() const noexcept { return drv_; }
    device_t handle() const noexcept { return dev_; }
    context ctx() const noexcept { return ctx_; }
    void check(result r, const char *call) const { drv_.check(r, call); }

private:
    const driver &drv_;
    int ordinal_;
    device_t dev_ = 0;
    context ctx_ = nullptr;
    int sm_count_ = 0;
    std::string name_;
    std::string pci_;
    int numa_node_ = -1;
};

// Number of CUDA devices, or throws error with the reason there are none usable.
int device_count();

class device_memory {
public:
    device_memory(std::shared_ptr<const device> dev, std::size_t bytes);
    ~device_memory();
    device_memory(const device_memory &) = delete;
    device_memory &operator=(const device_memory &) = delete;
    deviceptr get() const noexcept { return ptr_; }
    std::size_t size() const noexcept { return bytes_; }

private:
    std::shared_ptr<const device> dev_;
    deviceptr ptr_ = 0;
    std::size_t bytes_;
};

// Page-locked host memory mapped into the device's address space.
class mapped_host_memory {
public:
    mapped_host_memory(std::shared_ptr<const device> dev, std::size_t bytes);
    ~mapped_host_memory();
    mapped_host_memory(const mapped_host_memory &) = delete;
    mapped_host_memory &operator=(const mapped_host_memory &) = delete;
    std::uint8_t *host() const noexcept { return host_; }
    deviceptr dev() const noexcept { return dev_ptr_; }
    std::size_t size() const noexcept { return bytes_; }

private:
    std::shared_ptr<const device> dev_;
    std::uint8_t *host_ = nullptr;
    deviceptr dev_ptr_ = 0;
    std::size_t bytes_;
};

// Pins existing host memory (the engine's chunk pool) for asynchronous copies.
class host_registration {
public:
    host_registration(std::shared_ptr<const device> dev, void *ptr, std::size_t bytes);
    ~host_registration();
    host_registration(const host_registration &) = delete;
    host_registration &operator=(const host_registration &) = delete;

private:
    std::shared_ptr<const device> dev_;
    void *ptr_;
};

class stream_owner {
public:
    explicit stream_owner(std::shared_ptr<const device> dev);
    ~stream_owner();
    stream_owner(const stream_owner &) = delete;
    stream_owner &operator=(const stream_owner &) = delete;
    stream get() const noexcept { return s_; }

private:
    std::shared_ptr<const device> dev_;
    stream s_ = nullptr;
};

class event_owner {
public:
    event_owner(std::shared_ptr<const device> dev, unsigned flags);
    ~event_owner();
    event_owner(event_owner &&o) noexcept : dev_(std::move(o.dev_)), e_(o.e_) { o.e_ = nullptr; }
    event_owner(const event_owner &) = delete;
    event_owner &operator=(const event_owner &) = delete;
    event get() const noexcept { return e_; }

private:
    std::shared_ptr<const device> dev_;
    event e_ = nullptr;
};

}  // namespace casper400g_rx::cu
