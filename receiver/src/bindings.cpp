// Python bindings: the `casper400g_rx._core` extension module.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "casper400g_rx/capture.h"
#include "casper400g_rx/copy.h"
#include "casper400g_rx/cuda_bindings.h"
#include "casper400g_rx/errors.h"
#include "casper400g_rx/example_stream.h"
#include "casper400g_rx/hds.h"
#include "casper400g_rx/ibv_bindings.h"
#include "casper400g_rx/mem_source.h"
#include "casper400g_rx/pcap_source.h"
#include "casper400g_rx/py_wait.h"
#include "casper400g_rx/rdma_bindings.h"
#include "casper400g_rx/sender.h"
#include "casper400g_rx/spead_bindings.h"
#include "casper400g_rx/udp_source.h"

namespace py = pybind11;
using namespace casper400g_rx;

namespace {

std::string policy_name(slow_consumer_policy p) {
    return p == slow_consumer_policy::block ? "block" : "drop_oldest";
}

slow_consumer_policy parse_policy(const std::string &s) {
    if (s == "block") return slow_consumer_policy::block;
    if (s == "drop_oldest") return slow_consumer_policy::drop_oldest;
    throw std::invalid_argument("policy must be 'block' or 'drop_oldest', got '" + s + "'");
}

// A chunk lent to Python. Holding the engine keeps the chunk memory valid for
// as long as any NumPy view of it exists, even after release().
class py_chunk {
public:
    py_chunk(std::shared_ptr<engine> eng, chunk *c) : eng_(std::move(eng)), c_(c) {}
    py_chunk(const py_chunk &) = delete;
    py_chunk &operator=(const py_chunk &) = delete;
    ~py_chunk() { release(); }

    void release() {
        if (c_ != nullptr) eng_->release(std::exchange(c_, nullptr));
    }
    bool released() const noexcept { return c_ == nullptr; }
    const chunk &get() const {
        if (c_ == nullptr) throw std::runtime_error("chunk already released");
        return *c_;
    }
    std::size_t packets() const noexcept { return eng_->config().packets_per_chunk; }
    std::size_t payload() const noexcept { return eng_->fmt().payload_size; }
    const format &fmt() const noexcept { return eng_->fmt(); }

private:
    std::shared_ptr<engine> eng_;
    chunk *c_;
};

class py_capture {
public:
    explicit py_capture(std::shared_ptr<capture> cap) : cap_(std::move(cap)) {}
    const std::shared_ptr<capture> &shared() const noexcept { return cap_; }

    void start() { cap_->start(); }
    void stop() {
        {
            py::gil_scoped_release nogil;
            cap_->stop();
        }
        cap_->check_error();
    }

    // The next ready chunk; None when `timeout` (seconds) passes first or the stream ended.
    std::unique_ptr<py_chunk> next_chunk(std::optional<double> timeout) {
        chunk *c = wait_interruptible(
            timeout,
            [this](std::chrono::steady_clock::duration slice, bool &finished) {
                chunk_queue::status why;
                chunk *got = cap_->eng().ready().pop_for(slice, why);
                finished = why == chunk_queue::status::finished;
                return got;
            },
            [this] { cap_->check_error(); });
        if (c == nullptr) return nullptr;
        return std::make_unique<py_chunk>(cap_->engine_ptr(), c);
    }

    py::dict stats() const {
        const counters c = cap_->eng().stats();
        py::dict d;
        d["received"] = c.received;
        d["packets"] = c.packets;
        d["bytes"] = c.bytes;
        d["lost"] = c.lost;
        d["late"] = c.late;
        d["duplicate"] = c.duplicate;
        d["rejected"] = c.rejected;
        d["chunks"] = c.chunks;
        d["chunks_dropped"] = c.chunks_dropped;
        d["packets_dropped"] = c.packets_dropped;
        d["discarded"] = c.discarded;
        d["waits"] = c.waits;
        d["queue_stalls"] = c.queue_stalls;
        d["queue_skips"] = c.queue_skips;
        d["out_of_window"] = c.out_of_window;
        d["window_resyncs"] = c.window_resyncs;
        d["no_free_chunk"] = c.no_free_chunk;
        d["chunks_given_up"] = c.chunks_given_up;
        add_spead_stats(d, c, cap_->eng().fmt());
        d["queues"] = cap_->eng().queues();
        d["chunks_in_use"] = cap_->eng().chunks_in_use();
        d["n_chunks"] = cap_->eng().pool().size();
        if (auto *u = dynamic_cast<udp_source *>(&cap_->src())) {
            d["kernel_drops"] = u->kernel_drops();
            d["source_filtered"] = u->source_filtered();
        }
        for (const auto &kv : extra_stats(cap_->eng(), cap_->src())) d[kv.first.c_str()] = kv.second;
        return d;
    }

    std::vector<std::uint64_t> queue_received() const { return cap_->eng().queue_received(); }
    py::list warnings() const { return py::cast(cap_->src().warnings()); }
    bool finished() const { return cap_->eng().ready().drained(); }
    bool running() const { return cap_->running(); }
    std::optional<int> port() const {
        if (auto *u = dynamic_cast<udp_source *>(&cap_->src())) return u->port();
        return std::nullopt;
    }
    std::optional<std::size_t> rcvbuf() const {
        if (auto *u = dynamic_cast<udp_source *>(&cap_->src())) return u->rcvbuf();
        return std::nullopt;
    }
    const engine_config &config() const { return cap_->eng().config(); }
    const format &fmt() const { return cap_->eng().fmt(); }

private:
    std::shared_ptr<capture> cap_;
};

using u8_array = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;
using u64_array = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>;

std::vector<std::uint64_t> to_vector(const std::optional<u64_array> &a) {
    if (!a) return {};
    if (a->ndim() != 1)
        throw std::invalid_argument("schedule must be 1-D, got " + std::to_string(a->ndim()) +
                                    " dimensions");
    return std::vector<std::uint64_t>(a->data(), a->data() + a->size());
}

format make_format(std::size_t payload_size, const std::string &seq, std::size_t seq_offset,
                   unsigned seq_width, bool seq_big_endian, std::optional<std::uint64_t> stream_id,
                   std::size_t stream_id_offset, unsigned stream_id_width,
                   bool stream_id_big_endian, std::uint16_t udp_port) {
    format f;
    f.payload_size = payload_size;
    if (seq == "payload") {
        f.source = seq_source::payload;
    } else if (seq == "ipv4_id") {
        f.source = seq_source::ipv4_id;
    } else {
        throw std::invalid_argument("seq must be 'payload' or 'ipv4_id', got '" + seq + "'");
    }
    f.seq = field{seq_offset, seq_width, seq_big_endian};
    if (stream_id) {
        f.stream_id = field{stream_id_offset, stream_id_width, stream_id_big_endian};
        f.stream_id_value = *stream_id;
    }
    f.udp_port = udp_port;
    f.validate();
    return f;
}

linktype parse_linktype(std::uint32_t lt) {
    if (const auto known = to_linktype(lt)) return *known;
    throw std::invalid_argument("unsupported link type " + std::to_string(lt));
}

std::unique_ptr<py_capture> make_capture(const format &fmt, const engine_config &cfg,
                                         std::unique_ptr<source> src) {
    return std::make_unique<py_capture>(std::make_unique<capture>(fmt, cfg, std::move(src)));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "casper400g receiver engine (C++): placement, sources, sender";

    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const os_error &e) {
            // OSError(errno, text) picks the matching subclass (PermissionError, ...).
            py::object exc = py::reinterpret_steal<py::object>(
                PyObject_CallFunction(PyExc_OSError, "is", e.code(), e.what()));
            if (!exc) throw py::error_already_set();
            PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
        }
    });

    py::class_<format> format_cls(m, "Format", "Packet format descriptor (see Format.spead)");
    format_cls
        .def(py::init(&make_format), py::kw_only(), py::arg("payload_size") = 8192,
             py::arg("seq") = "payload", py::arg("seq_offset") = 0, py::arg("seq_width") = 8,
             py::arg("seq_big_endian") = true, py::arg("stream_id") = py::none(),
             py::arg("stream_id_offset") = 0, py::arg("stream_id_width") = 8,
             py::arg("stream_id_big_endian") = true, py::arg("udp_port") = 0)
        .def_property_readonly("payload_size", [](const format &f) { return f.payload_size; })
        .def_property_readonly("seq",
                               [](const format &f) {
                                   return f.source == seq_source::payload ? "payload" : "ipv4_id";
                               })
        .def_property_readonly("seq_offset", [](const format &f) { return f.seq.offset; })
        .def_property_readonly("seq_width", [](const format &f) { return f.seq.width; })
        .def_property_readonly("seq_big_endian", [](const format &f) { return f.seq.big_endian; })
        .def_property_readonly("stream_id",
                               [](const format &f) -> std::optional<std::uint64_t> {
                                   if (f.stream_id) return f.stream_id_value;
                                   return std::nullopt;
                               })
        .def_property_readonly("udp_port", [](const format &f) { return f.udp_port; })
        .def(
            "decode",
            [](const format &f, py::bytes payload, int ip_id) -> std::optional<std::uint64_t> {
                const std::string s = payload;
                decoder d(f);
                return d.decode(packet_ref{reinterpret_cast<const std::uint8_t *>(s.data()),
                                           s.size(), ip_id});
            },
            py::arg("payload"), py::arg("ip_id") = -1,
            "Sequence number of one UDP payload, or None when the format rejects it")
        .def("__repr__", [](const format &f) {
            if (f.spead) return spead_repr(f);
            std::string r = "Format(payload_size=" + std::to_string(f.payload_size);
            if (f.source == seq_source::ipv4_id) {
                r += ", seq='ipv4_id'";
            } else {
                r += ", seq_offset=" + std::to_string(f.seq.offset) +
                     ", seq_width=" + std::to_string(f.seq.width) +
                     (f.seq.big_endian ? "" : ", seq_big_endian=False");
            }
            if (f.stream_id) r += ", stream_id=" + std::to_string(f.stream_id_value);
            if (f.udp_port) r += ", udp_port=" + std::to_string(f.udp_port);
            return r + ")";
        });
    bind_spead_format(format_cls);

    py::class_<engine_config>(m, "EngineConfig")
        .def(py::init([](std::size_t ppc, std::size_t max_chunks, std::size_t n_chunks,
                         const std::string &policy, std::optional<std::uint64_t> first_chunk,
                         std::uint32_t stall_timeout_ms, bool skip_lagging,
                         std::size_t max_jump, std::size_t resync_after,
                         std::vector<std::uint32_t> staging_route,
                         std::vector<int> staging_nodes) {
                 engine_config c;
                 c.packets_per_chunk = ppc;
                 c.max_chunks = max_chunks;
                 c.n_chunks = n_chunks;
                 c.policy = parse_policy(policy);
                 c.first_chunk = first_chunk;
                 c.stall_timeout_ms = stall_timeout_ms;
                 c.skip_lagging = skip_lagging;
                 c.max_jump = max_jump;
                 c.resync_after = resync_after;
                 c.staging.route = std::move(staging_route);
                 c.staging.nodes = std::move(staging_nodes);
                 c.validate();
                 return c;
             }),
             py::kw_only(), py::arg("packets_per_chunk") = 1024, py::arg("max_chunks") = 4,
             py::arg("n_chunks") = 0, py::arg("policy") = "block",
             py::arg("first_chunk") = py::none(), py::arg("stall_timeout_ms") = 50,
             py::arg("skip_lagging") = true, py::arg("max_jump") = 0,
             py::arg("resync_after") = 16,
             py::arg("staging_route") = std::vector<std::uint32_t>{},
             py::arg("staging_nodes") = std::vector<int>{})
        .def_readonly("packets_per_chunk", &engine_config::packets_per_chunk)
        .def_readonly("max_chunks", &engine_config::max_chunks)
        .def_readonly("n_chunks", &engine_config::n_chunks)
        .def_property_readonly("policy",
                               [](const engine_config &c) { return policy_name(c.policy); })
        .def_readonly("first_chunk", &engine_config::first_chunk)
        .def_readonly("stall_timeout_ms", &engine_config::stall_timeout_ms)
        .def_readonly("skip_lagging", &engine_config::skip_lagging)
        .def_readonly("max_jump", &engine_config::max_jump,
                      "Chunks one packet may move a window past its end (0: four windows)")
        .def_readonly("resync_after", &engine_config::resync_after)
        .def_property_readonly(
            "staging_route", [](const engine_config &c) { return c.staging.route; },
            "Part of the pool chunk number k takes its chunk from: entry k % length "
            "([]: one part)")
        .def_property_readonly(
            "staging_nodes", [](const engine_config &c) { return c.staging.nodes; },
            "Per part of the pool, the NUMA node it is bound to (-1: not bound)")
        .def("sized", &engine_config::sized, py::arg("queues"), py::arg("depth") = 0,
             py::arg("delivery") = false,
             "This configuration with the pool (n_chunks, when 0) and max_jump the engine "
             "gives `queues` receive queues; depth > 0: header-data split lanes posting "
             "`depth` receives each, `delivery`: with room for chunks on their way on "
             "(a GPU, a pausing consumer). The one sizing rule (engine.h)")
        .def("split_window", &engine_config::split_window, py::arg("queues"), py::arg("depth"),
             "Chunk ids the header-data split's window spans: max_chunks and the chunks "
             "`depth` receives posted per queue reach ahead");

    // After Format and EngineConfig, so that signatures (and the type stubs) name them.
    register_ibv(m);
    register_rdma(m);

    py::class_<py_chunk>(m, "Chunk", py::buffer_protocol(),
                         "Packets [chunk_id * packets_per_chunk, ...) placed by sequence number")
        .def_buffer([](py_chunk &c) {
            const chunk &ch = c.get();
            return py::buffer_info(ch.data, 1, py::format_descriptor<std::uint8_t>::format(), 2,
                                   {c.packets(), c.payload()}, {c.payload(), std::size_t{1}});
        })
        .def_property_readonly("chunk_id", [](const py_chunk &c) { return c.get().chunk_id; })
        .def_property_readonly("first_seq",
                               [](const py_chunk &c) {
                                   return c.get().chunk_id * c.packets();
                               })
        .def_property_readonly("n_present", [](const py_chunk &c) { return c.get().n_present; })
        .def_property_readonly("lost",
                               [](const py_chunk &c) { return c.packets() - c.get().n_present; })
        .def_property_readonly("packets_per_chunk", &py_chunk::packets)
        .def_property_readonly("payload_size", &py_chunk::payload)
        .def_property_readonly("released", &py_chunk::released)
        .def_property_readonly(
            "data",
            [](py::object self) {
                auto &c = self.cast<py_chunk &>();
                return py::array_t<std::uint8_t>({c.packets(), c.payload()},
                                                 {c.payload(), std::size_t{1}}, c.get().data, self);
            },
            "(packets_per_chunk, payload_size) uint8 view of the chunk memory (no copy)")
        .def_property_readonly(
            "present",
            [](py::object self) {
                auto &c = self.cast<py_chunk &>();
                return py::array_t<bool>({c.packets()}, {std::size_t{1}},
                                         reinterpret_cast<const bool *>(c.get().present), self);
            },
            "bool per packet slot: True where the packet arrived (no copy); SPEAD: where "
            "the whole heap arrived")
        .def_property_readonly(
            "heap_bytes",
            [](py::object self) {
                auto &c = self.cast<py_chunk &>();
                return heap_bytes_array(self, c.get().heap_bytes, c.packets());
            },
            "SPEAD: uint64 per heap slot, payload bytes received (no copy); else None")
        .def_property_readonly(
            "items",
            [](py::object self) {
                auto &c = self.cast<py_chunk &>();
                const format &f = c.fmt();
                return items_arrays(self, c.get().items, f.spead ? f.spead->items.data() : nullptr,
                                    f.spead ? f.spead->n_items : 0, c.packets());
            },
            "SPEAD: {item id: uint64 per heap slot} of the format's named immediate items "
            "(2**64 - 1 where no packet carrying it arrived; no copy); else {}")
        .def(
            "__dlpack__",
            [](py::object self, const py::kwargs &kwargs) {
                return self.attr("data").attr("__dlpack__")(**kwargs);
            },
            "DLPack export of `data` (host memory), e.g. for torch.from_dlpack")
        .def("__dlpack_device__",
             [](const py_chunk &) { return py::make_tuple(1, 0); })  // kDLCPU, device 0
        .def("release", &py_chunk::release,
             "Return the chunk to the free ring; views of it may then be overwritten")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__",
             [](py_chunk &c, const py::args &) {
                 c.release();
                 return false;
             });

    py::class_<py_capture>(m, "Capture")
        .def_static(
            "udp",
            [](const format &fmt, const engine_config &cfg, const std::string &host,
               std::uint16_t port, std::size_t threads, std::vector<int> cpus,
               std::size_t rcvbuf, const std::string &src_filter) {
                if (fmt.source == seq_source::ipv4_id)
                    throw std::invalid_argument(
                        "seq='ipv4_id' needs the IP header, which UDP sockets do not deliver; "
                        "use the pcap or mem backend");
                udp_config u;
                u.host = host;
                u.port = port;
                u.threads = threads;
                u.cpus = std::move(cpus);
                u.rcvbuf = rcvbuf;
                u.src_filter = src_filter;
                u.max_payload = fmt.max_udp_payload();
                // Fixed-offset sequence numbers: the sockets share the stream by them.
                if (!fmt.spead && fmt.source == seq_source::payload) u.steer = fmt.seq;
                return make_capture(fmt, cfg, std::make_unique<udp_source>(u));
            },
            py::arg("fmt"), py::arg("config"), py::arg("host"), py::arg("port"),
            py::arg("threads") = 1, py::arg("cpus") = std::vector<int>{},
            py::arg("rcvbuf") = 64 << 20, py::arg("src_filter") = "")
        .def_static(
            "pcap",
            [](const format &fmt, const engine_config &cfg, const std::string &path) {
                return make_capture(fmt, cfg, std::make_unique<pcap_source>(path, fmt.udp_port));
            },
            py::arg("fmt"), py::arg("config"), py::arg("path"))
        .def_static(
            "buffer",
            [](const format &fmt, const engine_config &cfg, const u8_array &packets,
               std::optional<std::vector<std::size_t>> sizes, bool frames, std::uint32_t lt,
               std::size_t repeat, std::size_t queues) {
                if (packets.ndim() != 2)
                    throw std::invalid_argument("packets must be a 2-D uint8 array, got " +
                                                std::to_string(packets.ndim()) + " dimensions");
                const auto n = static_cast<std::size_t>(packets.shape(0));
                const auto stride = static_cast<std::size_t>(packets.shape(1));
                std::vector<std::size_t> s = sizes ? *sizes : std::vector<std::size_t>(n, stride);
                if (s.size() != n)
                    throw std::invalid_argument("sizes has " + std::to_string(s.size()) +
                                                " entries for " + std::to_string(n) + " packets");
                return make_capture(
                    fmt, cfg,
                    std::make_unique<buffer_source>(packets.data(), stride, std::move(s), frames,
                                                    parse_linktype(lt), fmt.udp_port, repeat,
                                                    queues));
            },
            py::arg("fmt"), py::arg("config"), py::arg("packets"), py::arg("sizes") = py::none(),
            py::arg("frames") = false, py::arg("linktype") = 1, py::arg("repeat") = 1,
            py::arg("queues") = 1)
        .def_static(
            "generator",
            [](const format &fmt, const engine_config &cfg, std::uint64_t first,
               std::uint64_t count, std::optional<u64_array> schedule, bool fill,
               std::size_t queues, std::optional<std::vector<std::uint32_t>> queue_of) {
                if (fmt.spead)
                    throw std::invalid_argument(
                        "the example-stream generator sends no SPEAD: replay SPEAD packets "
                        "(packets=) or capture them from udp, pcap or ibv");
                return make_capture(
                    fmt, cfg,
                    std::make_unique<generator_source>(fmt.payload_size, first, count,
                                                       to_vector(schedule), fill, queues,
                                                       queue_of.value_or(
                                                           std::vector<std::uint32_t>{})));
            },
            py::arg("fmt"), py::arg("config"), py::arg("first") = 0, py::arg("count") = 0,
            py::arg("schedule") = py::none(), py::arg("fill") = true, py::arg("queues") = 1,
            py::arg("queue_of") = py::none())
        // The header-data split path of the ibv backend, driven by an emulated NIC.
        .def_static(
            "split_emulation",
            [](const format &fmt, const engine_config &cfg, const emulator_options &o) {
                return std::make_unique<py_capture>(make_split_emulation(fmt, cfg, o));
            },
            py::arg("fmt"), py::arg("config"), py::arg("options"))
        .def_static(
            "ibv",
            [](const format &fmt, const engine_config &cfg, const ibv_options &o) {
                return std::make_unique<py_capture>(make_ibv_capture(fmt, cfg, o));
            },
            py::arg("fmt"), py::arg("config"), py::arg("options"))
        .def("start", &py_capture::start)
        .def("stop", &py_capture::stop)
        .def("next_chunk", &py_capture::next_chunk, py::arg("timeout") = py::none())
        .def_property_readonly("stats", &py_capture::stats)
        .def_property_readonly("queue_received", &py_capture::queue_received,
                               "Packets each receive queue (thread, lane) offered to the engine")
        .def_property_readonly("warnings", &py_capture::warnings)
        .def_property_readonly("running", &py_capture::running)
        .def_property_readonly("finished", &py_capture::finished)
        .def_property_readonly("port", &py_capture::port)
        .def_property_readonly("rcvbuf", &py_capture::rcvbuf)
        .def_property_readonly("config", &py_capture::config)
        .def_property_readonly("fmt", &py_capture::fmt);

    // GPU delivery, GPUDirect and the NIC emulation (cuda_bindings.cpp).
    bind_cuda(
        m, [](std::shared_ptr<capture> c) { return py::cast(std::make_unique<py_capture>(c)); },
        [](py::handle h) { return h.cast<py_capture &>().shared(); });

    py::class_<sender>(m, "Sender",
                      "Sends the example stream over UDP (sendmmsg, rate-limited; "
                      "gso_segments > 1: that many datagrams per send with UDP GSO)")
        .def(py::init([](const std::string &host, std::uint16_t port, std::size_t payload_size,
                         double rate_gbps, std::uint64_t first, std::uint64_t count,
                         std::optional<u64_array> schedule, std::size_t streams,
                         bool allow_remote, py::bytes prefix, std::size_t prefix_seq_offset,
                         unsigned prefix_seq_width, bool catch_up, std::size_t gso_segments) {
                 send_config c;
                 c.host = host;
                 c.port = port;
                 c.payload_size = payload_size;
                 c.rate_gbps = rate_gbps;
                 c.first = first;
                 c.count = count;
                 c.schedule = to_vector(schedule);
                 c.streams = streams;
                 c.allow_remote = allow_remote;
                 const std::string pre = prefix;
                 c.prefix.assign(pre.begin(), pre.end());
                 c.prefix_seq_offset = prefix_seq_offset;
                 c.prefix_seq_width = prefix_seq_width;
                 c.catch_up = catch_up;
                 c.gso_segments = gso_segments;
                 return std::make_unique<sender>(c);
             }),
             py::kw_only(), py::arg("host") = "127.0.0.1", py::arg("port"),
             py::arg("payload_size") = 8192, py::arg("rate_gbps") = 0.0, py::arg("first") = 0,
             py::arg("count") = 0, py::arg("schedule") = py::none(), py::arg("streams") = 1,
             py::arg("allow_remote") = false, py::arg("prefix") = py::bytes(),
             py::arg("prefix_seq_offset") = 0, py::arg("prefix_seq_width") = 0,
             py::arg("catch_up") = false, py::arg("gso_segments") = 0)
        .def(
            "run",
            [](sender &s, std::optional<double> seconds) {
                using clock = std::chrono::steady_clock;
                const auto deadline = deadline_after(seconds);
                for (;;) {
                    bool done;
                    {
                        py::gil_scoped_release nogil;
                        const auto left = deadline - clock::now();
                        done = s.send_for(std::min<clock::duration>(signal_poll, left));
                    }
                    if (done) return true;
                    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
                    if (clock::now() >= deadline) return false;
                }
            },
            py::arg("seconds") = py::none(),
            "Send everything, or stop after `seconds`; True when done (GIL released, Ctrl-C works)")
        .def_property_readonly("packets_sent", &sender::packets_sent)
        .def_property_readonly("total", &sender::total)
        .def_property_readonly("elapsed", &sender::elapsed)
        .def_property_readonly("max_lag", &sender::max_lag_seconds,
                               "Seconds the sender fell behind its schedule at worst");

    m.def(
        "send_in_step",
        [](const std::vector<sender *> &senders, const std::vector<int> &cpus) {
            py::gil_scoped_release nogil;
            send_in_step(senders, cpus);
        },
        py::arg("senders"), py::arg("cpus") = std::vector<int>{},
        "Run senders of one stream together, a thread each (pinned to cpus[i] when given), "
        "on one schedule (GIL released until all are done)");

    m.def(
        "parse_frame",
        [](py::bytes frame, std::uint32_t lt, std::uint16_t udp_port) -> py::object {
            const std::string s = frame;
            const auto *base = reinterpret_cast<const std::uint8_t *>(s.data());
            const auto p = parse_frame(base, s.size(), parse_linktype(lt), udp_port);
            if (!p) return py::none();
            return py::make_tuple(static_cast<std::size_t>(p->payload - base), p->size,
                                  p->ip_id);
        },
        py::arg("frame"), py::arg("linktype") = 1, py::arg("udp_port") = 0,
        "(payload offset, payload size, IPv4 id) of a frame, or None when it is rejected");
    bind_spead2_place(m);
    m.def("stream_width", [] {
#if defined(__x86_64__)
        return detail::stream_width;
#else
        return 0u;
#endif
    }, "Bytes per streaming store the payload copies use on this CPU (16, 32 or 64; 0: memcpy)");
    m.def(
        "_stream_lines",
        [](py::array_t<std::uint8_t, py::array::c_style> dst, std::size_t offset, py::bytes src,
           unsigned width) {
            const std::string s = src;
            auto d = dst.mutable_unchecked<1>();
            if (width != 16 && width != 32 && width != 64)
                throw std::invalid_argument("width must be 16, 32 or 64, got " +
                                            std::to_string(width));
#if defined(__x86_64__)
            if (width > detail::stream_width)
                throw std::invalid_argument("this CPU streams at most " +
                                            std::to_string(detail::stream_width) +
                                            " bytes per store, asked for " + std::to_string(width));
#endif
            if (s.size() % 64 != 0 || offset > static_cast<std::size_t>(d.shape(0)) ||
                s.size() > static_cast<std::size_t>(d.shape(0)) - offset)
                throw std::invalid_argument("a copy of " + std::to_string(s.size()) +
                                            " bytes at " + std::to_string(offset) +
                                            " must be whole 64-byte lines inside the array");
            std::uint8_t *at = d.mutable_data(0) + offset;
            if (reinterpret_cast<std::uintptr_t>(at) % 16 != 0)
                throw std::invalid_argument("the destination must be 16-byte aligned");
            stream_lines(at, reinterpret_cast<const std::uint8_t *>(s.data()), s.size(), width);
            order_payload_stores();
        },
        py::arg("dst"), py::arg("offset"), py::arg("src"), py::arg("width"),
        "Copy whole lines into dst[offset:] by streaming stores of `width` bytes (tests)");
    m.def(
        "_wrapping_counter_replay",
        [](const std::vector<std::uint32_t> &raw) {
            // The udp source's kernel drop counts, one reading after another.
            wrapping_counter c;
            std::vector<std::uint64_t> out;
            for (const std::uint32_t r : raw) out.push_back(c.update(r));
            return out;
        },
        py::arg("readings"),
        "Totals of a wrapping 32-bit counter followed in 64 bits, after each reading");
    m.def(
        "example_payload",
        [](std::uint64_t seq, std::size_t size) {
            if (size < 8 || size % 8 != 0)
                throw std::invalid_argument("size must be a positive multiple of 8, got " +
                                            std::to_string(size));
            std::string out(size, '\0');
            fill_example_payload(reinterpret_cast<std::uint8_t *>(out.data()), size, seq);
            return py::bytes(out);
        },
        py::arg("seq"), py::arg("size") = 8192);
}
