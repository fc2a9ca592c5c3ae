#include "casper400g_rx/ibv_source.h"

#include "casper400g_rx/capture.h"
#include "casper400g_rx/errors.h"
#include "casper400g_rx/hds.h"

#include <arpa/inet.h>

namespace casper400g_rx {

void multicast_mac(std::uint32_t group_be, std::uint8_t out[6]) {
    const std::uint32_t g = ntohl(group_be);
    if ((g >> 28) != 0xE) {
        char text[INET_ADDRSTRLEN] = {};
        inet_ntop(AF_INET, &group_be, text, sizeof(text));
        throw std::invalid_argument(std::string("'") + text +
                                    "' is not an IPv4 multicast address (224.0.0.0/4)");
    }
    out[0] = 0x01;
    out[1] = 0x00;
    out[2] = 0x5e;
    out[3] = static_cast<std::uint8_t>((g >> 16) & 0x7f);
    out[4] = static_cast<std::uint8_t>(g >> 8);
    out[5] = static_cast<std::uint8_t>(g);
}

}  // namespace casper400g_rx

#ifndef CASPER400G_RX_HAVE_IBV

namespace casper400g_rx {

namespace {

[[noreturn]] void compiled_out() { throw ibv_unavailable(ibv_load_error()); }

}  // namespace

bool ibv_compiled() noexcept { return false; }

std::string ibv_load_error() {
    return "the ibv backend is not compiled into this build: the rdma-core headers "
           "(Debian/Ubuntu package libibverbs-dev) were missing when the extension was built; "
           "install them and rebuild (`make venv`, or pip install -e ./receiver again)";
}

std::unique_ptr<capture> make_ibv_capture(const format &, const engine_config &,
                                          const ibv_options &) {
    compiled_out();
}

std::vector<std::uint8_t> flow_rule_bytes(const std::uint8_t *, std::uint32_t, std::uint16_t,
                                          std::uint8_t) {
    compiled_out();
}

std::vector<ibv_device_report> ibv_list_devices() { compiled_out(); }

std::string ibv_gpu_register_check(const std::string &, int, std::size_t) { compiled_out(); }

}  // namespace casper400g_rx

#else  // CASPER400G_RX_HAVE_IBV

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "casper400g_rx/cuda_driver.h"
#include "casper400g_rx/ibv_lib.h"
#include "casper400g_rx/mlx5_cqe.h"
#include "casper400g_rx/sysfs.h"

namespace casper400g_rx {

bool ibv_compiled() noexcept { return true; }

std::string ibv_load_error() { return ibv_lib::load_error(); }

namespace {

// ---- owning handles ------------------------------------------------------------------

template <typename T>
struct verbs_deleter {
    int (*fn)(T *) = nullptr;
    void operator()(T *p) const noexcept {
        if (p != nullptr && fn != nullptr) fn(p);
    }
};
template <typename T>
using verbs_ptr = std::unique_ptr<T, verbs_deleter<T>>;

template <typename T>
verbs_ptr<T> own(T *p, int (*fn)(T *)) {
    return verbs_ptr<T>(p, verbs_deleter<T>{fn});
}

// verbs.h inline functions, as plain function pointers for the deleters.
int destroy_flow(ibv_flow *f) { return ibv_destroy_flow(f); }
int destroy_wq(ibv_wq *w) { return ibv_destroy_wq(w); }
int destroy_ind_table(ibv_rwq_ind_table *t) { return ibv_destroy_rwq_ind_table(t); }

struct device_list {
    const ibv_lib &lib;
    ibv_device **list = nullptr;
    int n = 0;
    explicit device_list(const ibv_lib &l) : lib(l) {
        list = lib.get_device_list(&n);
        if (list == nullptr) {
            const int err = errno;
            if (err == ENOSYS || err == 0) n = 0;  // no uverbs support in the kernel at all
            else throw_errno("ibv_get_device_list", err);
        }
    }
    ~device_list() {
        if (list != nullptr) lib.free_device_list(list);
    }
    device_list(const device_list &) = delete;
    device_list &operator=(const device_list &) = delete;
};

// ---- host facts ------------------------------------------------------------------------

struct ifaddr_list {
    ifaddrs *head = nullptr;
    ifaddr_list() {
        if (getifaddrs(&head) != 0) throw_errno("getifaddrs");
    }
    ~ifaddr_list() { freeifaddrs(head); }
    ifaddr_list(const ifaddr_list &) = delete;
    ifaddr_list &operator=(const ifaddr_list &) = delete;
};

std::string interface_of_ip(const std::string &ip) {
    in_addr want{};
    if (inet_pton(AF_INET, ip.c_str(), &want) != 1)
        throw std::invalid_argument("bad IPv4 address '" + ip + "'");
    ifaddr_list l;
    for (ifaddrs *a = l.head; a != nullptr; a = a->ifa_next) {
        if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
        if (reinterpret_cast<sockaddr_in *>(a->ifa_addr)->sin_addr.s_addr == want.s_addr)
            return a->ifa_name;
    }
    throw os_error(EADDRNOTAVAIL, "no interface of this host has the address " + ip +
                                      " (see `ip -4 addr`); give the NIC's interface instead");
}

std::string ipv4_of_interface(const std::string &iface) {
    ifaddr_list l;
    for (ifaddrs *a = l.head; a != nullptr; a = a->ifa_next) {
        if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
        if (iface == a->ifa_name) {
            char buf[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(a->ifa_addr)->sin_addr, buf,
                      sizeof(buf));
            return buf;
        }
    }
    throw std::invalid_argument("interface " + iface +
                                " has no IPv4 address: assign one (`ip addr add 10.0.0.2/24 dev " +
                                iface + "`) or pass ip= with the stream's destination address");
}

bool parse_mac(const std::string &s, std::uint8_t out[6]) {
    unsigned v[6];
    if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
        return false;
    for (int i = 0; i < 6; i++) {
        if (v[i] > 255) return false;
        out[i] = static_cast<std::uint8_t>(v[i]);
    }
    return true;
}

std::string rdma_device_of(const std::string &iface) {
    const auto devs = sysfs_list("/sys/class/net/" + iface + "/device/infiniband");
    return devs.empty() ? std::string() : devs.front();
}

std::string netdev_of(const std::string &rdma_dev) {
    const auto nets = sysfs_list("/sys/class/infiniband/" + rdma_dev + "/device/net");
    return nets.empty() ? std::string() : nets.front();
}

// Effective capability bits of this process (from /proc, no libcap needed).
std::uint64_t effective_caps() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
    }
    return 0;
}

constexpr int cap_net_raw = 13;
constexpr int cap_ipc_lock = 14;

std::string grant_hint() {
    return "run as root, or grant the capability to the interpreter: `sudo setcap "
           "cap_net_raw,cap_ipc_lock+ep $(readlink -f $(which python3))` (or run inside a "
           "container started with --cap-add NET_RAW --cap-add IPC_LOCK)";
}

std::string memlock_text() {
    rlimit r{};
    if (getrlimit(RLIMIT_MEMLOCK, &r) != 0) return "unknown";
    if (r.rlim_cur == RLIM_INFINITY) return "unlimited";
    return std::to_string(r.rlim_cur / 1024) + " KiB";
}

// ---- device setup -------------------------------------------------------------------

struct device_handle {
    const ibv_lib &lib;
    verbs_ptr<ibv_context> ctx;
    verbs_ptr<ibv_pd> pd;
    std::string name;

    device_handle(const ibv_lib &l, const std::string &want) : lib(l) {
        device_list list(lib);
        if (list.n == 0)
            throw os_error(ENODEV,
                           "no RDMA device found: the ibv backend needs an NVIDIA/Mellanox "
                           "ConnectX NIC with the mlx5_ib kernel module loaded (`modprobe "
                           "mlx5_ib`; `ibv_devices` lists them); use backend='udp' otherwise");
        ibv_device *dev = nullptr;
        std::string names;
        for (int i = 0; i < list.n; i++) {
            const std::string n = lib.get_device_name(list.list[i]);
            names += (names.empty() ? "" : ", ") + n;
            if (n == want) dev = list.list[i];
        }
        if (dev == nullptr)
            throw os_error(ENODEV, "RDMA device '" + want + "' not found (devices: " + names + ")");
        name = want;
        ctx = own(lib.open_device(dev), lib.close_device);
        if (!ctx) throw_errno("cannot open RDMA device " + want);
        pd = own(lib.alloc_pd(ctx.get()), lib.dealloc_pd);
        if (!pd) throw_errno("cannot allocate a protection domain on " + want);
    }
};

verbs_ptr<ibv_mr> register_memory(const ibv_lib &lib, ibv_pd *pd, void *addr, std::size_t len,
                                  const std::string &what) {
    auto mr = own(lib.reg_mr(pd, addr, len, IBV_ACCESS_LOCAL_WRITE), lib.dereg_mr);
    if (!mr) {
        const int err = errno;
        const bool locked = (effective_caps() >> cap_ipc_lock) & 1;
        throw os_error(err, "cannot register " + std::to_string(len >> 20) + " MiB of " + what +
                                " with the NIC: " + std::strerror(err) +
                                ". The locked-memory limit is " + memlock_text() +
                                (locked ? "" : " and the process lacks CAP_IPC_LOCK") +
                                "; raise it with `ulimit -l unlimited` (or `memlock` in "
                                "/etc/security/limits.conf, LimitMEMLOCK= for systemd units)");
    }
    return mr;
}

ibv_qp *create_qp_ex(ibv_context *ctx, ibv_qp_init_attr_ex *attr) {
    verbs_context *vctx = verbs_get_ctx_op(ctx, create_qp_ex);
    if (vctx == nullptr) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    return vctx->create_qp_ex(ctx, attr);
}

[[noreturn]] void qp_error(int err, const std::string &what) {
    if (err == EPERM || err == EACCES)
        throw os_error(err, what + ": raw packet queues need CAP_NET_RAW; " + grant_hint());
    throw_errno(what, err);
}

// Flow rule buffer layout: attr, then the specs back to back.
struct flow_rule {
    ibv_flow_attr attr;
    ibv_flow_spec_eth eth;
    ibv_flow_spec_ipv4 ipv4;
    ibv_flow_spec_tcp_udp udp;
} __attribute__((packed));

}  // namespace

std::vector<std::uint8_t> flow_rule_bytes(const std::uint8_t dst_mac[6], std::uint32_t dst_ip_be,
                                          std::uint16_t dst_port, std::uint8_t ib_port) {
    flow_rule r;
    std::memset(&r, 0, sizeof(r));
    r.attr.comp_mask = 0;
    r.attr.type = IBV_FLOW_ATTR_NORMAL;
    r.attr.size = sizeof(r);
    r.attr.priority = 0;
    r.attr.num_of_specs = 3;
    r.attr.port = ib_port;
    r.attr.flags = 0;
    r.eth.type = IBV_FLOW_SPEC_ETH;
    r.eth.size = sizeof(r.eth);
    std::memcpy(r.eth.val.dst_mac, dst_mac, 6);
    std::memset(r.eth.mask.dst_mac, 0xff, 6);
    // Only the destination is matched: the FPGA's source MAC and the EtherType are
    // implied (IPv4 spec follows), and untagged frames are what the split expects.
    r.ipv4.type = IBV_FLOW_SPEC_IPV4;
    r.ipv4.size = sizeof(r.ipv4);
    r.ipv4.val.dst_ip = dst_ip_be;
    r.ipv4.mask.dst_ip = 0xffffffffu;
    r.udp.type = IBV_FLOW_SPEC_UDP;
    r.udp.size = sizeof(r.udp);
    r.udp.val.dst_port = htons(dst_port);
    r.udp.mask.dst_port = 0xffff;
    std::vector<std::uint8_t> out(sizeof(r));
    std::memcpy(out.data(), &r, sizeof(r));
    return out;
}

namespace {

// ---- the source --------------------------------------------------------------------------

struct queue {
    verbs_ptr<ibv_mr> header_mr;
    verbs_ptr<ibv_mr> scratch_mr;
    verbs_ptr<ibv_mr> ring_mr;
    std::unique_ptr<std::uint8_t[], void (*)(std::uint8_t *)> ring_mem{nullptr, [](std::uint8_t *p) {
                                                                            std::free(p);
                                                                        }};
    verbs_ptr<ibv_comp_channel> channel;
    verbs_ptr<ibv_cq> cq;
    verbs_ptr<ibv_wq> wq;
    verbs_ptr<ibv_rwq_ind_table> ind;
    verbs_ptr<ibv_qp> qp;
    std::vector<verbs_ptr<ibv_flow>> flows;  // one per destination address
    std::unique_ptr<stride_ring> ring;
    std::unique_ptr<striding_wq> wq_owner;  // striding mode: entries and doorbell owned here
    mlx5dv_cq dv{};
    std::uint32_t ci = 0;  // CQ consumer index (striding mode reads CQEs directly)
};

class ibv_source : public source {
public:
    ibv_source(const format &fmt, const ibv_options &opt, engine &eng);
    std::size_t n_threads() const override { return queues_.size(); }
    int cpu(std::size_t i) const override { return opt_.cpus.empty() ? -1 : opt_.cpus[i]; }
    void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) override;
    std::vector<std::string> warnings() const override { return warnings_; }

private:
    void setup_split_queue(std::size_t q, hds_engine &h);
    void setup_striding_queue(std::size_t q);
    void add_flow(std::size_t q);
    void run_split(std::size_t q, hds_engine &h, const std::atomic<bool> &stop);
    void run_striding(std::size_t q, engine &eng, const std::atomic<bool> &stop);
    bool wait_for_completion(queue &qu);
    void stop_queue(queue &qu);

    const ibv_lib &lib_;
    format fmt_;
    ibv_options opt_;
    std::uint8_t mac_[6] = {};
    std::uint32_t ip_be_ = 0;
    std::unique_ptr<device_handle> dev_;
    verbs_ptr<ibv_mr> pool_mr_;
    std::vector<queue> queues_;
    std::vector<std::string> warnings_;
    unsigned log_stride_ = 11;
    unsigned log_strides_ = 9;
};

ibv_source::ibv_source(const format &fmt, const ibv_options &opt, engine &eng)
    : lib_(ibv_lib::get()), fmt_(fmt), opt_(opt) {
    if (opt_.queues == 0 || opt_.queues > 64)
        throw std::invalid_argument("queues must be 1..64, got " + std::to_string(opt_.queues));
    if (!opt_.cpus.empty() && opt_.cpus.size() != opt_.queues)
        throw std::invalid_argument("cpus lists " + std::to_string(opt_.cpus.size()) +
                                    " CPUs for " + std::to_string(opt_.queues) + " queues");
    if (opt_.rq != "split" && opt_.rq != "striding")
        throw std::invalid_argument("rq must be 'split' or 'striding', got '" + opt_.rq + "'");
    if (opt_.rq == "striding" && !opt_.busy_poll)
        throw std::invalid_argument("rq='striding' reads completions directly and always busy-polls; "
                                    "use busy_poll=True (or rq='split')");
    if (opt_.port == 0 || opt_.port + opt_.queues - 1 > 65535)
        throw std::invalid_argument("port must be 1..65535 (queue q listens on port + q), got " +
                                    std::to_string(opt_.port));
    if (fmt_.udp_port != 0 && opt_.queues == 1 && fmt_.udp_port != opt_.port)
        throw std::invalid_argument("the format's udp_port " + std::to_string(fmt_.udp_port) +
                                    " differs from port " + std::to_string(opt_.port));
    if (opt_.interface.empty() && opt_.ip.empty() && opt_.device.empty())
        throw std::invalid_argument("the ibv backend needs interface=, ip= or device=");
    std::string iface = opt_.interface;
    if (iface.empty() && !opt_.ip.empty()) iface = interface_of_ip(opt_.ip);
    std::string devname = opt_.device;
    if (iface.empty()) iface = netdev_of(devname);
    if (devname.empty()) {
        devname = rdma_device_of(iface);
        if (devname.empty())
            throw os_error(ENODEV,
                           "interface " + iface + " has no RDMA device: it is not a ConnectX "
                           "(mlx5) port, or the mlx5_ib module is not loaded (`modprobe mlx5_ib`; "
                           "`rdma link` shows the mapping)");
    }
    if (iface.empty())
        throw std::invalid_argument("RDMA device " + devname +
                                    " has no network interface; give interface= and ip=");
    opt_.interface = iface;
    if (opt_.ip.empty()) opt_.ip = ipv4_of_interface(iface);
    in_addr a{};
    if (inet_pton(AF_INET, opt_.ip.c_str(), &a) != 1)
        throw std::invalid_argument("bad IPv4 address '" + opt_.ip + "'");
    ip_be_ = a.s_addr;
    const std::string mac_path = "/sys/class/net/" + iface + "/address";
    const std::string mac = opt_.mac.empty() ? sysfs_read(mac_path) : opt_.mac;
    if (mac.empty())
        throw std::invalid_argument("cannot read the MAC address of " + iface + " from " + mac_path);
    if (!parse_mac(mac, mac_))
        throw std::invalid_argument("cannot use MAC address '" + mac + "' of " + iface);
    const std::string mtu_text = sysfs_read("/sys/class/net/" + iface + "/mtu");
    const std::size_t ip_len = 20 + 8 + fmt_.max_udp_payload();
    if (!mtu_text.empty() && std::stoul(mtu_text) < ip_len)
        throw std::invalid_argument("MTU " + mtu_text + " of " + iface + " is smaller than the " +
                                    std::to_string(ip_len) + "-byte IP packets of " +
                                    std::to_string(fmt_.max_udp_payload()) +
                                    "-byte payloads: `ip link set dev " + iface + " mtu 9000`");
    if (!((effective_caps() >> cap_net_raw) & 1))
        throw os_error(EPERM, "the ibv backend needs CAP_NET_RAW to receive raw packets; " +
                                  grant_hint());

    dev_ = std::make_unique<device_handle>(lib_, devname);
    chunk_pool &pool = eng.pool();
    std::uint8_t *base = pool.get(0)->data;
    const std::size_t len = static_cast<std::size_t>(pool.get(pool.size() - 1)->data - base) +
                            pool.packets_per_chunk() * pool.payload_size();
    queues_.resize(opt_.queues);
    if (opt_.rq == "split") {
        auto *h = dynamic_cast<hds_engine *>(&eng);
        if (h == nullptr) throw std::logic_error("rq='split' needs the header-split engine");
        pool_mr_ = register_memory(lib_, dev_->pd.get(), base, len, "chunk memory");
        for (std::size_t q = 0; q < queues_.size(); q++) setup_split_queue(q, *h);
    } else {
        if (!lib_.has_mlx5())
            throw ibv_unavailable("rq='striding' needs libmlx5 (rdma-core's ibverbs-providers) "
                                  "with the mlx5dv API; use rq='split'");
        for (std::size_t q = 0; q < queues_.size(); q++) setup_striding_queue(q);
    }
    for (std::size_t q = 0; q < queues_.size(); q++) add_flow(q);
    rlimit r{};
    if (getrlimit(RLIMIT_MEMLOCK, &r) == 0 && r.rlim_cur != RLIM_INFINITY &&
        !((effective_caps() >> cap_ipc_lock) & 1))
        warnings_.push_back("locked-memory limit is " + memlock_text() +
                            "; larger captures need `ulimit -l unlimited`");
}

void ibv_source::setup_split_queue(std::size_t q, hds_engine &h) {
    queue &qu = queues_[q];
    ibv_context *ctx = dev_->ctx.get();
    if (!opt_.busy_poll) {
        qu.channel = own(lib_.create_comp_channel(ctx), lib_.destroy_comp_channel);
        if (!qu.channel) throw_errno("cannot create a completion channel");
    }
    const int cqe = static_cast<int>(h.depth());
    qu.cq = own(lib_.create_cq(ctx, cqe, nullptr, qu.channel.get(), 0), lib_.destroy_cq);
    if (!qu.cq) throw_errno("cannot create a completion queue of " + std::to_string(cqe));
    qu.header_mr = register_memory(lib_, dev_->pd.get(), h.header_ring(q), h.header_ring_bytes(),
                                   "header ring");
    qu.scratch_mr = register_memory(lib_, dev_->pd.get(), h.scratch_ring(q), h.scratch_bytes(),
                                    "scratch ring");
    ibv_qp_init_attr qa{};
    qa.send_cq = qu.cq.get();
    qa.recv_cq = qu.cq.get();
    qa.qp_type = IBV_QPT_RAW_PACKET;
    qa.cap.max_send_wr = 1;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_wr = static_cast<std::uint32_t>(h.depth());
    qa.cap.max_recv_sge = 3;  // SPEAD formats: the packet's bytes beyond the prediction
    qu.qp = own(lib_.create_qp(dev_->pd.get(), &qa), lib_.destroy_qp);
    if (!qu.qp) qp_error(errno, "cannot create a raw packet queue pair on " + dev_->name);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = opt_.ib_port;
    if (int rc = lib_.modify_qp(qu.qp.get(), &attr, IBV_QP_STATE | IBV_QP_PORT))
        qp_error(rc, "cannot move the queue pair to INIT (port " + std::to_string(opt_.ib_port) + ")");
    attr = ibv_qp_attr{};
    attr.qp_state = IBV_QPS_RTR;
    if (int rc = lib_.modify_qp(qu.qp.get(), &attr, IBV_QP_STATE))
        qp_error(rc, "cannot move the queue pair to RTR");
}

void ibv_source::setup_striding_queue(std::size_t q) {
    queue &qu = queues_[q];
    ibv_context *ctx = dev_->ctx.get();
    mlx5dv_context dvc{};
    dvc.comp_mask = MLX5DV_CONTEXT_MASK_STRIDING_RQ;
    if (lib_.mlx5_query_device(ctx, &dvc) != 0 || !(dvc.comp_mask & MLX5DV_CONTEXT_MASK_STRIDING_RQ))
        throw ibv_unavailable(dev_->name + " does not offer the striding RQ; use rq='split'");
    const auto &caps = dvc.striding_rq_caps;
    auto clamp = [](unsigned v, unsigned lo, unsigned hi) { return v < lo ? lo : v > hi ? hi : v; };
    log_stride_ = clamp(11, caps.min_single_stride_log_num_of_bytes,
                        caps.max_single_stride_log_num_of_bytes);
    log_strides_ = clamp(9, caps.min_single_wqe_log_num_of_strides,
                         caps.max_single_wqe_log_num_of_strides);
    const std::size_t wqe_bytes = std::size_t{1} << (log_stride_ + log_strides_);
    const std::size_t frame = split_layout::headers + fmt_.payload_size;
    std::size_t n_wqe = 4;
    while (n_wqe * wqe_bytes < opt_.depth * frame && n_wqe < 4096) n_wqe *= 2;
    void *mem = nullptr;
    if (posix_memalign(&mem, 4096, n_wqe * wqe_bytes) != 0) throw std::bad_alloc();
    qu.ring_mem.reset(static_cast<std::uint8_t *>(mem));
    std::memset(mem, 0, n_wqe * wqe_bytes);
    qu.ring = std::make_unique<stride_ring>(qu.ring_mem.get(), n_wqe, log_stride_, log_strides_);
    qu.ring_mr = register_memory(lib_, dev_->pd.get(), mem, n_wqe * wqe_bytes, "striding ring");
    const int cqe = static_cast<int>(n_wqe << log_strides_);
    qu.cq = own(lib_.create_cq(ctx, cqe, nullptr, nullptr, 0), lib_.destroy_cq);
    if (!qu.cq) throw_errno("cannot create a completion queue of " + std::to_string(cqe));
    ibv_wq_init_attr wa{};
    wa.wq_type = IBV_WQT_RQ;
    wa.max_wr = static_cast<std::uint32_t>(n_wqe);
    wa.max_sge = 1;
    wa.pd = dev_->pd.get();
    wa.cq = qu.cq.get();
    mlx5dv_wq_init_attr mwa{};
    mwa.comp_mask = MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ;
    mwa.striding_rq_attrs.single_stride_log_num_of_bytes = log_stride_;
    mwa.striding_rq_attrs.single_wqe_log_num_of_strides = log_strides_;
    mwa.striding_rq_attrs.two_byte_shift_en = 0;
    qu.wq = own(lib_.mlx5_create_wq(ctx, &wa, &mwa), destroy_wq);
    if (!qu.wq) qp_error(errno, "cannot create the striding receive queue on " + dev_->name);
    ibv_wq_attr wqa{};
    wqa.attr_mask = IBV_WQ_ATTR_STATE;
    wqa.wq_state = IBV_WQS_RDY;
    if (int rc = ibv_modify_wq(qu.wq.get(), &wqa)) throw_errno("cannot make the receive queue ready", rc);
    ibv_wq *wqs[1] = {qu.wq.get()};
    ibv_rwq_ind_table_init_attr ia{};
    ia.log_ind_tbl_size = 0;
    ia.ind_tbl = wqs;
    qu.ind = own(ibv_create_rwq_ind_table(ctx, &ia), destroy_ind_table);
    if (!qu.ind) throw_errno("cannot create the receive indirection table");
    // One work queue behind the table: the hash only has to be valid, not spread.
    static std::uint8_t key[40] = {0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7, 0xfc, 0xa2,
                                   0x83, 0x19, 0xdb, 0x1a, 0x3e, 0x94, 0x6b, 0x9e, 0x38, 0xd9,
                                   0x2c, 0x9c, 0x03, 0xd1, 0xad, 0x99, 0x44, 0xa7, 0xd9, 0x56,
                                   0x3d, 0x59, 0x06, 0x3c, 0x25, 0xf3, 0xfc, 0x1f, 0xdc, 0x2a};
    ibv_qp_init_attr_ex qa{};
    qa.qp_type = IBV_QPT_RAW_PACKET;
    qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
    qa.pd = dev_->pd.get();
    qa.rwq_ind_tbl = qu.ind.get();
    qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
    qa.rx_hash_conf.rx_hash_key_len = sizeof(key);
    qa.rx_hash_conf.rx_hash_key = key;
    qa.rx_hash_conf.rx_hash_fields_mask = 0;
    qu.qp = own(create_qp_ex(ctx, &qa), lib_.destroy_qp);
    if (!qu.qp) qp_error(errno, "cannot create the RSS raw packet queue pair on " + dev_->name);
    mlx5dv_rwq dv_wq{};
    mlx5dv_obj obj{};
    obj.cq.in = qu.cq.get();
    obj.cq.out = &qu.dv;
    obj.rwq.in = qu.wq.get();
    obj.rwq.out = &dv_wq;
    if (int rc = lib_.mlx5_init_obj(&obj, MLX5DV_OBJ_CQ | MLX5DV_OBJ_RWQ))
        throw_errno("mlx5dv_init_obj(CQ, RWQ)", rc);
    // Every entry of the provider's ring gets a buffer of its own: the NIC walks the
    // ring in order, so an entry without one would stop it.
    if (dv_wq.wqe_cnt != n_wqe)
        throw std::runtime_error("striding receive queue has " + std::to_string(dv_wq.wqe_cnt) +
                                 " entries, not the " + std::to_string(n_wqe) + " asked for");
    if (qu.dv.cqe_size != 64 && qu.dv.cqe_size != 128)
        throw std::runtime_error("unexpected CQE size " + std::to_string(qu.dv.cqe_size));
    qu.wq_owner = std::make_unique<striding_wq>(static_cast<std::uint8_t *>(dv_wq.buf),
                                                dv_wq.stride, dv_wq.wqe_cnt, dv_wq.dbrec);
    for (std::uint32_t k = 0; k < n_wqe; k++)
        qu.wq_owner->write(k, reinterpret_cast<std::uintptr_t>(qu.ring->wqe(k)),
                           static_cast<std::uint32_t>(qu.ring->wqe_bytes()), qu.ring_mr->lkey);
    qu.wq_owner->post_all();
    qu.wq_owner->ring();
}

void ibv_source::add_flow(std::size_t q) {
    queue &qu = queues_[q];
    const auto port = static_cast<std::uint16_t>(opt_.port + q);
    // Unicast: the interface's MAC and address; multicast: each group's.
    std::vector<std::pair<std::uint32_t, std::array<std::uint8_t, 6>>> dests;
    if (opt_.groups.empty()) {
        std::array<std::uint8_t, 6> mac{};
        std::memcpy(mac.data(), mac_, 6);
        dests.emplace_back(ip_be_, mac);
    }
    for (const std::string &group : opt_.groups) {
        in_addr a{};
        if (inet_pton(AF_INET, group.c_str(), &a) != 1)
            throw std::invalid_argument("bad IPv4 multicast group '" + group + "'");
        std::array<std::uint8_t, 6> mac{};
        multicast_mac(a.s_addr, mac.data());
        dests.emplace_back(a.s_addr, mac);
    }
    for (const auto &[ip_be, mac] : dests) {
        auto rule = flow_rule_bytes(mac.data(), ip_be, port, opt_.ib_port);
        verbs_ptr<ibv_flow> flow =
            own(ibv_create_flow(qu.qp.get(), reinterpret_cast<ibv_flow_attr *>(rule.data())),
                destroy_flow);
        if (!flow) {
            const int err = errno;
            char text[INET_ADDRSTRLEN] = {};
            inet_ntop(AF_INET, &ip_be, text, sizeof(text));
            std::string hint =
                err == EPERM || err == EACCES
                    ? "flow rules on raw packet queues need CAP_NET_RAW; " + grant_hint()
                    : "the device or firmware refused the rule (another rule with the same "
                      "match, flow steering disabled in the firmware, or an IP/port already "
                      "taken by a kernel-bypass application)";
            throw os_error(err, std::string("cannot steer ") + text + ":" +
                                    std::to_string(port) + " to queue " + std::to_string(q) +
                                    " on " + dev_->name + ": " + std::strerror(err) + "; " + hint);
        }
        qu.flows.push_back(std::move(flow));
    }
}

bool ibv_source::wait_for_completion(queue &qu) {
    // Arm, re-check (a completion may have raced the arming), then sleep on the channel.
    if (int rc = ibv_req_notify_cq(qu.cq.get(), 0)) throw_errno("ibv_req_notify_cq", rc);
    pollfd p{qu.channel->fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, 100);
    if (rc < 0 && errno != EINTR) throw_errno("poll on completion channel");
    if (rc > 0) {
        ibv_cq *cq = nullptr;
        void *cq_ctx = nullptr;
        if (lib_.get_cq_event(qu.channel.get(), &cq, &cq_ctx) == 0) lib_.ack_cq_events(cq, 1);
        return true;
    }
    return false;
}

void ibv_source::stop_queue(queue &qu) {
    // RESET flushes posted receives without writing them: after this the chunks the
    // receives pointed into are safe to hand out.
    if (qu.wq) {
        ibv_wq_attr a{};
        a.attr_mask = IBV_WQ_ATTR_STATE;
        a.wq_state = IBV_WQS_RESET;
        ibv_modify_wq(qu.wq.get(), &a);
    } else if (qu.qp) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RESET;
        lib_.modify_qp(qu.qp.get(), &a, IBV_QP_STATE);
    }
}

void ibv_source::run(std::size_t i, engine &eng, const std::atomic<bool> &stop) {
    if (opt_.rq == "split")
        run_split(i, dynamic_cast<hds_engine &>(eng), stop);
    else
        run_striding(i, eng, stop);
}

void ibv_source::run_split(std::size_t q, hds_engine &h, const std::atomic<bool> &stop) {
    queue &qu = queues_[q];
    constexpr std::size_t n_batch = batch_size;
    recv_target targets[n_batch];
    ibv_recv_wr wrs[n_batch];
    ibv_sge sges[n_batch][3];
    ibv_wc wcs[n_batch];
    recv_completion comps[n_batch];
    std::size_t outstanding = 0;
    const std::size_t depth = h.depth();
    struct guard {
        ibv_source &s;
        queue &qu;
        hds_engine &h;
        std::size_t q;
        ~guard() {
            s.stop_queue(qu);
            h.cancel(q);
        }
    } g{*this, qu, h, q};
    while (!stop.load(std::memory_order_relaxed)) {
        while (outstanding < depth) {
            const std::size_t n = h.post(q, targets, std::min(n_batch, depth - outstanding));
            if (n == 0) break;
            for (std::size_t j = 0; j < n; j++) {
                sges[j][0] = ibv_sge{reinterpret_cast<std::uintptr_t>(targets[j].header),
                                     targets[j].header_len, qu.header_mr->lkey};
                sges[j][1] = ibv_sge{reinterpret_cast<std::uintptr_t>(targets[j].payload),
                                     targets[j].payload_len,
                                     targets[j].scratch ? qu.scratch_mr->lkey : pool_mr_->lkey};
                wrs[j] = ibv_recv_wr{};
                wrs[j].wr_id = targets[j].wr_id;
                sges[j][2] = ibv_sge{reinterpret_cast<std::uintptr_t>(targets[j].tail),
                                     targets[j].tail_len, qu.header_mr->lkey};
                wrs[j].sg_list = sges[j];
                wrs[j].num_sge = targets[j].tail_len != 0 ? 3 : 2;
                wrs[j].next = j + 1 < n ? &wrs[j + 1] : nullptr;
            }
            ibv_recv_wr *bad = nullptr;
            if (int rc = ibv_post_recv(qu.qp.get(), wrs, &bad)) throw_errno("ibv_post_recv", rc);
            outstanding += n;
        }
        const int n = ibv_poll_cq(qu.cq.get(), static_cast<int>(n_batch), wcs);
        if (n < 0) throw std::runtime_error("ibv_poll_cq failed on queue " + std::to_string(q));
        if (n == 0) {
            if (outstanding == 0)
                std::this_thread::sleep_for(std::chrono::microseconds(50));  // consumer is slow
            else if (!opt_.busy_poll)
                wait_for_completion(qu);
            continue;
        }
        for (int j = 0; j < n; j++) {
            comps[j].wr_id = wcs[j].wr_id;
            comps[j].byte_len = wcs[j].byte_len;
            comps[j].ok = wcs[j].status == IBV_WC_SUCCESS;
        }
        h.complete(q, comps, static_cast<std::size_t>(n));
        outstanding -= static_cast<std::size_t>(n);
    }
}

void ibv_source::run_striding(std::size_t q, engine &eng, const std::atomic<bool> &stop) {
    queue &qu = queues_[q];
    packet_ref batch[batch_size];
    std::int64_t done_wqes[batch_size];
    const std::uint32_t cnt = qu.dv.cqe_cnt;
    const std::size_t csz = qu.dv.cqe_size;
    struct guard {
        ibv_source &s;
        queue &qu;
        ~guard() { s.stop_queue(qu); }
    } g{*this, qu};
    while (!stop.load(std::memory_order_relaxed)) {
        std::size_t n = 0, n_done = 0;
        while (n < batch_size && n_done < batch_size) {
            const auto *entry = static_cast<const std::uint8_t *>(qu.dv.buf) +
                                static_cast<std::size_t>(qu.ci & (cnt - 1)) * csz;
            // With 128-byte CQEs the 64-byte completion is the entry's second half.
            const std::uint8_t *cqe = entry + (csz == 128 ? 64 : 0);
            if (!cqe_sw_owned(cqe, qu.ci, cnt)) break;
            std::atomic_thread_fence(std::memory_order_acquire);  // read after the owner bit
            cqe_info c = parse_cqe64(cqe);
            qu.ci++;
            c.wqe_id = static_cast<std::uint16_t>(c.wqe_id % qu.ring->n_wqe());  // entry k owns buffer k
            if (c.opcode == mlx5::op_resp_err || c.opcode == mlx5::op_req_err)
                throw std::runtime_error("receive error completion on queue " + std::to_string(q) +
                                         ": syndrome 0x" + std::to_string(c.syndrome) +
                                         ", vendor syndrome 0x" +
                                         std::to_string(c.vendor_syndrome));
            std::int64_t done = -1;
            const stride_ring::packet p = qu.ring->consume(c, done);
            if (p.valid)
                batch[n++] = parse_frame(p.data, p.size, linktype::ethernet, fmt_.udp_port)
                                 .value_or(packet_ref{});
            if (done >= 0) done_wqes[n_done++] = done;
        }
        if (n == 0 && n_done == 0) continue;  // busy poll
        std::atomic_thread_fence(std::memory_order_release);
        qu.dv.dbrec[0] = htonl(qu.ci & 0xffffff);
        if (n) eng.add_batch(q, batch, n);
        // Only now, with the packets copied out, may the NIC refill those WQEs.
        for (std::size_t j = 0; j < n_done; j++)
            qu.wq_owner->repost(static_cast<std::uint32_t>(done_wqes[j]));
        if (n_done) qu.wq_owner->ring();
    }
}

std::string port_state(ibv_port_state s) {
    switch (s) {
        case IBV_PORT_DOWN: return "down";
        case IBV_PORT_INIT: return "init";
        case IBV_PORT_ARMED: return "armed";
        case IBV_PORT_ACTIVE: return "active";
        default: return "state " + std::to_string(static_cast<int>(s));
    }
}

double lane_gbps(std::uint8_t speed) {
    switch (speed) {
        case 1: return 2.5;
        case 2: return 5.0;
        case 4: return 10.0;
        case 8: return 10.3125;
        case 16: return 14.0625;
        case 32: return 25.78125;
        case 64: return 53.125;
        case 128: return 106.25;
        default: return 0.0;
    }
}

int lanes_of(std::uint8_t width) {
    switch (width) {
        case 1: return 1;
        case 2: return 4;
        case 4: return 8;
        case 8: return 12;
        case 16: return 2;
        default: return 0;
    }
}

}  // namespace

std::unique_ptr<capture> make_ibv_capture(const format &fmt, const engine_config &cfg,
                                          const ibv_options &opt) {
    ibv_lib::get();  // fail first, and clearly, when rdma-core is absent
    std::shared_ptr<engine> eng;
    if (opt.rq == "split")
        eng = std::make_shared<hds_engine>(fmt, cfg, opt.queues, opt.depth);
    else
        eng = std::make_shared<engine>(fmt, cfg);
    auto src = std::make_unique<ibv_source>(fmt, opt, *eng);
    return std::make_unique<capture>(std::move(eng), std::move(src));
}

std::vector<ibv_device_report> ibv_list_devices() {
    const ibv_lib &lib = ibv_lib::get();
    device_list list(lib);
    std::vector<ibv_device_report> out;
    for (int i = 0; i < list.n; i++) {
        ibv_device_report r;
        r.name = lib.get_device_name(list.list[i]);
        r.netdev = netdev_of(r.name);
        r.dmabuf = lib.reg_dmabuf_mr != nullptr;
        r.mlx5 = lib.has_mlx5() && lib.mlx5_is_supported(list.list[i]);
        auto ctx = own(lib.open_device(list.list[i]), lib.close_device);
        if (!ctx) {
            r.error = std::string("cannot open: ") + std::strerror(errno);
            out.push_back(r);
            continue;
        }
        ibv_device_attr da{};
        if (lib.query_device(ctx.get(), &da) == 0) r.firmware = da.fw_ver;
        r.raw_packet = (da.device_cap_flags & IBV_DEVICE_RAW_IP_CSUM) != 0;
        ibv_port_attr pa{};
        if (lib.query_port(ctx.get(), 1, &pa) == 0) {
            r.state = port_state(pa.state);
            r.active_mtu = 128 << static_cast<int>(pa.active_mtu);
            r.link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet"
                           : pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
                                                                         : "unspecified";
            r.speed_gbps = lane_gbps(pa.active_speed) * lanes_of(pa.active_width);
        } else {
            r.error = "cannot query port 1";
        }
        r.transport = list.list[i]->transport_type == IBV_TRANSPORT_IB ? "IB" : "other";
        if (r.mlx5) {
            mlx5dv_context dvc{};
            dvc.comp_mask = MLX5DV_CONTEXT_MASK_STRIDING_RQ;
            if (lib.mlx5_query_device(ctx.get(), &dvc) == 0 &&
                (dvc.comp_mask & MLX5DV_CONTEXT_MASK_STRIDING_RQ)) {
                const auto &c = dvc.striding_rq_caps;
                r.striding_rq = c.max_single_wqe_log_num_of_strides > 0;
                r.striding_range = "stride 2^" + std::to_string(c.min_single_stride_log_num_of_bytes) +
                                   "..2^" + std::to_string(c.max_single_stride_log_num_of_bytes) +
                                   " B, 2^" + std::to_string(c.min_single_wqe_log_num_of_strides) +
                                   "..2^" + std::to_string(c.max_single_wqe_log_num_of_strides) +
                                   " strides per WQE";
            }
        }
        out.push_back(r);
    }
    return out;
}

// ---- GPUDirect registration -----------------------------------------------------------

namespace {

}  // namespace

std::string ibv_gpu_register_check(const std::string &device, int gpu, std::size_t bytes) {
    const ibv_lib &lib = ibv_lib::get();
    if (gpu < 0) throw std::invalid_argument("no CUDA device " + std::to_string(gpu));
    // The one CUDA driver loader of the extension (cuda_driver.h).
    std::shared_ptr<const cu::device> gpu_dev;
    try {
        gpu_dev = std::make_shared<const cu::device>(gpu);
    } catch (const cu::error &e) {
        if (gpu >= cu::device_count())
            throw std::invalid_argument("no CUDA device " + std::to_string(gpu) + ": " + e.what());
        throw;
    }
    const cu::driver &cu = gpu_dev->drv();
    gpu_dev->make_current();
    // dma-buf export works on whole GPU pages: keep the range 2 MiB aligned.
    const std::size_t len = (std::max<std::size_t>(bytes, 1) + (2u << 20) - 1) / (2u << 20) * (2u << 20);
    cu::device_memory mem(gpu_dev, len);
    const cu::deviceptr ptr = mem.get();
    device_handle d(lib, device);
    const int access = IBV_ACCESS_LOCAL_WRITE;
    std::string dmabuf_why;
    int supported = 0;
    cu.cuDeviceGetAttribute(&supported, cu::attr_dma_buf_supported, gpu_dev->handle());
    if (lib.reg_dmabuf_mr == nullptr) {
        dmabuf_why = "rdma-core has no ibv_reg_dmabuf_mr (needs v34+)";
    } else if (cu.cuMemGetHandleForAddressRange == nullptr) {
        dmabuf_why = "the CUDA driver cannot export dma-bufs (needs 11.7+)";
    } else if (!supported) {
        dmabuf_why = "GPU " + std::to_string(gpu) +
                     " does not support dma-buf export (consumer GPU, or the open kernel "
                     "modules are not in use: dma-buf needs nvidia-open)";
    } else {
        int fd = -1;
        if (cu::result rc = cu.cuMemGetHandleForAddressRange(&fd, ptr, len,
                                                             cu::mem_range_handle_dma_buf_fd, 0)) {
            dmabuf_why = "cuMemGetHandleForAddressRange: " + cu.error_text(rc);
        } else {
            auto mr = own(lib.reg_dmabuf_mr(d.pd.get(), 0, len, ptr, fd, access), lib.dereg_mr);
            const int err = errno;
            ::close(fd);
            if (mr) return "dmabuf";
            dmabuf_why = std::string("ibv_reg_dmabuf_mr: ") + std::strerror(err) +
                         " (kernel older than 5.12, or the NIC driver lacks dma-buf import)";
        }
    }
    auto mr = own(lib.reg_mr(d.pd.get(), reinterpret_cast<void *>(ptr), len, access), lib.dereg_mr);
    if (mr) return "peermem";
    const int err = errno;
    throw os_error(err, "cannot register GPU memory with " + device + ": dma-buf: " + dmabuf_why +
                            "; peermem: ibv_reg_mr on GPU memory failed (" + std::strerror(err) +
                            ": load nvidia-peermem with `modprobe nvidia-peermem`, and check "
                            "that the IOMMU is off or in passthrough (iommu=pt) so that the NIC "
                            "can reach GPU BAR memory)");
}

}  // namespace casper400g_rx

#endif  // CASPER400G_RX_HAVE_IBV
