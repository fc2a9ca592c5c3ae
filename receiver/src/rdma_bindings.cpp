// Python bindings of the rdma source (rdma_source.h): RdmaCapture and its chunks. A chunk
// has the Chunk interface (data, present, chunk_id, first_seq, n_present, lost, release,
// DLPack); on a GPU ring it has GpuChunk's (ptr, device, __cuda_array_interface__, DLPack
// on CUDA, release(stream)). The data is a strided view of the ring: one row per slot,
// past the slot's 8-byte header, so a chunk equals the UDP path's chunk of the same stream.
#include "casper400g_rx/rdma_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/py_dlpack.h"
#include "casper400g_rx/py_wait.h"
#include "casper400g_rx/rdma_source.h"

namespace py = pybind11;

namespace casper400g_rx {

namespace {

class py_rdma_capture;

// A ring place lent to Python; holding the capture keeps the ring memory alive.
class py_rdma_chunk {
public:
    py_rdma_chunk(std::shared_ptr<rdma_capture> cap, rdma_ring::slot_chunk *c)
        : cap_(std::move(cap)), c_(c) {}
    py_rdma_chunk(const py_rdma_chunk &) = delete;
    py_rdma_chunk &operator=(const py_rdma_chunk &) = delete;
    ~py_rdma_chunk() {
        try {
            release(0);
        } catch (...) {
            // Garbage collection must not raise; the place then stays with the consumer.
        }
    }
    void release(std::uintptr_t stream) {
        if (c_ == nullptr) return;
        // No kernel may still read the place when the core is told it can write it again.
        if (cap_->on_gpu()) cap_->gpu_synchronize(stream);
        cap_->ring().release(std::exchange(c_, nullptr));
    }
    bool released() const noexcept { return c_ == nullptr; }
    const rdma_ring::slot_chunk &get() const {
        if (c_ == nullptr) throw std::runtime_error("chunk already released");
        return *c_;
    }
    std::size_t packets() const noexcept { return cap_->ring().geometry().slots; }
    std::size_t payload() const noexcept { return cap_->ring().geometry().payload_size; }
    std::size_t slot_size() const noexcept { return cap_->ring().geometry().slot_size; }
    // Address of the first slot's datagram (host pointer or device address).
    std::uint64_t data_address() const { return cap_->place_address(get().place) + rdma_slot_header; }
    const std::uint8_t *present_host() const { return cap_->ring().present(get().place); }
    rdma_capture &cap() const noexcept { return *cap_; }

private:
    std::shared_ptr<rdma_capture> cap_;
    rdma_ring::slot_chunk *c_;
};

// A "dltensor" capsule (DLPack 0.8: the one every consumer takes) of a `rows` x `cols`
// byte array, rows `row_stride` apart.
py::capsule dlpack(py::object owner, std::uint64_t ptr, std::int64_t rows, std::int64_t cols,
                   std::int64_t row_stride, bool is_bool, dl_device dev) {
    dl_view v{};
    v.data = reinterpret_cast<void *>(ptr);
    v.device = dev;
    v.ndim = cols > 0 ? 2 : 1;
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.strides[0] = v.ndim == 2 ? row_stride : 1;
    v.strides[1] = 1;
    v.is_bool = is_bool;
    return dl_capsule(std::move(owner), v, false);
}

std::uintptr_t stream_handle(const py::object &stream) {
    if (stream.is_none()) return 0;
    if (py::isinstance<py::int_>(stream)) {
        const auto v = stream.cast<std::int64_t>();
        return v < 0 ? 0 : static_cast<std::uintptr_t>(v);
    }
    // CuPy (.ptr) and PyTorch (.cuda_stream) stream objects.
    if (py::hasattr(stream, "cuda_stream")) return stream.attr("cuda_stream").cast<std::uintptr_t>();
    if (py::hasattr(stream, "ptr")) return stream.attr("ptr").cast<std::uintptr_t>();
    throw py::type_error("stream must be a CUstream handle, a CuPy or a PyTorch stream");
}

class py_rdma_capture {
public:
    explicit py_rdma_capture(std::shared_ptr<rdma_capture> cap) : cap_(std::move(cap)) {}
    void start() { cap_->start(); }
    void stop() {
        py::gil_scoped_release nogil;
        cap_->stop();
    }
    py::object next_chunk(std::optional<double> timeout) {
        rdma_ring::slot_chunk *c = wait_interruptible(
            timeout,
            [this](std::chrono::steady_clock::duration slice, bool &finished) {
                return cap_->ring().pop_for(slice, finished);
            },
            [] {});
        if (c == nullptr) return py::none();
        return py::cast(std::make_unique<py_rdma_chunk>(cap_, c));
    }
    py::dict stats() const {
        const rdma_counters c = cap_->ring().stats();
        const rdma_geometry &g = cap_->ring().geometry();
        py::dict d;
        // The keys every source has, then the rdma source's own.
        d["received"] = c.immediates;
        d["packets"] = c.packets;
        d["bytes"] = c.bytes;
        d["lost"] = c.lost;
        d["late"] = c.late_immediates;
        d["duplicate"] = 0;
        d["rejected"] = 0;
        d["chunks"] = c.chunks;
        d["chunks_dropped"] = 0;
        d["packets_dropped"] = 0;
        d["discarded"] = 0;
        d["waits"] = 0;
        d["queue_stalls"] = 0;
        d["queues"] = 1;
        d["n_chunks"] = g.chunks;
        d["immediates"] = c.immediates;
        d["core_dropped_chunks"] = c.core_dropped_chunks;
        d["lost_chunks"] = c.lost_chunks;
        d["missing_immediates"] = c.missing_immediates;
        d["late_immediates"] = c.late_immediates;
        d["out_of_window"] = c.out_of_window_immediates;
        d["out_of_window_immediates"] = c.out_of_window_immediates;
        d["resyncs"] = c.resyncs;
        d["overruns"] = c.overruns;
        d["errors"] = c.errors;
        d["credits_sent"] = c.credits_sent;
        d["credit"] = c.credit;
        return d;
    }
    py::dict params() const {
        const rdma_params &p = cap_->params();
        const rdma_geometry &g = cap_->ring().geometry();
        py::dict d;
        d["qpn"] = p.qpn;
        d["psn"] = p.psn;
        d["rkey"] = p.rkey;
        d["va"] = p.va;
        d["gid"] = p.gid;
        d["gid_index"] = p.gid_index;
        d["ip"] = p.ip;
        d["mac"] = p.mac;
        d["netdev"] = p.netdev;
        d["device"] = p.device;
        d["mtu"] = p.mtu;
        d["slot_size"] = g.slot_size;
        d["slots_per_chunk"] = g.slots;
        d["chunks"] = g.chunks;
        d["payload_size"] = g.payload_size;
        d["credit_port"] = cap_->options().credit_port;
        d["memory"] = p.memory;
        d["registration"] = p.registration;
        return d;
    }
    const std::shared_ptr<rdma_capture> &shared() const noexcept { return cap_; }

private:
    std::shared_ptr<rdma_capture> cap_;
};

}  // namespace

void register_rdma(py::module_ &m) {
    py::class_<py_rdma_chunk>(m, "RdmaChunk", py::buffer_protocol(),
                              "A chunk of the RDMA ring: slots [chunk_id * packets_per_chunk, ...), "
                              "the Chunk interface; on a GPU ring also GpuChunk's")
        .def_buffer([](py_rdma_chunk &c) {
            if (c.cap().on_gpu()) throw py::buffer_error("the chunk is in GPU memory: use DLPack");
            return py::buffer_info(reinterpret_cast<std::uint8_t *>(c.data_address()), 1,
                                   py::format_descriptor<std::uint8_t>::format(), 2,
                                   {c.packets(), c.payload()}, {c.slot_size(), std::size_t{1}});
        })
        .def_property_readonly("chunk_id", [](const py_rdma_chunk &c) { return c.get().chunk_id; })
        .def_property_readonly("first_seq",
                               [](const py_rdma_chunk &c) { return c.get().chunk_id * c.packets(); })
        .def_property_readonly("n_present", [](const py_rdma_chunk &c) { return c.get().n_present; })
        .def_property_readonly("lost",
                               [](const py_rdma_chunk &c) { return c.packets() - c.get().n_present; })
        .def_property_readonly("packets_per_chunk", &py_rdma_chunk::packets)
        .def_property_readonly("payload_size", &py_rdma_chunk::payload)
        .def_property_readonly("slot_size", &py_rdma_chunk::slot_size)
        .def_property_readonly("released", &py_rdma_chunk::released)
        // The SPEAD per-slot metadata of Chunk: the RDMA mode carries plain datagrams.
        .def_property_readonly(
            "heap_bytes", [](const py_rdma_chunk &) { return py::none(); },
            "None (SPEAD metadata; the RDMA mode carries plain datagrams)")
        .def_property_readonly(
            "items", [](const py_rdma_chunk &) { return py::dict(); },
            "{} (SPEAD metadata; the RDMA mode carries plain datagrams)")
        .def_property_readonly("device",
                               [](const py_rdma_chunk &c) -> std::optional<int> {
                                   if (!c.cap().on_gpu()) return std::nullopt;
                                   return c.cap().gpu();
                               })
        .def_property_readonly("ptr", &py_rdma_chunk::data_address,
                               "address of the first slot's datagram (device address on a GPU ring)")
        .def_property_readonly(
            "data",
            [](py::object self) {
                auto &c = self.cast<py_rdma_chunk &>();
                if (c.cap().on_gpu())
                    throw py::buffer_error("the chunk is in GPU memory: use DLPack or "
                                           "__cuda_array_interface__");
                return py::array_t<std::uint8_t>(
                    {c.packets(), c.payload()}, {c.slot_size(), std::size_t{1}},
                    reinterpret_cast<std::uint8_t *>(c.data_address()), self);
            },
            "(packets_per_chunk, payload_size) uint8 view of the ring (no copy; rows are slot_size "
            "apart, past each slot's 8-byte header)")
        .def_property_readonly(
            "present",
            [](py::object self) {
                auto &c = self.cast<py_rdma_chunk &>();
                return py::array_t<bool>({c.packets()}, {std::size_t{1}},
                                         reinterpret_cast<const bool *>(c.present_host()), self);
            },
            "bool per slot: True where the slot's header holds its sequence number (no copy)")
        .def(
            "__dlpack__",
            [](py::object self, const py::kwargs &kwargs) -> py::object {
                auto &c = self.cast<py_rdma_chunk &>();
                if (!c.cap().on_gpu()) return self.attr("data").attr("__dlpack__")(**kwargs);
                if (kwargs.contains("copy") && !kwargs["copy"].is_none() && kwargs["copy"].cast<bool>())
                    throw py::buffer_error("the ring is exported without copying");
                // The ring is written by the NIC and checked before the chunk is handed out:
                // nothing for the consumer's stream to wait for.
                return dlpack(self, c.data_address(), static_cast<std::int64_t>(c.packets()),
                              static_cast<std::int64_t>(c.payload()),
                              static_cast<std::int64_t>(c.slot_size()), false,
                              dl_device{dl_cuda, c.cap().gpu()});
            },
            "DLPack export of `data` (host or CUDA memory), e.g. for torch.from_dlpack")
        .def("__dlpack_device__",
             [](const py_rdma_chunk &c) -> py::tuple {
                 if (c.cap().on_gpu()) return py::make_tuple(int{dl_cuda}, c.cap().gpu());
                 return py::make_tuple(1, 0);  // kDLCPU
             })
        .def_property_readonly(
            "__cuda_array_interface__",
            [](const py_rdma_chunk &c) {
                if (!c.cap().on_gpu())
                    throw py::attribute_error("host chunk: no __cuda_array_interface__");
                py::dict d;
                d["shape"] = py::make_tuple(c.packets(), c.payload());
                d["typestr"] = "|u1";
                d["data"] = py::make_tuple(static_cast<std::uintptr_t>(c.data_address()), false);
                d["strides"] = py::make_tuple(c.slot_size(), 1);
                d["version"] = 3;
                d["stream"] = py::none();
                return d;
            })
        .def_property_readonly("present_ptr",
                               [](const py_rdma_chunk &c) -> std::optional<std::uint64_t> {
                                   if (!c.cap().on_gpu()) return std::nullopt;
                                   return c.cap().present_gpu(c.get().place);
                               },
                               "device address of the present flags (GPU ring)")
        .def(
            "release",
            [](py_rdma_chunk &c, const py::object &stream) {
                const std::uintptr_t s = stream_handle(stream);
                py::gil_scoped_release nogil;
                c.release(s);
            },
            py::arg("stream") = py::none(),
            "Give the place back to the core (a credit). On a GPU ring, once `stream` (default: "
            "every stream) has finished the work queued on the chunk")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](py_rdma_chunk &c, const py::args &) {
            c.release(0);
            return false;
        });

    py::class_<py_rdma_capture>(m, "RdmaCapture",
                                "The rdma source: the core writes chunks into this ring with RDMA "
                                "WRITE; one immediate per chunk")
        .def(py::init([](std::size_t slot_size, std::size_t slots, std::size_t chunks,
                         std::size_t payload_size, const std::string &device,
                         const std::string &ip, const std::string &peer_ip,
                         std::uint16_t credit_port, std::uint32_t psn, int mtu, int gpu,
                         std::size_t recv_depth, bool emulate) {
                 rdma_geometry g{slot_size, slots, chunks, payload_size};
                 rdma_options o;
                 o.device = device;
                 o.ip = ip;
                 o.peer_ip = peer_ip;
                 o.credit_port = credit_port;
                 o.psn = psn;
                 o.mtu = mtu;
                 o.gpu = gpu;
                 o.recv_depth = recv_depth;
                 o.emulate = emulate;
                 py::gil_scoped_release nogil;
                 return std::make_unique<py_rdma_capture>(std::make_shared<rdma_capture>(g, o));
             }),
             py::arg("slot_size"), py::arg("slots"), py::arg("chunks"), py::arg("payload_size"),
             py::arg("device") = "", py::arg("ip") = "", py::arg("peer_ip") = "",
             py::arg("credit_port") = 0, py::arg("psn") = 0, py::arg("mtu") = 4096,
             py::arg("gpu") = -1, py::arg("recv_depth") = 0, py::arg("emulate") = false)
        .def("start", &py_rdma_capture::start)
        .def("stop", &py_rdma_capture::stop)
        .def("next_chunk", &py_rdma_capture::next_chunk, py::arg("timeout") = py::none())
        .def_property_readonly("stats", &py_rdma_capture::stats)
        .def_property_readonly("params", &py_rdma_capture::params)
        .def_property_readonly("warnings",
                               [](const py_rdma_capture &c) { return c.shared()->warnings(); })
        .def_property_readonly("running",
                               [](const py_rdma_capture &c) { return c.shared()->running(); })
        .def_property_readonly("finished",
                               [](const py_rdma_capture &c) {
                                   return !c.shared()->running() &&
                                          c.shared()->ring().ready_count() == 0;
                               })
        .def_property_readonly("port", [](const py_rdma_capture &) { return py::none(); })
        .def_property_readonly("rcvbuf", [](const py_rdma_capture &) { return py::none(); })
        .def_property_readonly("config",
                               [](const py_rdma_capture &c) {
                                   const rdma_geometry &g = c.shared()->ring().geometry();
                                   engine_config cfg;
                                   cfg.packets_per_chunk = g.slots;
                                   cfg.max_chunks = g.chunks;
                                   cfg.n_chunks = g.chunks;
                                   return cfg;
                               })
        .def(
            "emulate_write",
            [](py_rdma_capture &c, std::size_t offset, const py::bytes &data) {
                const std::string s = data;
                c.shared()->emulate_write(offset, reinterpret_cast<const std::uint8_t *>(s.data()),
                                          s.size());
            },
            py::arg("offset"), py::arg("data"),
            "emulate=True: bytes an RDMA WRITE puts at `offset` from the ring's start")
        .def(
            "emulate_immediate",
            [](py_rdma_capture &c, std::uint32_t imm) { c.shared()->emulate_immediate(imm); },
            py::arg("imm"), "emulate=True: a WRITE with immediate completed");
}

}  // namespace casper400g_rx
