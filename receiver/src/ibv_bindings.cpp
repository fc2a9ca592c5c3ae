#include "casper400g_rx/ibv_bindings.h"

#include <arpa/inet.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>

#include "casper400g_rx/hds.h"
#include "casper400g_rx/mlx5_cqe.h"
#include "casper400g_rx/nic_emulator.h"

namespace py = pybind11;

namespace casper400g_rx {

std::unique_ptr<capture> make_split_emulation(const format &fmt, const engine_config &cfg,
                                              const emulator_options &opt) {
    if (fmt.udp_port != 0 && fmt.udp_port != opt.udp_port)
        throw std::invalid_argument("the format's udp_port " + std::to_string(fmt.udp_port) +
                                    " differs from the emulated stream's port " +
                                    std::to_string(opt.udp_port));
    if (fmt.spead && opt.sizes.empty())
        throw std::invalid_argument("the emulated NIC's example stream is not SPEAD: give it the "
                                    "SPEAD packets to send (EmulatedNic(packets=...))");
    emulator_config ec;
    ec.payload_size = fmt.payload_size;
    ec.first = opt.first;
    ec.count = opt.count;
    ec.schedule = opt.schedule;
    ec.bad = opt.bad;
    ec.udp_port = opt.udp_port;
    ec.fill = opt.fill;
    ec.serial = opt.serial;
    ec.rate_gbps = opt.rate_gbps;
    ec.cpus = opt.cpus;
    ec.poll_us = opt.poll_us;
    ec.stalls = opt.stalls;
    ec.packets = opt.packets;
    ec.stride = opt.stride;
    ec.sizes = opt.sizes;
    ec.queue_of = opt.queue_of;
    auto src = std::make_unique<nic_emulator_source>(ec, opt.queues);
    auto eng = std::make_shared<hds_engine>(fmt, cfg, opt.queues, opt.depth);
    return std::make_unique<capture>(std::move(eng), std::move(src));
}

std::vector<std::pair<std::string, std::uint64_t>> extra_stats(engine &eng, source &src) {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    if (auto *e = dynamic_cast<nic_emulator_source *>(&src)) out.emplace_back("nic_drops", e->nic_drops());
    if (auto *h = dynamic_cast<hds_engine *>(&eng)) {
        const split_counters s = h->split_stats();
        out.emplace_back("in_place", s.in_place);
        out.emplace_back("fixup_copies", s.fixup);
        out.emplace_back("bounced", s.bounced);
        out.emplace_back("resyncs", s.resyncs);
        out.emplace_back("ran_dry", s.ran_dry);
        out.emplace_back("posted", s.posted);
    }
    return out;
}

namespace {

word_store parse_word_store(const std::string &name) {
    for (const word_store how : {word_store::cached, word_store::stream8, word_store::stream32,
                                 word_store::stream64})
        if (name == word_store_name(how)) {
            if (!word_store_supported(how))
                throw std::invalid_argument("store '" + name + "' needs an instruction set this "
                                            "CPU lacks");
            return how;
        }
    throw std::invalid_argument("store must be cached, stream8, stream32 or stream64, got '" +
                                name + "'");
}

std::vector<std::uint64_t> to_u64(const py::object &o) {
    if (o.is_none()) return {};
    auto a = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>::ensure(o);
    if (!a || a.ndim() != 1) throw std::invalid_argument("expected a 1-D array of integers");
    return std::vector<std::uint64_t>(a.data(), a.data() + a.size());
}

py::dict cqe_dict(const cqe_info &c) {
    py::dict d;
    d["opcode"] = c.opcode;
    d["format"] = c.format;
    d["owner"] = c.owner;
    d["byte_cnt"] = c.byte_cnt;
    d["wqe_counter"] = c.wqe_counter;
    d["wqe_id"] = c.wqe_id;
    d["timestamp"] = c.timestamp;
    d["l3_ok"] = c.l3_ok;
    d["l4_ok"] = c.l4_ok;
    d["syndrome"] = c.syndrome;
    d["vendor_syndrome"] = c.vendor_syndrome;
    d["filler"] = c.filler;
    d["strides"] = c.strides;
    d["length"] = c.length;
    d["stride_index"] = c.stride_index;
    return d;
}

std::string bytes_of(const py::bytes &b, std::size_t need, const char *what) {
    std::string s = b;
    if (s.size() != need)
        throw std::invalid_argument(std::string(what) + " must be " + std::to_string(need) +
                                    " bytes, got " + std::to_string(s.size()));
    return s;
}

}  // namespace

void register_ibv(py::module_ &m) {
    py::register_exception<ibv_unavailable>(m, "IbvUnavailableError", PyExc_RuntimeError);

    py::class_<emulator_options>(m, "EmulatorOptions",
                                 "NIC emulation of the ibv header-split path (mem backend)")
        .def(py::init([](std::size_t queues, std::size_t depth, std::uint64_t first,
                         std::uint64_t count, const py::object &schedule, const py::object &bad,
                         std::uint16_t udp_port, bool fill, bool serial, double rate_gbps,
                         std::vector<int> cpus, std::uint32_t poll_us,
                         const std::vector<std::tuple<std::size_t, std::uint64_t, std::uint64_t>>
                             &stalls) {
                 emulator_options o;
                 o.queues = queues;
                 o.depth = depth;
                 o.first = first;
                 o.count = count;
                 o.schedule = to_u64(schedule);
                 o.bad = to_u64(bad);
                 o.udp_port = udp_port;
                 o.fill = fill;
                 o.serial = serial;
                 o.rate_gbps = rate_gbps;
                 o.cpus = std::move(cpus);
                 o.poll_us = poll_us;
                 for (const auto &[q, at, us] : stalls) o.stalls.push_back({q, at, us});
                 return o;
             }),
             py::kw_only(), py::arg("queues") = 1, py::arg("depth") = 256, py::arg("first") = 0,
             py::arg("count") = 0, py::arg("schedule") = py::none(), py::arg("bad") = py::none(),
             py::arg("udp_port") = 10000, py::arg("fill") = true, py::arg("serial") = false,
             py::arg("rate_gbps") = 0.0, py::arg("cpus") = std::vector<int>{},
             py::arg("poll_us") = 0,
             py::arg("stalls") =
                 std::vector<std::tuple<std::size_t, std::uint64_t, std::uint64_t>>{})
        .def(
            "give_packets",
            [](emulator_options &o,
               const py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> &rows,
               const std::vector<std::size_t> &sizes, const py::object &queue_of) {
                if (rows.ndim() != 2)
                    throw std::invalid_argument("packets must be a 2-D array (one row a packet)");
                if (static_cast<std::size_t>(rows.shape(0)) != sizes.size())
                    throw std::invalid_argument("packets has " + std::to_string(rows.shape(0)) +
                                                " rows, sizes " + std::to_string(sizes.size()));
                o.stride = static_cast<std::size_t>(rows.shape(1));
                o.packets.assign(rows.data(), rows.data() + rows.size());
                o.sizes = sizes;
                o.queue_of.clear();
                for (const std::uint64_t q : to_u64(queue_of)) {
                    if (q > UINT32_MAX)
                        throw std::invalid_argument("queue_of names queue " + std::to_string(q));
                    o.queue_of.push_back(static_cast<std::uint32_t>(q));
                }
            },
            py::arg("packets"), py::arg("sizes"), py::arg("queue_of") = py::none(),
            "Sends these UDP payloads (rows, their first sizes[i] bytes) instead of the example "
            "stream, packet i to queue queue_of[i]");

    py::class_<ibv_options>(m, "IbvOptions", "Options of the ibv backend")
        .def(py::init([](const std::string &interface, const std::string &ip,
                         const std::string &device, std::uint8_t ib_port, std::uint16_t port,
                         std::size_t queues, std::size_t depth, std::vector<int> cpus,
                         const std::string &rq, bool busy_poll, const std::string &mac,
                         std::vector<std::string> groups) {
                 ibv_options o;
                 o.interface = interface;
                 o.ip = ip;
                 o.device = device;
                 o.ib_port = ib_port;
                 o.port = port;
                 o.queues = queues;
                 o.depth = depth;
                 o.cpus = std::move(cpus);
                 o.rq = rq;
                 o.busy_poll = busy_poll;
                 o.mac = mac;
                 o.groups = std::move(groups);
                 return o;
             }),
             py::kw_only(), py::arg("interface") = "", py::arg("ip") = "",
             py::arg("device") = "", py::arg("ib_port") = 1, py::arg("port") = 0,
             py::arg("queues") = 1, py::arg("depth") = 2048,
             py::arg("cpus") = std::vector<int>{}, py::arg("rq") = "split",
             py::arg("busy_poll") = true, py::arg("mac") = "",
             py::arg("groups") = std::vector<std::string>{});

    m.def("ibv_compiled", &ibv_compiled, "True when the ibv backend was built into this extension");
    m.def("ibv_load_error", &ibv_load_error,
          "'' when rdma-core loads, otherwise why the ibv backend cannot be used");
    m.def("ibv_devices", [] {
        py::list out;
        for (const auto &r : ibv_list_devices()) {
            py::dict d;
            d["name"] = r.name;
            d["netdev"] = r.netdev;
            d["transport"] = r.transport;
            d["link_layer"] = r.link_layer;
            d["state"] = r.state;
            d["active_mtu"] = r.active_mtu;
            d["speed_gbps"] = r.speed_gbps;
            d["raw_ip_csum"] = r.raw_packet;
            d["mlx5"] = r.mlx5;
            d["striding_rq"] = r.striding_rq;
            d["striding_range"] = r.striding_range;
            d["dmabuf"] = r.dmabuf;
            d["firmware"] = r.firmware;
            d["error"] = r.error;
            out.append(d);
        }
        return out;
    });
    m.def(
        "ibv_gpu_register_check",
        [](const std::string &device, int gpu, std::size_t bytes) {
            py::gil_scoped_release nogil;
            return ibv_gpu_register_check(device, gpu, bytes);
        },
        py::arg("device"), py::arg("gpu") = 0, py::arg("bytes") = 64 << 20,
        "Register GPU memory with an RDMA device: 'dmabuf' or 'peermem', or an error saying why not");

    // Units of the data path, for tests with constructed inputs.
    m.def(
        "_flow_rule_bytes",
        [](const py::bytes &mac, const std::string &ip, std::uint16_t port, std::uint8_t ib_port) {
            const std::string m6 = bytes_of(mac, 6, "mac");
            in_addr a{};
            if (inet_pton(AF_INET, ip.c_str(), &a) != 1)
                throw std::invalid_argument("bad IPv4 address '" + ip + "'");
            const auto v = flow_rule_bytes(reinterpret_cast<const std::uint8_t *>(m6.data()),
                                           a.s_addr, port, ib_port);
            return py::bytes(reinterpret_cast<const char *>(v.data()), v.size());
        },
        py::arg("mac"), py::arg("ip"), py::arg("port"), py::arg("ib_port") = 1);
    m.def(
        "_multicast_mac",
        [](const std::string &group) {
            in_addr a{};
            if (inet_pton(AF_INET, group.c_str(), &a) != 1)
                throw std::invalid_argument("bad IPv4 address '" + group + "'");
            std::uint8_t mac[6];
            multicast_mac(a.s_addr, mac);
            return py::bytes(reinterpret_cast<const char *>(mac), 6);
        },
        py::arg("group"));
    m.def("_parse_cqe", [](const py::bytes &b) {
        const std::string s = bytes_of(b, mlx5::cqe_size, "a CQE");
        return cqe_dict(parse_cqe64(reinterpret_cast<const std::uint8_t *>(s.data())));
    });
    m.def(
        "_cqe_sw_owned",
        [](const py::bytes &b, std::uint32_t ci, std::uint32_t cqe_cnt) {
            const std::string s = bytes_of(b, mlx5::cqe_size, "a CQE");
            return cqe_sw_owned(reinterpret_cast<const std::uint8_t *>(s.data()), ci, cqe_cnt);
        },
        py::arg("cqe"), py::arg("ci"), py::arg("cqe_cnt"));
    m.def(
        "_stride_ring_replay",
        [](std::size_t n_wqe, unsigned log_stride, unsigned log_strides, const py::list &cqes) {
            // Only offsets from the ring's base are reported, so no memory stands behind
            // it: the base is an address that is never dereferenced.
            auto *base = reinterpret_cast<std::uint8_t *>(std::uintptr_t{1} << 40);
            stride_ring ring(base, n_wqe, log_stride, log_strides);
            py::list out;
            for (const auto &item : cqes) {
                const std::string s = bytes_of(item.cast<py::bytes>(), mlx5::cqe_size, "a CQE");
                std::int64_t done = -1;
                const auto p = ring.consume(
                    parse_cqe64(reinterpret_cast<const std::uint8_t *>(s.data())), done);
                const std::int64_t off =
                    p.valid ? static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p.data) -
                                                        reinterpret_cast<std::uintptr_t>(base))
                            : -1;
                out.append(py::make_tuple(off, p.size, done));
            }
            return py::make_tuple(out, ring.malformed());
        },
        py::arg("n_wqe"), py::arg("log_stride"), py::arg("log_strides"), py::arg("cqes"));
    m.def(
        "_striding_wq_replay",
        [](std::uint32_t wqe_cnt, std::size_t stride, std::uint64_t addr, std::uint32_t bytes,
           std::uint32_t lkey, const std::vector<std::uint32_t> &completed) {
            // The work queue's ring and doorbell record in plain memory: what the NIC would
            // read is returned as bytes.
            std::string ring(static_cast<std::size_t>(wqe_cnt) * stride, '\xaa');
            std::uint32_t dbrec = 0;
            striding_wq wq(reinterpret_cast<std::uint8_t *>(ring.data()), stride, wqe_cnt, &dbrec);
            for (std::uint32_t k = 0; k < wqe_cnt; k++)
                wq.write(k, addr + std::uint64_t{k} * bytes, bytes, lkey);
            wq.post_all();
            wq.ring();
            auto record = [&dbrec] {
                return py::bytes(reinterpret_cast<const char *>(&dbrec), sizeof(dbrec));
            };
            py::list doorbells;
            doorbells.append(record());
            for (const std::uint32_t k : completed) {
                wq.repost(k);
                wq.ring();
                doorbells.append(record());
            }
            return py::make_tuple(py::bytes(ring), doorbells, wq.produced(), wq.consumed());
        },
        py::arg("wqe_cnt"), py::arg("stride"), py::arg("addr"), py::arg("bytes"), py::arg("lkey"),
        py::arg("completed"));
    m.def("_split_layout", [](const format &fmt) {
        const split_layout l = split_layout::for_format(fmt);
        py::dict d;
        d["headers"] = split_layout::headers;
        d["prefix"] = l.prefix;
        d["entry"] = l.entry;
        d["header_len"] = l.header_len();
        d["frame_len"] = l.frame_len();
        if (l.spead) {
            d["parts"] = l.parts;
            d["first_header"] = l.first_header;
            d["later_header"] = l.later_header;
            d["first_part"] = l.first_part;
            d["later_part"] = l.later_part;
            d["tail"] = l.tail;
        }
        return d;
    });
    m.def(
        "_check_split_headers",
        [](const py::bytes &hdr, std::size_t frame_len, const format &fmt) {
            const std::string s = hdr;
            if (s.size() < split_layout::headers)
                throw std::invalid_argument("need at least 42 header bytes");
            return check_split_headers(reinterpret_cast<const std::uint8_t *>(s.data()), frame_len,
                                       fmt);
        },
        py::arg("headers"), py::arg("frame_len"), py::arg("fmt"));
    m.def(
        "_example_words",
        [](std::uint64_t seq, std::size_t k0, std::size_t k1, const std::string &store,
           std::size_t offset) {
            const word_store how = parse_word_store(store);
            if (k1 < k0) throw std::invalid_argument("k1 must be >= k0");
            // Written at `offset` bytes into a 64-byte aligned buffer, so that tests reach
            // every alignment the wide stores must handle.
            std::vector<std::uint8_t> buf(offset + 8 * (k1 - k0) + 64);
            auto *base = reinterpret_cast<std::uint8_t *>(
                (reinterpret_cast<std::uintptr_t>(buf.data()) + 63) & ~std::uintptr_t{63});
            write_example_words(base + offset, seq, k0, k1, how);
            order_streaming_stores();
            return py::bytes(reinterpret_cast<const char *>(base + offset), 8 * (k1 - k0));
        },
        py::arg("seq"), py::arg("k0"), py::arg("k1"), py::arg("store"), py::arg("offset") = 0);
    m.def("_word_stores", [] {
        py::list out;
        for (const word_store how : {word_store::cached, word_store::stream8, word_store::stream32,
                                     word_store::stream64})
            if (word_store_supported(how)) out.append(word_store_name(how));
        return out;
    });
    m.def(
        "_example_words_gbps",
        [](const std::string &store, std::size_t payload_size, std::size_t packets,
           std::size_t ring_bytes) {
            // How fast one core writes whole payloads the way the emulated NIC does, into
            // a ring larger than the caches (the chunk pool's case).
            const word_store how = parse_word_store(store);
            if (payload_size == 0 || payload_size % 8 || ring_bytes < payload_size)
                throw std::invalid_argument("payload_size must be a multiple of 8 that fits "
                                            "the ring");
            const std::size_t slots = ring_bytes / payload_size;
            std::vector<std::uint8_t> ring(slots * payload_size + 64);
            auto *base = reinterpret_cast<std::uint8_t *>(
                (reinterpret_cast<std::uintptr_t>(ring.data()) + 63) & ~std::uintptr_t{63});
            std::memset(base, 0, slots * payload_size);
            py::gil_scoped_release nogil;
            const auto t0 = std::chrono::steady_clock::now();
            for (std::size_t p = 0; p < packets; p++)
                write_example_words(base + (p % slots) * payload_size, p, 0, payload_size / 8,
                                    how);
            order_streaming_stores();
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            return packets * payload_size * 8 / s / 1e9;
        },
        py::arg("store"), py::arg("payload_size") = 8192, py::arg("packets") = 200000,
        py::arg("ring_bytes") = std::size_t{256} << 20);
    m.def(
        "_frame_header",
        [](std::size_t payload_size, std::uint16_t udp_port, std::uint64_t seq) {
            std::string out(split_layout::headers, '\0');
            write_frame_header(reinterpret_cast<std::uint8_t *>(out.data()), payload_size,
                               udp_port, seq);
            return py::bytes(out);
        },
        py::arg("payload_size"), py::arg("udp_port"), py::arg("seq"));
}

}  // namespace casper400g_rx
