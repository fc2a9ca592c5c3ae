#include "casper400g_rx/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "casper400g_rx/sysfs.h"

namespace casper400g_rx::cu {

namespace {

template <typename F>
void resolve(void *lib, F &fn, const char *name, const char *alt = nullptr) {
    void *p = dlsym(lib, name);
    if (p == nullptr && alt != nullptr) p = dlsym(lib, alt);
    if (p == nullptr)
        throw error(std::string("the CUDA driver (libcuda.so.1) lacks ") + name +
                    ": the NVIDIA driver is too old for this receiver");
    fn = reinterpret_cast<F>(p);
}

}  // namespace

driver::driver() {
    lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
        const char *why = dlerror();
        throw error(std::string("no CUDA driver: cannot load libcuda.so.1 (") +
                    (why ? why : "unknown reason") +
                    "); a CUDA device needs an NVIDIA GPU with its driver installed");
    }
    resolve(lib_, cuInit, "cuInit");
    resolve(lib_, cuDriverGetVersion, "cuDriverGetVersion");
    resolve(lib_, cuGetErrorName, "cuGetErrorName");
    resolve(lib_, cuGetErrorString, "cuGetErrorString");
    resolve(lib_, cuDeviceGetCount, "cuDeviceGetCount");
    resolve(lib_, cuDeviceGet, "cuDeviceGet");
    resolve(lib_, cuDeviceGetName, "cuDeviceGetName");
    resolve(lib_, cuDeviceGetAttribute, "cuDeviceGetAttribute");
    resolve(lib_, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    resolve(lib_, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",
            "cuDevicePrimaryCtxRelease");
    resolve(lib_, cuCtxSetCurrent, "cuCtxSetCurrent");
    resolve(lib_, cuCtxSynchronize, "cuCtxSynchronize");
    resolve(lib_, cuMemAlloc, "cuMemAlloc_v2");
    resolve(lib_, cuMemFree, "cuMemFree_v2");
    resolve(lib_, cuMemHostAlloc, "cuMemHostAlloc");
    resolve(lib_, cuMemFreeHost, "cuMemFreeHost");
    resolve(lib_, cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
    resolve(lib_, cuMemHostRegister, "cuMemHostRegister_v2", "cuMemHostRegister");
    resolve(lib_, cuMemHostUnregister, "cuMemHostUnregister");
    resolve(lib_, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    resolve(lib_, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    resolve(lib_, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    resolve(lib_, cuMemsetD8Async, "cuMemsetD8Async");
    resolve(lib_, cuStreamCreate, "cuStreamCreate");
    resolve(lib_, cuStreamDestroy, "cuStreamDestroy_v2");
    resolve(lib_, cuStreamSynchronize, "cuStreamSynchronize");
    resolve(lib_, cuStreamWaitEvent, "cuStreamWaitEvent");
    resolve(lib_, cuStreamGetCtx, "cuStreamGetCtx");
    resolve(lib_, cuEventCreate, "cuEventCreate");
    resolve(lib_, cuEventDestroy, "cuEventDestroy_v2");
    resolve(lib_, cuEventRecord, "cuEventRecord");
    resolve(lib_, cuEventSynchronize, "cuEventSynchronize");
    resolve(lib_, cuEventQuery, "cuEventQuery");
    resolve(lib_, cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
    resolve(lib_, cuModuleLoadData, "cuModuleLoadData");
    resolve(lib_, cuModuleUnload, "cuModuleUnload");
    resolve(lib_, cuModuleGetFunction, "cuModuleGetFunction");
    resolve(lib_, cuLaunchKernel, "cuLaunchKernel");
    resolve(lib_, cuFuncSetAttribute, "cuFuncSetAttribute");
    cuMemGetHandleForAddressRange = reinterpret_cast<decltype(cuMemGetHandleForAddressRange)>(
        dlsym(lib_, "cuMemGetHandleForAddressRange"));
    check(cuInit(0), "cuInit");
}

const driver &driver::get() {
    // A failed load is remembered: every later request gets the same reason.
    static std::once_flag once;
    static std::unique_ptr<driver> instance;
    static std::string failure;
    std::call_once(once, [] {
        try {
            instance.reset(new driver());
        } catch (const std::exception &e) {
            failure = e.what();
        }
    });
    if (!instance) throw error(failure);
    return *instance;
}

std::string driver::error_text(result r) const {
    const char *name = nullptr;
    const char *text = nullptr;
    if (cuGetErrorName == nullptr || cuGetErrorName(r, &name) != success) name = nullptr;
    if (cuGetErrorString == nullptr || cuGetErrorString(r, &text) != success) text = nullptr;
    std::string s = name ? name : "CUDA error " + std::to_string(r);
    if (text) s += std::string(" (") + text + ")";
    return s;
}

void driver::check(result r, const char *call) const {
    if (r != success) throw error(std::string(call) + " failed: " + error_text(r));
}

int device_count() {
    const driver &d = driver::get();
    int n = 0;
    d.check(d.cuDeviceGetCount(&n), "cuDeviceGetCount");
    return n;
}

device::device(int ordinal) : drv_(driver::get()), ordinal_(ordinal) {
    const int n = device_count();
    if (ordinal < 0 || ordinal >= n)
        throw error("cuda:" + std::to_string(ordinal) + " requested but " + std::to_string(n) +
                    " CUDA device(s) found");
    check(drv_.cuDeviceGet(&dev_, ordinal), "cuDeviceGet");
    check(drv_.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    char name[256] = {};
    check(drv_.cuDeviceGetName(name, sizeof(name) - 1, dev_), "cuDeviceGetName");
    name_ = name;
    check(drv_.cuDeviceGetAttribute(&sm_count_, attr_multiprocessor_count, dev_),
          "cuDeviceGetAttribute");
    int domain = 0, bus = 0, slot = 0;
    check(drv_.cuDeviceGetAttribute(&domain, attr_pci_domain_id, dev_), "cuDeviceGetAttribute");
    check(drv_.cuDeviceGetAttribute(&bus, attr_pci_bus_id, dev_), "cuDeviceGetAttribute");
    check(drv_.cuDeviceGetAttribute(&slot, attr_pci_device_id, dev_), "cuDeviceGetAttribute");
    char pci[32];
    std::snprintf(pci, sizeof(pci), "%04x:%02x:%02x.0", static_cast<unsigned>(domain) & 0xffffu,
                  static_cast<unsigned>(bus) & 0xffu, static_cast<unsigned>(slot) & 0xffu);
    pci_ = pci;
    const std::string node = sysfs_read("/sys/bus/pci/devices/" + pci_ + "/numa_node");
    if (!node.empty() && node.find_first_not_of("-0123456789") == std::string::npos &&
        node.size() < 6)
        numa_node_ = std::stoi(node);
}

device::~device() {
    if (ctx_ != nullptr) drv_.cuDevicePrimaryCtxRelease(dev_);
}

void device::make_current() const { check(drv_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

device_memory::device_memory(std::shared_ptr<const device> dev, std::size_t bytes)
    : dev_(std::move(dev)), bytes_(bytes) {
    dev_->make_current();
    dev_->check(dev_->drv().cuMemAlloc(&ptr_, bytes ? bytes : 1),
                ("cuMemAlloc of " + std::to_string(bytes) + " bytes").c_str());
}

device_memory::~device_memory() {
    if (ptr_ == 0) return;
    dev_->make_current();
    dev_->drv().cuMemFree(ptr_);
}

mapped_host_memory::mapped_host_memory(std::shared_ptr<const device> dev, std::size_t bytes)
    : dev_(std::move(dev)), bytes_(bytes) {
    dev_->make_current();
    void *p = nullptr;
    dev_->check(dev_->drv().cuMemHostAlloc(&p, bytes ? bytes : 1,
                                           memhostalloc_portable | memhostalloc_devicemap),
                ("cuMemHostAlloc of " + std::to_string(bytes) + " bytes").c_str());
    host_ = static_cast<std::uint8_t *>(p);
    const result r = dev_->drv().cuMemHostGetDevicePointer(&dev_ptr_, p, 0);
    if (r != success) {
        dev_->drv().cuMemFreeHost(p);
        dev_->check(r, "cuMemHostGetDevicePointer");
    }
    std::fill(host_, host_ + bytes, std::uint8_t{0});
}

mapped_host_memory::~mapped_host_memory() {
    if (host_ != nullptr) dev_->drv().cuMemFreeHost(host_);
}

host_registration::host_registration(std::shared_ptr<const device> dev, void *ptr,
                                     std::size_t bytes)
    : dev_(std::move(dev)), ptr_(ptr) {
    dev_->make_current();
    dev_->check(dev_->drv().cuMemHostRegister(ptr, bytes, memhostregister_portable),
                ("cuMemHostRegister of " + std::to_string(bytes) + " bytes").c_str());
}

host_registration::~host_registration() { dev_->drv().cuMemHostUnregister(ptr_); }

stream_owner::stream_owner(std::shared_ptr<const device> dev) : dev_(std::move(dev)) {
    dev_->make_current();
    dev_->check(dev_->drv().cuStreamCreate(&s_, stream_non_blocking), "cuStreamCreate");
}

stream_owner::~stream_owner() {
    if (s_ == nullptr) return;
    dev_->make_current();
    dev_->drv().cuStreamSynchronize(s_);
    dev_->drv().cuStreamDestroy(s_);
}

event_owner::event_owner(std::shared_ptr<const device> dev, unsigned flags)
    : dev_(std::move(dev)) {
    dev_->make_current();
    dev_->check(dev_->drv().cuEventCreate(&e_, flags), "cuEventCreate");
}

event_owner::~event_owner() {
    if (e_ != nullptr) dev_->drv().cuEventDestroy(e_);
}

}  // namespace casper400g_rx::cu
