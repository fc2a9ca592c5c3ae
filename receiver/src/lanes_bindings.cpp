#include "casper400g_rx/lanes_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "casper400g_rx/host_lanes.h"
#include "casper400g_rx/py_wait.h"
#include "casper400g_rx/spead_bindings.h"

namespace py = pybind11;

namespace casper400g_rx {

namespace {

// A host capture delivered by the staged lanes into host-memory rings.
class host_lanes {
public:
    host_lanes(std::shared_ptr<capture> cap, std::size_t lanes, std::size_t ring_chunks,
               std::optional<std::vector<std::uint32_t>> mapping)
        : core_(cap, mapping ? chunk_router(lanes, std::move(*mapping)) : chunk_router(lanes),
                make_devices(*cap, lanes, ring_chunks)) {}

    staged_delivery &core() noexcept { return core_; }
    void set_cpus(std::size_t lane, std::vector<int> cpus) {
        core_.lanes().set_cpus(lane, std::move(cpus));
    }
    host_lane_device &device(std::size_t lane) {
        return static_cast<host_lane_device &>(core_.lanes().device(lane));
    }

private:
    static std::vector<std::unique_ptr<lane_device>> make_devices(capture &cap, std::size_t lanes,
                                                                  std::size_t ring_chunks) {
        chunk_pool &host = cap.eng().pool();
        std::vector<std::uint64_t> ids;
        if (const auto &s = cap.eng().fmt().spead)
            ids.assign(s->items.begin(), s->items.begin() + s->n_items);
        std::vector<std::unique_ptr<lane_device>> out;
        for (std::size_t i = 0; i < lanes; i++)
            out.push_back(std::make_unique<host_lane_device>(
                ring_chunks ? ring_chunks : host.size(), host, ids));
        return out;
    }

    staged_delivery core_;
};

class py_lane_chunk {
public:
    py_lane_chunk(std::shared_ptr<host_lanes> owner, gpu_chunk *c)
        : owner_(std::move(owner)), c_(c), dev_(&owner_->device(c->lane)) {}
    py_lane_chunk(const py_lane_chunk &) = delete;
    py_lane_chunk &operator=(const py_lane_chunk &) = delete;
    ~py_lane_chunk() { release(); }

    const gpu_chunk &get() const {
        if (c_ == nullptr) throw std::runtime_error("chunk already released");
        return *c_;
    }
    void release() {
        if (c_ != nullptr) owner_->core().lanes().release(std::exchange(c_, nullptr));
    }
    bool released() const { return c_ == nullptr; }
    const host_lane_device &dev() const { return *dev_; }

private:
    std::shared_ptr<host_lanes> owner_;
    gpu_chunk *c_;
    host_lane_device *dev_;
};

}  // namespace

py::dict lane_stats_dict(const lane_counters &c) {
    py::dict d;
    d["routed"] = c.routed;
    d["chunks"] = c.chunks;
    d["packets"] = c.packets;
    d["chunks_dropped"] = c.chunks_dropped;
    d["packets_dropped"] = c.packets_dropped;
    d["waits"] = c.waits;
    d["chunks_in_use"] = c.in_use;
    d["n_chunks"] = c.n_chunks;
    d["h2d_bytes"] = c.bytes_copied;
    return d;
}

py::dict staging_stats_dict(const chunk_pool &pool, std::size_t lane) {
    const bool split = pool.parts() > 1;
    const std::size_t p = split ? lane : 0;
    const staging_binding &b = pool.binding(p);
    py::dict d;
    d["split"] = split;
    d["chunks"] = pool.part_size(p);
    d["node"] = b.node >= 0 ? py::object(py::int_(b.node)) : py::object(py::none());
    d["bound"] = b.bound;
    d["why_not"] = split ? b.why_not : std::string("one pool for every device");
    d["pages"] = b.pages;
    d["pages_on_node"] = b.pages_on_node;
    d["begin"] = reinterpret_cast<std::uintptr_t>(pool.part_begin(p));
    d["end"] = reinterpret_cast<std::uintptr_t>(pool.part_end(p));
    return d;
}

void bind_lanes(py::module_ &m, std::function<std::shared_ptr<capture>(py::handle)> unwrap) {
    py::class_<py_lane_chunk>(m, "HostLaneChunk",
                              "A chunk in a host-memory ring standing in for a device's")
        .def_property_readonly("chunk_id", [](const py_lane_chunk &c) { return c.get().chunk_id; })
        .def_property_readonly("first_seq",
                               [](const py_lane_chunk &c) {
                                   return c.get().chunk_id * c.dev().packets_per_chunk();
                               })
        .def_property_readonly("lane", [](const py_lane_chunk &c) { return c.get().lane; },
                               "the device (its position in the capture's list) it is on")
        .def_property_readonly("n_present", [](const py_lane_chunk &c) { return c.get().n_present; })
        .def_property_readonly("lost",
                               [](const py_lane_chunk &c) {
                                   return c.dev().packets_per_chunk() - c.get().n_present;
                               })
        .def_property_readonly("released", &py_lane_chunk::released)
        .def_property_readonly(
            "staged_from",
            [](const py_lane_chunk &c) { return c.dev().staged_from(c.get().index); },
            "the address of the host chunk's payloads it was copied from")
        .def_property_readonly(
            "data",
            [](py::object self) {
                auto &c = self.cast<py_lane_chunk &>();
                const std::size_t ppc = c.dev().packets_per_chunk(), n = c.dev().payload_size();
                return py::array_t<std::uint8_t>({ppc, n}, {n, std::size_t{1}},
                                                 host_lane_device::host_address(c.get().data),
                                                 self);
            },
            "(packets_per_chunk, payload_size) uint8 view of the ring chunk (no copy)")
        .def_property_readonly(
            "present",
            [](py::object self) {
                auto &c = self.cast<py_lane_chunk &>();
                return py::array_t<bool>(
                    {c.dev().packets_per_chunk()}, {std::size_t{1}},
                    reinterpret_cast<const bool *>(host_lane_device::host_address(c.get().present)),
                    self);
            },
            "the mask copied with the payloads into the ring (no copy)")
        .def_property_readonly(
            "present_host",
            [](py::object self) {
                auto &c = self.cast<py_lane_chunk &>();
                return py::array_t<bool>({c.dev().packets_per_chunk()}, {std::size_t{1}},
                                         reinterpret_cast<const bool *>(c.get().present_host),
                                         self);
            },
            "the mask as a GPU chunk's host copy holds it (no copy)")
        .def_property_readonly(
            "heap_bytes",
            [](py::object self) {
                auto &c = self.cast<py_lane_chunk &>();
                return heap_bytes_array(self, c.get().heap_bytes_host, c.dev().packets_per_chunk());
            },
            "SPEAD: uint64 per heap slot, payload bytes received; else None")
        .def_property_readonly(
            "items",
            [](py::object self) {
                auto &c = self.cast<py_lane_chunk &>();
                const auto &ids = c.dev().item_ids();
                return items_arrays(self, c.get().items_host, ids.data(), ids.size(),
                                    c.dev().packets_per_chunk());
            },
            "SPEAD: {item id: uint64 per heap slot} of the named items; else {}")
        .def("release", &py_lane_chunk::release, "Return the chunk to its lane's ring")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](py_lane_chunk &c, const py::args &) {
            c.release();
            return false;
        });

    py::class_<host_lanes, std::shared_ptr<host_lanes>>(
        m, "HostLanes",
        "A host capture's chunks routed by chunk number to lanes whose rings are host memory")
        .def("start", [](host_lanes &h) { h.core().start(); })
        .def("stop",
             [](host_lanes &h) {
                 {
                     py::gil_scoped_release nogil;
                     h.core().stop();
                 }
                 h.core().check_error();
             })
        .def(
            "next_chunk",
            [](std::shared_ptr<host_lanes> h,
               std::optional<double> timeout) -> std::unique_ptr<py_lane_chunk> {
                gpu_chunk *c = wait_interruptible(
                    timeout,
                    [&h](std::chrono::steady_clock::duration slice, bool &finished) {
                        gpu_chunk_queue::status why;
                        gpu_chunk *got = h->core().lanes().next(slice, why);
                        finished = why == gpu_chunk_queue::status::finished;
                        return got;
                    },
                    [&h] { h->core().check_error(); });
                if (c == nullptr) return nullptr;
                return std::make_unique<py_lane_chunk>(h, c);
            },
            py::arg("timeout") = py::none())
        .def_property_readonly("finished", [](host_lanes &h) { return h.core().lanes().finished(); })
        .def_property_readonly("running", [](host_lanes &h) { return h.core().running(); })
        .def_property_readonly(
            "device_stats",
            [](host_lanes &h) {
                py::list out;
                for (std::size_t i = 0; i < h.core().lanes().lanes(); i++) {
                    py::dict d;
                    d["lane"] = i;
                    d["cpus"] = h.core().lanes().cpus(i);
                    d.attr("update")(lane_stats_dict(h.core().lanes().counters(i)));
                    d["staging"] = staging_stats_dict(h.core().host().eng().pool(), i);
                    out.append(d);
                }
                return out;
            },
            "per lane: its counters (those of GpuCapture.device_stats)")
        .def_property_readonly(
            "stats",
            [](host_lanes &h) {
                py::dict d;
                for (const auto &[k, v] : h.core().lanes().totals()) d[py::str(k)] = v;
                return d;
            },
            "the lanes' counters summed, under a GPU capture's names");

    m.def(
        "host_lanes",
        [unwrap](py::handle host, std::size_t lanes, std::size_t ring_chunks,
                 std::optional<std::vector<std::uint32_t>> mapping,
                 std::optional<std::vector<std::vector<int>>> cpus) {
            auto h = std::make_shared<host_lanes>(unwrap(host), lanes, ring_chunks,
                                                  std::move(mapping));
            if (cpus) set_lane_cpus(*h, lanes, std::move(*cpus));
            return h;
        },
        py::arg("host"), py::arg("lanes"), py::arg("ring_chunks") = 0,
        py::arg("mapping") = py::none(), py::arg("cpus") = py::none(),
        "The multi-device delivery of a (not yet started) host capture with host memory "
        "standing in for its `lanes` devices: chunk k to lane k % lanes, or to "
        "mapping[k % len(mapping)]; ring_chunks per lane (0: as many as the host pool); "
        "cpus: per lane, the CPUs its copy and recycle threads run on ([]: where start() "
        "runs)");
}

}  // namespace casper400g_rx
