#include "casper400g_rx/cuda_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "casper400g_rx/cuda_delivery.h"
#include "casper400g_rx/cuda_fatbin.h"
#include "casper400g_rx/cuda_gpudirect.h"
#include "casper400g_rx/emu_source.h"
#include "casper400g_rx/lanes_bindings.h"
#include "casper400g_rx/py_dlpack.h"
#include "casper400g_rx/py_wait.h"
#include "casper400g_rx/spead_bindings.h"

namespace py = pybind11;

namespace casper400g_rx {

namespace {

struct view {
    cu::deviceptr ptr;
    int ndim;
    std::int64_t shape[2];
    bool is_bool;
    std::uint8_t bits = 8;  // uint8/bool, or uint64 (SPEAD's per-heap arrays)
};

// A GPU capture's counters as a dict; GPUDirect's SPEAD reasons (gd_rejected_by_prefix)
// gathered into `rejected_by`, as the CPU engine's stats give them.
void put_counters(py::dict &d, const std::map<std::string, std::uint64_t> &m) {
    const std::string prefix = gd_rejected_by_prefix;
    py::dict by;
    for (const auto &[k, v] : m) {
        if (k.compare(0, prefix.size(), prefix) == 0)
            by[py::str(k.substr(prefix.size()))] = v;
        else
            d[py::str(k)] = v;
    }
    if (!by.empty()) d["rejected_by"] = by;
}

cu::stream to_stream(const py::object &s) {
    if (py::isinstance<py::int_>(s)) {
        const auto v = s.cast<std::int64_t>();
        if (v == 0)
            throw std::invalid_argument(
                "stream 0 is ambiguous (DLPack / CUDA array interface); use 1 for the legacy "
                "default stream, 2 for the per-thread default stream or a stream handle");
        return reinterpret_cast<cu::stream>(static_cast<std::uintptr_t>(v));
    }
    for (const char *attr : {"cuda_stream", "ptr", "handle"})
        if (py::hasattr(s, attr)) return to_stream(s.attr(attr));
    throw std::invalid_argument("stream must be an int handle or a CuPy/PyTorch stream, got " +
                                std::string(py::str(py::type::of(s))));
}

class py_gpu_chunk {
public:
    // The chunk's ring and fill stream are its device's (one of several for a capture
    // delivering into several GPUs).
    py_gpu_chunk(std::shared_ptr<gpu_capture> cap, gpu_chunk *c)
        : cap_(std::move(cap)), c_(c), pool_(&cap_->pool_of(*c)), fill_(cap_->fill_stream_of(*c)) {}
    py_gpu_chunk(const py_gpu_chunk &) = delete;
    py_gpu_chunk &operator=(const py_gpu_chunk &) = delete;
    ~py_gpu_chunk() {
        try {
            release(py::none());
        } catch (...) {
            // Garbage collection must not raise; a failing release leaves the chunk out.
        }
    }

    const gpu_chunk &get() const {
        if (c_ == nullptr) throw std::runtime_error("chunk already released");
        return *c_;
    }
    std::size_t packets() const { return pool_->packets_per_chunk(); }
    std::size_t payload() const { return pool_->payload_size(); }
    const std::vector<std::uint64_t> &item_ids() const { return pool_->item_ids(); }
    int ordinal() const { return pool_->dev()->ordinal(); }
    bool released() const { return c_ == nullptr; }

    // Makes `s` wait for the chunk's fill; remembers it for release().
    void order_after(cu::stream s) {
        const gpu_chunk &c = get();
        const cu::device &dev = *pool_->dev();
        dev.make_current();
        check_stream(dev, s);
        dev.check(dev.drv().cuStreamWaitEvent(s, c.ready, 0), "cuStreamWaitEvent");
        if (std::find(streams_.begin(), streams_.end(), s) == streams_.end()) streams_.push_back(s);
    }

    void release(const py::object &stream) {
        if (c_ == nullptr) return;
        std::vector<cu::stream> after;
        if (!stream.is_none()) {
            after.push_back(to_stream(stream));
            const cu::device &dev = *pool_->dev();
            dev.make_current();
            check_stream(dev, after.back());
        } else {
            after = streams_;
            if (after.empty() || cai_used_) after.push_back(cu::legacy_stream());
        }
        gpu_chunk *c = c_;
        c_ = nullptr;
        cap_->release(c, after);
    }

    void synchronize() {
        const cu::device &dev = *pool_->dev();
        dev.make_current();
        py::gil_scoped_release nogil;
        dev.check(dev.drv().cuEventSynchronize(get().ready), "cuEventSynchronize");
    }

    view data_view() const {
        return view{get().data, 2,
                    {static_cast<std::int64_t>(packets()), static_cast<std::int64_t>(payload())},
                    false};
    }
    view present_view() const {
        return view{get().present, 1, {static_cast<std::int64_t>(packets()), 0}, true};
    }
    // SPEAD on GPUDirect: the heap bytes (which < 0) or item `which` per heap, uint64.
    view heap_view(int which) const {
        const gpu_chunk &c = get();
        const cu::deviceptr p = which < 0 ? c.heap_bytes_dev
                                          : c.items_dev + static_cast<std::size_t>(which) *
                                                              packets() * 8;
        return view{p, 1, {static_cast<std::int64_t>(packets()), 0}, false, 64};
    }
    void mark_cai() { cai_used_ = true; }
    cu::stream fill_stream() const { return fill_; }
    std::shared_ptr<gpu_capture> owner() const { return cap_; }

private:
    // The chunk's events are recorded on the streams it is ordered after: they must be of
    // the chunk's GPU (a capture into several GPUs hands out chunks on each). The special
    // handles mean the current context's, made the chunk's GPU's before use.
    static void check_stream(const cu::device &dev, cu::stream s) {
        if (s == cu::legacy_stream() || s == cu::per_thread_stream()) return;
        cu::context owner = nullptr;
        dev.check(dev.drv().cuStreamGetCtx(s, &owner), "cuStreamGetCtx");
        if (owner != dev.ctx())
            throw std::invalid_argument(
                "the chunk is on cuda:" + std::to_string(dev.ordinal()) +
                " and the stream given is another GPU's: use a stream of cuda:" +
                std::to_string(dev.ordinal()) + " (e.g. under cupy.cuda.Device(chunk.device))");
    }

    std::shared_ptr<gpu_capture> cap_;
    gpu_chunk *c_;
    gpu_chunk_pool *pool_;
    cu::stream fill_;
    std::vector<cu::stream> streams_;
    bool cai_used_ = false;
};

// The present mask on the GPU, as its own exportable object (keeps the chunk alive).
struct py_gpu_mask {
    py::object chunk;
};

// A per-heap array of a SPEAD chunk on the GPU (heap bytes: which < 0; else item `which`).
struct py_gpu_heaps {
    py::object chunk;
    int which;
};

py::capsule make_dlpack(py::object owner, const view &v, int ordinal, bool versioned) {
    dl_view d{};
    d.data = reinterpret_cast<void *>(static_cast<std::uintptr_t>(v.ptr));
    d.device = dl_device{dl_cuda, ordinal};
    d.ndim = v.ndim;
    d.shape[0] = v.shape[0];
    d.shape[1] = v.shape[1];
    d.strides[0] = v.ndim == 2 ? v.shape[1] : 1;
    d.strides[1] = 1;
    d.is_bool = v.is_bool;
    d.bits = v.bits;
    return dl_capsule(std::move(owner), d, versioned);
}

// __dlpack__(stream=None, max_version=None, dl_device=None, copy=None) for a view of
// `chunk` (the data or the present mask).
py::capsule export_dlpack(py::object self, py_gpu_chunk &c, const view &v,
                          const py::kwargs &kwargs) {
    py::object stream = py::none(), max_version = py::none(), dl_dev = py::none(),
               copy = py::none();
    for (auto item : kwargs) {
        const std::string k = py::str(item.first);
        if (k == "stream") stream = py::reinterpret_borrow<py::object>(item.second);
        else if (k == "max_version") max_version = py::reinterpret_borrow<py::object>(item.second);
        else if (k == "dl_device") dl_dev = py::reinterpret_borrow<py::object>(item.second);
        else if (k == "copy") copy = py::reinterpret_borrow<py::object>(item.second);
        else throw py::type_error("__dlpack__() got an unexpected keyword argument '" + k + "'");
    }
    if (!copy.is_none() && copy.cast<bool>())
        throw py::buffer_error("a GPU chunk is exported without copying; copy=True is not supported");
    if (!dl_dev.is_none()) {
        auto t = dl_dev.cast<std::pair<int, int>>();
        if (t.first != dl_cuda || t.second != c.ordinal())
            throw py::buffer_error("the chunk lives on CUDA device " + std::to_string(c.ordinal()) +
                                   ", not on dl_device " + std::to_string(t.first) + ":" +
                                   std::to_string(t.second));
    }
    // The consumer's stream waits for the copy/kernels that fill the chunk (None =
    // the legacy default stream, -1 = the consumer synchronises by itself).
    if (stream.is_none()) {
        c.order_after(cu::legacy_stream());
    } else if (!(py::isinstance<py::int_>(stream) && stream.cast<std::int64_t>() == -1)) {
        c.order_after(to_stream(stream));
    }
    bool versioned = false;
    if (!max_version.is_none()) versioned = max_version.cast<std::pair<int, int>>().first >= 1;
    return make_dlpack(std::move(self), v, c.ordinal(), versioned);
}

py::dict cuda_array_interface(py_gpu_chunk &c, const view &v) {
    c.mark_cai();
    py::dict d;
    if (v.ndim == 2) {
        d["shape"] = py::make_tuple(v.shape[0], v.shape[1]);
    } else {
        d["shape"] = py::make_tuple(v.shape[0]);
    }
    d["typestr"] = v.is_bool ? "|b1" : v.bits == 64 ? "<u8" : "|u1";
    d["data"] = py::make_tuple(static_cast<std::uintptr_t>(v.ptr), false);
    d["version"] = 3;
    d["strides"] = py::none();
    // Consumers synchronise with this stream before reading (CAI v3).
    d["stream"] = reinterpret_cast<std::uintptr_t>(c.fill_stream());
    return d;
}

class py_gpu_capture {
public:
    py_gpu_capture(std::shared_ptr<gpu_capture> cap, std::shared_ptr<capture> host)
        : cap_(std::move(cap)), host_(std::move(host)) {}

    void start() { cap_->start(); }
    void stop() {
        {
            py::gil_scoped_release nogil;
            cap_->stop();
        }
        cap_->check_error();
    }

    std::unique_ptr<py_gpu_chunk> next_chunk(std::optional<double> timeout) {
        gpu_chunk *c = wait_interruptible(
            timeout,
            [this](std::chrono::steady_clock::duration slice, bool &finished) {
                gpu_chunk_queue::status why;
                gpu_chunk *got = cap_->next(slice, why);
                finished = why == gpu_chunk_queue::status::finished;
                return got;
            },
            [this] { cap_->check_error(); });
        if (c == nullptr) return nullptr;
        return std::make_unique<py_gpu_chunk>(cap_, c);
    }

    py::dict stats() const {
        py::dict d;
        put_counters(d, cap_->stats());
        if (host_) {
            if (auto *e = dynamic_cast<emu_source *>(&host_->src())) d["nic_drops"] = e->nic_drops();
        }
        return d;
    }
    // Per GPU of a host-staged delivery, in the order given: where it is and its counters.
    py::list device_stats() const {
        py::list out;
        if (auto *m = dynamic_cast<gpudirect_multi *>(cap_.get())) {
            for (std::size_t i = 0; i < m->devices(); i++) {
                const cu::device &dev = m->engine(i).device();
                py::dict d;
                d["device"] = dev.ordinal();
                d["pci_bus_id"] = dev.pci_address();
                d["numa_node"] = dev.numa_node();
                put_counters(d, m->device_stats(i));
                out.append(d);
            }
            return out;
        }
        auto *g = dynamic_cast<gpu_delivery *>(cap_.get());
        if (g == nullptr) return out;
        for (std::size_t i = 0; i < g->devices(); i++) {
            const cu::device &dev = g->device(i);
            py::dict d;
            d["device"] = dev.ordinal();
            d["pci_bus_id"] = dev.pci_address();
            d["numa_node"] = dev.numa_node();
            d["cpus"] = g->cpus(i);
            d.attr("update")(lane_stats_dict(g->counters(i)));
            d["staging"] = staging_stats_dict(g->host_pool(), i);
            out.append(d);
        }
        return out;
    }
    bool finished() const { return cap_->finished(); }
    bool running() const { return cap_->running(); }
    std::uintptr_t stream() const { return reinterpret_cast<std::uintptr_t>(cap_->fill_stream()); }
    int device() const { return cap_->pool().dev()->ordinal(); }
    double time_ring_pass(bool control_only) {
        auto *g = dynamic_cast<gpudirect_capture *>(cap_.get());
        if (g == nullptr) throw std::invalid_argument("time_ring_pass needs a GPUDirect capture");
        py::gil_scoped_release nogil;
        return g->time_ring_pass(control_only);
    }

private:
    std::shared_ptr<gpu_capture> cap_;
    std::shared_ptr<capture> host_;
};

std::map<int, std::shared_ptr<const cu::device>> &devices() {
    static std::map<int, std::shared_ptr<const cu::device>> d;
    return d;
}

// One retained primary context per GPU for the process.
std::shared_ptr<const cu::device> get_device(int ordinal) {
    auto &d = devices();
    auto it = d.find(ordinal);
    if (it != d.end()) return it->second;
    auto dev = std::make_shared<const cu::device>(ordinal);
    d[ordinal] = dev;
    return dev;
}

using u8_array = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;
using u64_array = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>;

// The emulated NIC's input: given frames (rows of a 2-D array) or the example stream.
frame_feed make_feed(const std::optional<u8_array> &frames,
                     const std::optional<std::vector<std::size_t>> &sizes, std::size_t repeat,
                     std::uint64_t first, std::uint64_t count,
                     const std::optional<u64_array> &schedule, std::uint16_t udp_port) {
    frame_feed feed;
    if (frames) {
        if (frames->ndim() != 2)
            throw std::invalid_argument("frames must be a 2-D uint8 array, got " +
                                        std::to_string(frames->ndim()) + " dimensions");
        const auto n = static_cast<std::size_t>(frames->shape(0));
        feed.stride = static_cast<std::size_t>(frames->shape(1));
        feed.frames.assign(frames->data(), frames->data() + n * feed.stride);
        feed.sizes = sizes ? *sizes : std::vector<std::size_t>(n, feed.stride);
        if (feed.sizes.size() != n)
            throw std::invalid_argument("sizes has " + std::to_string(feed.sizes.size()) +
                                        " entries for " + std::to_string(n) + " frames");
        feed.repeat = repeat;
    } else {
        feed.generate = true;
        feed.first = first;
        feed.count = count;
        if (schedule) {
            if (schedule->ndim() != 1) throw std::invalid_argument("schedule must be 1-D");
            feed.schedule.assign(schedule->data(), schedule->data() + schedule->size());
        }
        feed.udp_port = udp_port;
    }
    return feed;
}

gpudirect_config make_gpudirect_config(std::size_t ring_packets, std::size_t batch,
                                       std::size_t headroom, unsigned blocks, std::size_t slots) {
    gpudirect_config g;
    g.ring_packets = ring_packets;
    g.batch = batch;
    g.headroom = headroom;
    g.blocks = blocks;
    g.slots = slots;
    return g;
}

}  // namespace

void bind_cuda(py::module_ &m, std::function<py::object(std::shared_ptr<capture>)> wrap,
               std::function<std::shared_ptr<capture>(py::handle)> unwrap) {
    py::register_exception<cu::error>(m, "CudaError", PyExc_RuntimeError);
    bind_lanes(m, unwrap);

    m.def("cuda_device_count", &cu::device_count,
          "Number of CUDA devices; raises CudaError naming why CUDA is unusable here");
    m.def("cuda_has_kernels", [] { return cuda_kernels_image() != nullptr; },
          "True when this build embeds the GPUDirect reorder kernels (nvcc was found)");
    m.def(
        "cuda_device_info",
        [](int ordinal) {
            auto dev = get_device(ordinal);
            py::dict d;
            d["name"] = dev->name();
            d["sm_count"] = dev->sm_count();
            d["ordinal"] = dev->ordinal();
            // The GPU's PCI address, whose sysfs entry names its NUMA node (placement.py).
            d["pci_bus_id"] = dev->pci_address();
            d["numa_node"] = dev->numa_node();
            return d;
        },
        py::arg("ordinal"),
        "name, sm_count, ordinal, pci_bus_id (\"0000:1b:00.0\") and numa_node (-1: unknown) of CUDA "
        "device `ordinal`");

    // Declared before GpuChunk, whose present_gpu returns it (signatures name the type).
    py::class_<py_gpu_mask> gpu_mask(m, "GpuMask", "A GPU chunk's present mask on the GPU");
    py::class_<py_gpu_heaps> gpu_heaps(
        m, "GpuHeapArray", "A SPEAD GPU chunk's heap bytes or item values per heap, on the GPU");

    py::class_<py_gpu_chunk>(m, "GpuChunk",
                             "A chunk in GPU memory; export with DLPack or __cuda_array_interface__")
        .def_property_readonly("chunk_id", [](const py_gpu_chunk &c) { return c.get().chunk_id; })
        .def_property_readonly("first_seq",
                               [](const py_gpu_chunk &c) { return c.get().chunk_id * c.packets(); })
        .def_property_readonly("n_present", [](const py_gpu_chunk &c) { return c.get().n_present; })
        .def_property_readonly("lost",
                               [](const py_gpu_chunk &c) { return c.packets() - c.get().n_present; })
        .def_property_readonly("packets_per_chunk", &py_gpu_chunk::packets)
        .def_property_readonly("payload_size", &py_gpu_chunk::payload)
        .def_property_readonly("released", &py_gpu_chunk::released)
        .def_property_readonly("device", &py_gpu_chunk::ordinal)
        .def_property_readonly(
            "ptr", [](const py_gpu_chunk &c) { return static_cast<std::uintptr_t>(c.get().data); },
            "device address of the chunk data")
        .def_property_readonly(
            "present_ptr",
            [](const py_gpu_chunk &c) { return static_cast<std::uintptr_t>(c.get().present); })
        .def_property_readonly(
            "ready_event",
            [](const py_gpu_chunk &c) { return reinterpret_cast<std::uintptr_t>(c.get().ready); },
            "CUevent handle that completes once the chunk is filled")
        .def_property_readonly(
            "stream",
            [](const py_gpu_chunk &c) { return reinterpret_cast<std::uintptr_t>(c.fill_stream()); },
            "the receiver's stream the chunk is filled on")
        .def_property_readonly(
            "present",
            [](py::object self) {
                auto &c = self.cast<py_gpu_chunk &>();
                return py::array_t<bool>({c.packets()}, {std::size_t{1}},
                                         reinterpret_cast<const bool *>(c.get().present_host),
                                         self);
            },
            "bool per packet slot, in host memory (no copy)")
        .def_property_readonly(
            "heap_bytes",
            [](py::object self) {
                auto &c = self.cast<py_gpu_chunk &>();
                return heap_bytes_array(self, c.get().heap_bytes_host, c.packets());
            },
            "SPEAD: uint64 per heap slot, payload bytes received, in host memory; else None")
        .def_property_readonly(
            "items",
            [](py::object self) {
                auto &c = self.cast<py_gpu_chunk &>();
                const auto &ids = c.item_ids();
                return items_arrays(self, c.get().items_host, ids.data(), ids.size(),
                                    c.packets());
            },
            "SPEAD: {item id: uint64 per heap slot} of the named items, in host memory; else {}")
        .def_property_readonly(
            "present_gpu", [](py::object self) { return py_gpu_mask{self}; },
            "the present mask on the GPU (DLPack / __cuda_array_interface__)")
        .def_property_readonly(
            "heap_bytes_gpu",
            [](py::object self) -> py::object {
                auto &c = self.cast<py_gpu_chunk &>();
                if (c.get().heap_bytes_dev == 0) return py::none();
                return py::cast(py_gpu_heaps{self, -1});
            },
            "SPEAD with gpudirect: heap_bytes on the GPU (uint64 per heap slot; DLPack / "
            "__cuda_array_interface__); else None")
        .def_property_readonly(
            "items_gpu",
            [](py::object self) {
                auto &c = self.cast<py_gpu_chunk &>();
                py::dict d;
                if (c.get().items_dev == 0) return d;
                const auto &ids = c.item_ids();
                for (std::size_t k = 0; k < ids.size(); k++)
                    d[py::int_(ids[k])] = py::cast(py_gpu_heaps{self, static_cast<int>(k)});
                return d;
            },
            "SPEAD with gpudirect: {item id: uint64 per heap slot} on the GPU; else {}")
        .def(
            "__dlpack__",
            [](py::object self, const py::kwargs &kwargs) {
                auto &c = self.cast<py_gpu_chunk &>();
                const view v = c.data_view();
                return export_dlpack(self, c, v, kwargs);
            },
            "DLPack export of the (packets_per_chunk, payload_size) uint8 chunk; the consumer's "
            "stream is made to wait for the chunk's fill")
        .def("__dlpack_device__",
             [](const py_gpu_chunk &c) { return py::make_tuple(dl_cuda, c.ordinal()); })
        .def_property_readonly("__cuda_array_interface__",
                               [](py_gpu_chunk &c) {
                                   return cuda_array_interface(c, c.data_view());
                               })
        .def(
            "wait",
            [](py_gpu_chunk &c, const py::object &stream) { c.order_after(to_stream(stream)); },
            py::arg("stream"), "Make `stream` (handle or CuPy/PyTorch stream) wait for the fill")
        .def("synchronize", &py_gpu_chunk::synchronize, "Block until the chunk is filled")
        .def("release", &py_gpu_chunk::release, py::arg("stream") = py::none(),
             "Return the chunk to the GPU ring once the work queued on `stream` (default: the "
             "streams it was exported to, else the legacy default stream) has finished")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](py_gpu_chunk &c, const py::args &) {
            c.release(py::none());
            return false;
        });

    gpu_mask
        .def(
            "__dlpack__",
            [](py::object self, const py::kwargs &kwargs) {
                auto &mk = self.cast<py_gpu_mask &>();
                auto &c = mk.chunk.cast<py_gpu_chunk &>();
                return export_dlpack(self, c, c.present_view(), kwargs);
            })
        .def("__dlpack_device__",
             [](const py_gpu_mask &mk) {
                 return py::make_tuple(dl_cuda, mk.chunk.cast<py_gpu_chunk &>().ordinal());
             })
        .def_property_readonly("__cuda_array_interface__", [](py_gpu_mask &mk) {
            auto &c = mk.chunk.cast<py_gpu_chunk &>();
            return cuda_array_interface(c, c.present_view());
        });

    gpu_heaps
        .def(
            "__dlpack__",
            [](py::object self, const py::kwargs &kwargs) {
                auto &a = self.cast<py_gpu_heaps &>();
                auto &c = a.chunk.cast<py_gpu_chunk &>();
                return export_dlpack(self, c, c.heap_view(a.which), kwargs);
            })
        .def("__dlpack_device__",
             [](const py_gpu_heaps &a) {
                 return py::make_tuple(dl_cuda, a.chunk.cast<py_gpu_chunk &>().ordinal());
             })
        .def_property_readonly("__cuda_array_interface__", [](py_gpu_heaps &a) {
            auto &c = a.chunk.cast<py_gpu_chunk &>();
            return cuda_array_interface(c, c.heap_view(a.which));
        });

    py::class_<py_gpu_capture>(m, "GpuCapture")
        .def("start", &py_gpu_capture::start)
        .def("stop", &py_gpu_capture::stop)
        .def("next_chunk", &py_gpu_capture::next_chunk, py::arg("timeout") = py::none())
        .def_property_readonly("stats", &py_gpu_capture::stats)
        .def_property_readonly("device_stats", &py_gpu_capture::device_stats,
                               "per GPU of a host-staged delivery: device, pci_bus_id, numa_node and "
                               "its counters")
        .def_property_readonly("finished", &py_gpu_capture::finished)
        .def_property_readonly("running", &py_gpu_capture::running)
        .def_property_readonly("stream", &py_gpu_capture::stream)
        .def_property_readonly("device", &py_gpu_capture::device)
        .def("time_ring_pass", &py_gpu_capture::time_ring_pass, py::arg("control_only") = false,
             "Benchmark: seconds the reorder kernels take over the filled arrival ring");

    m.def(
        "gpu_delivery",
        [unwrap](py::handle host, const std::vector<int> &devices, std::size_t gpu_chunks,
                 std::optional<std::vector<std::uint32_t>> mapping,
                 std::optional<std::vector<std::vector<int>>> cpus) {
            std::shared_ptr<capture> cap = unwrap(host);
            std::vector<std::shared_ptr<const cu::device>> devs;
            for (int d : devices) devs.push_back(get_device(d));
            chunk_router router = mapping ? chunk_router(devices.size(), std::move(*mapping))
                                          : chunk_router(devices.size());
            auto g = std::make_shared<gpu_delivery>(cap, std::move(devs), gpu_chunks,
                                                    std::move(router));
            if (cpus) set_lane_cpus(*g, devices.size(), std::move(*cpus));
            return std::make_unique<py_gpu_capture>(g, cap);
        },
        py::arg("host"), py::arg("devices"), py::arg("gpu_chunks") = 0,
        py::arg("mapping") = py::none(), py::arg("cpus") = py::none(),
        "Deliver a (not yet started) host capture's chunks into the GPUs `devices` (CUDA "
        "ordinals), chunk k to devices[k % len(devices)] or to devices[mapping[k % "
        "len(mapping)]]; gpu_chunks per GPU ring (0: as many as the host pool); cpus: per "
        "GPU, the CPUs its copy and recycle threads run on ([]: where start() runs)");

    m.def(
        "gpudirect",
        [](const format &fmt, const engine_config &cfg, int device,
           std::optional<u8_array> frames, std::optional<std::vector<std::size_t>> sizes,
           std::size_t repeat, std::uint64_t first, std::uint64_t count,
           std::optional<u64_array> schedule, std::uint16_t udp_port, std::size_t ring_packets,
           std::size_t batch, std::size_t headroom, unsigned blocks, std::size_t slots) {
            frame_feed feed = make_feed(frames, sizes, repeat, first, count, schedule, udp_port);
            const gpudirect_config g =
                make_gpudirect_config(ring_packets, batch, headroom, blocks, slots);
            auto cap = std::make_shared<gpudirect_capture>(fmt, cfg, get_device(device), g,
                                                           std::move(feed));
            return std::make_unique<py_gpu_capture>(cap, nullptr);
        },
        py::arg("fmt"), py::arg("config"), py::arg("device"), py::arg("frames") = py::none(),
        py::arg("sizes") = py::none(), py::arg("repeat") = 1, py::arg("first") = 0,
        py::arg("count") = 0, py::arg("schedule") = py::none(), py::arg("udp_port") = 7148,
        // The defaults' one home is gpudirect_config (cuda_gpudirect.h).
        py::arg("ring_packets") = gpudirect_config{}.ring_packets,
        py::arg("batch") = gpudirect_config{}.batch,
        py::arg("headroom") = gpudirect_config{}.headroom,
        py::arg("blocks") = gpudirect_config{}.blocks, py::arg("slots") = gpudirect_config{}.slots,
        "GPUDirect capture fed by the NIC emulation (frames written into a GPU arrival ring)");
    m.def(
        "gpudirect_multi",
        [](const format &fmt, const engine_config &cfg, const std::vector<int> &devices,
           bool steered, std::optional<u8_array> frames,
           std::optional<std::vector<std::size_t>> sizes, std::size_t repeat,
           std::uint64_t first, std::uint64_t count, std::optional<u64_array> schedule,
           std::uint16_t udp_port, std::size_t ring_packets, std::size_t batch,
           std::size_t headroom, unsigned blocks, std::size_t slots) {
            const frame_feed feed =
                make_feed(frames, sizes, repeat, first, count, schedule, udp_port);
            std::vector<std::shared_ptr<const cu::device>> devs;
            std::vector<frame_feed> feeds;
            const auto gpus = static_cast<std::uint32_t>(devices.size());
            for (std::uint32_t g = 0; g < gpus; g++) {
                devs.push_back(get_device(devices[g]));
                feeds.push_back(steered ? steer_feed(feed, fmt, cfg.packets_per_chunk, {gpus, g})
                                        : feed);
            }
            auto cap = std::make_shared<gpudirect_multi>(
                fmt, cfg, devs, make_gpudirect_config(ring_packets, batch, headroom, blocks, slots),
                std::move(feeds));
            return std::make_unique<py_gpu_capture>(cap, nullptr);
        },
        py::arg("fmt"), py::arg("config"), py::arg("devices"), py::arg("steered") = true,
        py::arg("frames") = py::none(), py::arg("sizes") = py::none(), py::arg("repeat") = 1,
        py::arg("first") = 0, py::arg("count") = 0, py::arg("schedule") = py::none(),
        py::arg("udp_port") = 7148, py::arg("ring_packets") = gpudirect_config{}.ring_packets,
        py::arg("batch") = gpudirect_config{}.batch,
        py::arg("headroom") = gpudirect_config{}.headroom,
        py::arg("blocks") = gpudirect_config{}.blocks, py::arg("slots") = gpudirect_config{}.slots,
        "GPUDirect into the GPUs `devices` (CUDA ordinals), chunk k on devices[k % len]: an "
        "engine per GPU with its own arrival ring, fed its chunks' frames (steered) or every "
        "frame (each GPU counts the others' as other_gpu)");
    m.def(
        "gpudirect_spead_parse",
        [](const format &fmt, std::size_t packets_per_chunk, const py::bytes &frame) {
            if (!fmt.spead) throw std::invalid_argument("gpudirect_spead_parse needs a SPEAD format");
            const gd::spead_desc d = gd_spead_desc(fmt, packets_per_chunk);
            const std::string f = frame;
            if (f.size() > 0xffffffffu) throw std::invalid_argument("frame longer than 4 GiB");
            gd::spead_fields sf{};
            std::uint64_t chunk = 0;
            std::uint32_t slot = 0, data_off = 0;
            // Of the frame's own bytes only: an empty frame has no buffer to point at.
            std::vector<std::uint8_t> buf(f.begin(), f.end());
            const std::uint32_t why = gd::parse_spead_frame(
                buf.empty() ? nullptr : buf.data(), static_cast<std::uint32_t>(buf.size()),
                fmt.udp_port, d, sf, chunk, slot, data_off);
            py::dict out;
            out["reason"] = why == gd::sr_none
                                ? std::string("none")
                                : std::string(spead_reject_name(static_cast<spead_reject>(why)));
            if (why != gd::sr_none) return out;
            out["chunk"] = chunk;
            out["slot"] = slot;
            out["heap_slot"] = slot / d.parts;
            out["part"] = sf.part;
            out["data_offset"] = data_off;
            out["offset"] = sf.offset;
            out["length"] = sf.length;
            out["index"] = sf.index;
            py::dict items;
            for (std::uint32_t k = 0; k < d.n_items; k++) items[py::int_(d.items[k])] = sf.items[k];
            out["items"] = items;
            return out;
        },
        py::arg("fmt"), py::arg("packets_per_chunk"), py::arg("frame"),
        "The GPUDirect parse kernel's reading of one Ethernet frame of a SPEAD format, run on "
        "the host (gd_spead.h): reason ('none' or the CPU engine's rejected_by key) and, when "
        "accepted, chunk, packet slot, heap_slot, part, data_offset (of the heap bytes in the "
        "frame), offset, length, index and the named items");
    m.def(
        "gpudirect_route",
        [](std::uint64_t chunk_id, std::uint32_t gpus, std::uint32_t gpu) -> py::object {
            std::uint64_t local = 0;
            if (!gd::route_chunk(chunk_id, gpus, gpu, local)) return py::none();
            return py::int_(local);
        },
        py::arg("chunk_id"), py::arg("gpus"), py::arg("gpu"),
        "The parse kernel's routing, run on the host: chunk_id's local id on GPU `gpu` of "
        "`gpus`, or None when it is another GPU's");
    m.def(
        "gpudirect_steered",
        [](const format &fmt, std::uint64_t ppc, std::uint32_t gpus, std::uint32_t gpu,
           std::optional<u8_array> frames, std::optional<std::vector<std::size_t>> sizes,
           std::uint64_t first, std::uint64_t count, std::optional<u64_array> schedule) {
            const frame_feed f = steer_feed(
                make_feed(frames, sizes, 1, first, count, schedule, fmt.udp_port), fmt, ppc,
                {gpus, gpu});
            py::dict d;
            if (f.generate) {
                std::vector<std::uint64_t> seqs(f.total());
                for (std::uint64_t i = 0; i < seqs.size(); i++) seqs[i] = f.seq_at(i);
                d["seqs"] = py::array_t<std::uint64_t>(seqs.size(), seqs.data());
            } else {
                d["frames"] = py::array_t<std::uint8_t>(
                    {f.sizes.size(), f.stride}, f.frames.data());
                d["sizes"] = f.sizes;
            }
            return d;
        },
        py::arg("fmt"), py::arg("packets_per_chunk"), py::arg("gpus"), py::arg("gpu"),
        py::arg("frames") = py::none(), py::arg("sizes") = py::none(), py::arg("first") = 0,
        py::arg("count") = 0, py::arg("schedule") = py::none(),
        "What the emulation's feeder gives GPU `gpu` of `gpus`: {'seqs'} of the example "
        "stream, or {'frames', 'sizes'} of given frames");
    m.def(
        "gpudirect_unreached",
        [](const std::vector<std::optional<std::pair<std::uint64_t, std::uint64_t>>> &spans,
           std::optional<std::uint64_t> first_chunk) {
            std::vector<gpu_span> s;
            for (const auto &x : spans)
                s.push_back(x ? gpu_span{true, x->first, x->second} : gpu_span{});
            return unreached_chunks(s, first_chunk);
        },
        py::arg("spans"), py::arg("first_chunk") = py::none(),
        "Per GPU, the chunks of the capture's extent its window never reached; spans: per GPU "
        "(first, last) local chunk id its window walked, or None");
    m.def(
        "gpudirect_defaults",
        [] {
            const gpudirect_config g{};
            py::dict d;
            d["blocks"] = g.blocks;
            d["batch"] = g.batch;
            d["ring_packets"] = g.ring_packets;
            d["headroom"] = g.headroom;
            d["slots"] = g.slots;
            return d;
        },
        "The GPUDirect options' defaults (gpudirect_config), without loading CUDA");

    m.def(
        "emu_capture",
        [wrap](const format &fmt, const engine_config &cfg, std::uint64_t first,
               std::uint64_t count, double rate_gbps, std::size_t ring_slots, bool fill,
               std::vector<int> cpus, std::size_t queues) {
            if (fmt.spead)
                throw std::invalid_argument(
                    "the NIC emulation sends the example stream, not SPEAD: replay SPEAD "
                    "packets (packets=) or capture them from udp, pcap or ibv");
            emu_config e;
            e.queues = queues;
            e.payload_size = fmt.payload_size;
            e.first = first;
            e.count = count;
            e.rate_gbps = rate_gbps;
            e.ring_slots = ring_slots;
            e.fill = fill;
            e.cpus = std::move(cpus);
            auto cap = std::make_shared<capture>(fmt, cfg, std::make_unique<emu_source>(e));
            return wrap(cap);
        },
        py::arg("fmt"), py::arg("config"), py::arg("first") = 0, py::arg("count") = 0,
        py::arg("rate_gbps") = 0.0, py::arg("ring_slots") = 16384, py::arg("fill") = false,
        py::arg("cpus") = std::vector<int>{}, py::arg("queues") = 1,
        "mem-backend NIC emulation: a paced generator thread writing one receive ring per "
        "queue (round-robin), a receive thread per queue feeding the engine; packets that find "
        "their ring full count as nic_drops");
    m.def(
        "emu_nic_drops",
        [unwrap](py::handle host) -> std::optional<std::uint64_t> {
            std::shared_ptr<capture> cap = unwrap(host);
            if (auto *e = dynamic_cast<emu_source *>(&cap->src())) return e->nic_drops();
            return std::nullopt;
        },
        py::arg("host"));
    m.def("example_frame", [](std::uint64_t seq, std::size_t payload_size, std::uint16_t port) {
        std::string out(payload_size + 42, '\0');
        build_example_frame(reinterpret_cast<std::uint8_t *>(out.data()), payload_size, seq, port);
        return py::bytes(out);
    }, py::arg("seq"), py::arg("payload_size") = 8192, py::arg("udp_port") = 7148,
    "The Ethernet/IPv4/UDP frame of example-stream packet `seq` that the GPUDirect emulation writes");
}

}  // namespace casper400g_rx
