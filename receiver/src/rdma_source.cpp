#include "casper400g_rx/rdma_source.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <stdexcept>
#include <string>

#include "casper400g_rx/cuda_driver.h"
#include "casper400g_rx/cuda_fatbin.h"
#include "casper400g_rx/errors.h"
#include "casper400g_rx/fd.h"
#include "casper400g_rx/sysfs.h"
#ifdef CASPER400G_RX_HAVE_IBV
#include "casper400g_rx/ibv_lib.h"
#endif

namespace casper400g_rx {

namespace {

in_addr parse_ipv4(const std::string &what, const std::string &s) {
    in_addr a{};
    if (inet_pton(AF_INET, s.c_str(), &a) != 1)
        throw std::invalid_argument(what + " must be an IPv4 address, got '" + s + "'");
    return a;
}

// The credit datagrams' socket: UDP from `ip` (when given) to the core.
unique_fd credit_socket(const rdma_options &o) {
    if (o.credit_port == 0) return unique_fd();
    const in_addr peer = parse_ipv4("peer_ip", o.peer_ip);
    unique_fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd) throw_errno("socket(AF_INET, SOCK_DGRAM) for credits");
    if (!o.ip.empty()) {
        sockaddr_in local{};
        local.sin_family = AF_INET;
        local.sin_addr = parse_ipv4("ip", o.ip);
        if (::bind(fd.get(), reinterpret_cast<sockaddr *>(&local), sizeof(local)) != 0)
            throw_errno("bind the credit socket to " + o.ip);
    }
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_addr = peer;
    dst.sin_port = htons(o.credit_port);
    if (::connect(fd.get(), reinterpret_cast<sockaddr *>(&dst), sizeof(dst)) != 0)
        throw_errno("connect the credit socket to " + o.peer_ip + ":" +
                    std::to_string(o.credit_port));
    return fd;
}

struct free_deleter {
    void operator()(void *p) const noexcept { std::free(p); }
};

#ifdef CASPER400G_RX_HAVE_IBV
template <class T, class D>
struct verbs_owner {
    T *p = nullptr;
    D d = nullptr;
    verbs_owner() = default;
    verbs_owner(T *ptr, D del) : p(ptr), d(del) {}
    verbs_owner(const verbs_owner &) = delete;
    verbs_owner &operator=(const verbs_owner &) = delete;
    verbs_owner &operator=(verbs_owner &&o) noexcept {
        reset();
        p = std::exchange(o.p, nullptr);
        d = o.d;
        return *this;
    }
    ~verbs_owner() { reset(); }
    void reset() noexcept {
        if (p != nullptr && d != nullptr) d(p);
        p = nullptr;
    }
    T *get() const noexcept { return p; }
    explicit operator bool() const noexcept { return p != nullptr; }
};

// A RoCEv2 GID holding an IPv4-mapped address, read from sysfs (rxe and mlx5 alike).
struct gid_choice {
    int index = -1;
    std::string gid;
    std::string ip;
    std::string netdev;
};

gid_choice find_gid(const std::string &dev, const std::string &want_ip) {
    const std::string base = "/sys/class/infiniband/" + dev + "/ports/1/";
    for (int i = 0; i < 256; i++) {
        const std::string gid = sysfs_read(base + "gids/" + std::to_string(i));
        if (gid.empty()) break;
        if (sysfs_read(base + "gid_attrs/types/" + std::to_string(i)) != "RoCE v2") continue;
        // ::ffff:a.b.c.d as sysfs writes it: 0000:0000:0000:0000:0000:ffff:aabb:ccdd
        if (gid.rfind("0000:0000:0000:0000:0000:ffff:", 0) != 0) continue;
        const unsigned hi = std::stoul(gid.substr(30, 4), nullptr, 16);
        const unsigned lo = std::stoul(gid.substr(35, 4), nullptr, 16);
        const std::string ip = std::to_string(hi >> 8) + "." + std::to_string(hi & 0xFF) + "." +
                               std::to_string(lo >> 8) + "." + std::to_string(lo & 0xFF);
        if (!want_ip.empty() && ip != want_ip) continue;
        return {i, "::ffff:" + ip, ip, sysfs_read(base + "gid_attrs/ndevs/" + std::to_string(i))};
    }
    return {};
}

ibv_mtu mtu_enum(int mtu) {
    switch (mtu) {
        case 1024: return IBV_MTU_1024;
        case 2048: return IBV_MTU_2048;
        case 4096: return IBV_MTU_4096;
        default: throw std::invalid_argument("mtu must be 1024, 2048 or 4096, got " + std::to_string(mtu));
    }
}
#endif

}  // namespace

struct rdma_capture::impl {
    std::unique_ptr<std::uint8_t, free_deleter> host;
    std::shared_ptr<const cu::device> gpu;
    std::unique_ptr<cu::device_memory> gpu_mem;
    std::unique_ptr<cu::device_memory> gpu_present;   // chunks * slots flags on the GPU
    std::unique_ptr<cu::mapped_host_memory> gpu_out;  // present flags + count, host-mapped
    std::unique_ptr<cu::stream_owner> stream;
    cu::module mod = nullptr;
    cu::function present_fn = nullptr;
    unique_fd credit_fd;
    std::uint64_t base = 0;  // ring address (host pointer or device address)
#ifdef CASPER400G_RX_HAVE_IBV
    const ibv_lib *lib = nullptr;
    verbs_owner<ibv_context, int (*)(ibv_context *)> ctx;
    verbs_owner<ibv_pd, int (*)(ibv_pd *)> pd;
    verbs_owner<ibv_comp_channel, int (*)(ibv_comp_channel *)> channel;
    verbs_owner<ibv_cq, int (*)(ibv_cq *)> cq;
    verbs_owner<ibv_qp, int (*)(ibv_qp *)> qp;
    verbs_owner<ibv_mr, int (*)(ibv_mr *)> mr;
#endif
    ~impl() {
        if (mod != nullptr && gpu) gpu->drv().cuModuleUnload(mod);
    }
};

bool rdma_capture::on_gpu() const noexcept { return opt_.gpu >= 0; }

std::size_t rdma_capture::count_offset() const noexcept { return (geom_.slots + 7) / 8 * 8; }

std::uint64_t rdma_capture::present_gpu(std::size_t place) const noexcept {
    return impl_->gpu_present ? impl_->gpu_present->get() + place * geom_.slots : 0;
}

void rdma_capture::gpu_synchronize(std::uintptr_t stream) const {
    const impl &m = *impl_;
    if (!m.gpu) return;
    m.gpu->make_current();
    if (stream != 0)
        m.gpu->check(m.gpu->drv().cuStreamSynchronize(reinterpret_cast<cu::stream>(stream)),
                     "cuStreamSynchronize");
    else
        m.gpu->check(m.gpu->drv().cuCtxSynchronize(), "cuCtxSynchronize");
}

std::uint64_t rdma_capture::place_address(std::size_t place) const noexcept {
    return impl_->base + place * geom_.chunk_bytes();
}

rdma_capture::rdma_capture(const rdma_geometry &g, const rdma_options &o)
    : opt_(o), geom_(g), impl_(std::make_unique<impl>()) {
    geom_.validate();
    if (opt_.mtu != 1024 && opt_.mtu != 2048 && opt_.mtu != 4096)
        throw std::invalid_argument("mtu must be 1024, 2048 or 4096, got " + std::to_string(opt_.mtu));
    if (opt_.psn > 0xFF'FFFF) throw std::invalid_argument("psn must be < 2^24, got " + std::to_string(opt_.psn));
    if (!opt_.peer_ip.empty()) parse_ipv4("peer_ip", opt_.peer_ip);
    if (opt_.credit_port != 0 && opt_.peer_ip.empty())
        throw std::invalid_argument("credit_port needs peer_ip (the core's address)");
    const std::size_t bytes = geom_.ring_bytes();
    impl &m = *impl_;

    // Ring memory.
    params_.memory = "host";
    if (on_gpu()) {
        m.gpu = std::make_shared<const cu::device>(opt_.gpu);
        m.gpu->make_current();
        // dma-buf export works on whole GPU pages: a 2 MiB multiple.
        const std::size_t len = (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
        m.gpu_mem = std::make_unique<cu::device_memory>(m.gpu, len);
        m.base = m.gpu_mem->get();
        const cu::driver &drv = m.gpu->drv();
        m.gpu->check(drv.cuMemsetD8Async(m.base, 0, len, nullptr), "cuMemsetD8Async");
        m.gpu_present =
            std::make_unique<cu::device_memory>(m.gpu, geom_.chunks * geom_.slots);
        m.gpu_out = std::make_unique<cu::mapped_host_memory>(m.gpu, count_offset() + 64);
        m.stream = std::make_unique<cu::stream_owner>(m.gpu);
        const void *image = cuda_kernels_image();
        if (image == nullptr)
            throw std::runtime_error("the rdma source's GPU ring needs the CUDA kernels, and this "
                                     "build has none (nvcc was not found when it was built)");
        m.gpu->check(drv.cuModuleLoadData(&m.mod, image), "cuModuleLoadData");
        m.gpu->check(drv.cuModuleGetFunction(&m.present_fn, m.mod, "casper400g_rdma_present"),
                     "cuModuleGetFunction(casper400g_rdma_present)");
        m.gpu->check(drv.cuCtxSynchronize(), "cuCtxSynchronize");
        params_.memory = "cuda:" + std::to_string(opt_.gpu);
    } else {
        const std::size_t len = (bytes + 4095) / 4096 * 4096;
        void *p = std::aligned_alloc(4096, len);
        if (p == nullptr) throw std::bad_alloc();
        std::memset(p, 0, len);
        m.host.reset(static_cast<std::uint8_t *>(p));
        m.base = reinterpret_cast<std::uintptr_t>(p);
    }

    // Present flags: host pass over the headers, or the GPU kernel.
    rdma_present_fn present;
    if (on_gpu()) {
        present = [this](std::size_t place, std::uint64_t first_seq, std::uint8_t *out) {
            impl &mm = *impl_;
            const cu::driver &drv = mm.gpu->drv();
            mm.gpu->make_current();
            cu::deviceptr chunk = place_address(place);
            std::uint64_t slot_size = geom_.slot_size, slots = geom_.slots, seq = first_seq;
            cu::deviceptr flags = mm.gpu_present->get() + place * geom_.slots;
            cu::deviceptr count = mm.gpu_out->dev() + count_offset();
            std::uint8_t *host = mm.gpu_out->host();
            std::memset(host + count_offset(), 0, 8);
            void *args[] = {&chunk, &slot_size, &slots, &seq, &flags, &count};
            const unsigned threads = 256;
            const unsigned blocks = static_cast<unsigned>((geom_.slots + threads - 1) / threads);
            mm.gpu->check(drv.cuLaunchKernel(mm.present_fn, blocks, 1, 1, threads, 1, 1, 0,
                                             mm.stream->get(), args, nullptr),
                          "cuLaunchKernel(casper400g_rdma_present)");
            mm.gpu->check(drv.cuMemcpyDtoHAsync(out, flags, geom_.slots, mm.stream->get()),
                          "cuMemcpyDtoHAsync(present)");
            mm.gpu->check(drv.cuStreamSynchronize(mm.stream->get()), "cuStreamSynchronize");
            std::uint64_t n;
            std::memcpy(&n, host + count_offset(), sizeof(n));
            return static_cast<std::size_t>(n);
        };
    } else {
        present = [this](std::size_t place, std::uint64_t first_seq, std::uint8_t *out) {
            return rdma_present_host(reinterpret_cast<const std::uint8_t *>(place_address(place)),
                                     geom_, first_seq, out);
        };
    }
    m.credit_fd = credit_socket(opt_);
    rdma_credit_fn credit;
    if (m.credit_fd) {
        const int fd = m.credit_fd.get();
        credit = [fd](std::uint32_t value) {
            std::uint8_t msg[8] = {'C', 'R', 'D', 'T'};
            const std::uint32_t be = htonl(value);
            std::memcpy(msg + 4, &be, 4);
            // A credit that cannot be sent now is not retried: the next one carries the same
            // information, so a lost one only delays the core.
            const ssize_t sent = ::send(fd, msg, sizeof(msg), MSG_DONTWAIT);
            static_cast<void>(sent);
        };
    }
    ring_ = std::make_unique<rdma_ring>(geom_, std::move(present), std::move(credit));

    params_.mtu = opt_.mtu;
    params_.psn = opt_.psn;
    params_.va = m.base;
    if (opt_.emulate) {
        params_.registration = "emulated";
        params_.ip = opt_.ip;
        return;
    }
#ifdef CASPER400G_RX_HAVE_IBV
    if (opt_.peer_ip.empty())
        throw std::invalid_argument("peer_ip (the core's IPv4 address) is needed: the queue "
                                    "pair accepts packets only from it");
    m.lib = &ibv_lib::get();
    const ibv_lib &lib = *m.lib;
    int ndev = 0;
    ibv_device **list = lib.get_device_list(&ndev);
    if (list == nullptr) throw_errno("ibv_get_device_list");
    ibv_device *dev = nullptr;
    gid_choice gid;
    std::vector<std::string> names;
    for (int i = 0; i < ndev; i++) {
        const std::string name = lib.get_device_name(list[i]);
        names.push_back(name);
        if (!opt_.device.empty() && name != opt_.device) continue;
        gid_choice gc = find_gid(name, opt_.ip);
        if (gc.index < 0) continue;
        dev = list[i];
        gid = gc;
        params_.device = name;
        break;
    }
    if (dev == nullptr) {
        lib.free_device_list(list);
        std::string have;
        for (const auto &n : names) have += (have.empty() ? "" : ", ") + n;
        throw os_error(ENODEV, "no RDMA device " +
                                   (opt_.device.empty() ? std::string() : "'" + opt_.device + "' ") +
                                   "with a RoCE v2 GID for " +
                                   (opt_.ip.empty() ? std::string("an IPv4 address") : opt_.ip) +
                                   " (devices: " + (have.empty() ? "none" : have) +
                                   "; `rdma link` and `ibv_devices` list them, "
                                   "/sys/class/infiniband/<dev>/ports/1/gids their GIDs)");
    }
    m.ctx = {lib.open_device(dev), lib.close_device};
    lib.free_device_list(list);
    if (!m.ctx) throw_errno("ibv_open_device(" + params_.device + ")");
    ibv_port_attr port{};
    if (lib.query_port(m.ctx.get(), 1, &port) != 0) throw_errno("ibv_query_port");
    if (port.state != IBV_PORT_ACTIVE)
        throw os_error(ENETDOWN, params_.device + " port 1 is not ACTIVE (link down?)");
    const int port_mtu = 128 << static_cast<int>(port.active_mtu);
    if (opt_.mtu > port_mtu)
        throw std::invalid_argument("mtu " + std::to_string(opt_.mtu) + " exceeds " +
                                    params_.device + "'s active MTU " + std::to_string(port_mtu) +
                                    " (raise the interface MTU, e.g. 9000 for 4096)");
    params_.gid = gid.gid;
    params_.gid_index = gid.index;
    params_.ip = gid.ip;
    params_.netdev = gid.netdev;
    params_.mac = sysfs_read("/sys/class/net/" + gid.netdev + "/address");

    m.pd = {lib.alloc_pd(m.ctx.get()), lib.dealloc_pd};
    if (!m.pd) throw_errno("ibv_alloc_pd");
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    if (on_gpu()) {
        const cu::driver &drv = m.gpu->drv();
        std::string dmabuf_why;
        int supported = 0;
        drv.cuDeviceGetAttribute(&supported, cu::attr_dma_buf_supported, m.gpu->handle());
        const std::size_t len = m.gpu_mem->size();
        if (lib.reg_dmabuf_mr == nullptr) {
            dmabuf_why = "rdma-core has no ibv_reg_dmabuf_mr (needs v34+)";
        } else if (drv.cuMemGetHandleForAddressRange == nullptr) {
            dmabuf_why = "the CUDA driver cannot export dma-bufs (needs 11.7+)";
        } else if (!supported) {
            dmabuf_why = "the GPU does not export dma-bufs (needs the open kernel modules)";
        } else {
            int fd = -1;
            if (cu::result rc = drv.cuMemGetHandleForAddressRange(
                    &fd, m.base, len, cu::mem_range_handle_dma_buf_fd, 0)) {
                dmabuf_why = "cuMemGetHandleForAddressRange: " + drv.error_text(rc);
            } else {
                m.mr = {lib.reg_dmabuf_mr(m.pd.get(), 0, len, m.base, fd, access), lib.dereg_mr};
                const int err = errno;
                ::close(fd);
                if (m.mr) params_.registration = "dmabuf";
                else dmabuf_why = std::string("ibv_reg_dmabuf_mr: ") + std::strerror(err);
            }
        }
        if (!m.mr) {
            m.mr = {lib.reg_mr(m.pd.get(), reinterpret_cast<void *>(m.base), len, access),
                    lib.dereg_mr};
            if (!m.mr)
                throw os_error(errno, "cannot register the GPU ring with " + params_.device +
                                          ": dma-buf: " + dmabuf_why +
                                          "; peermem: ibv_reg_mr failed (" + std::strerror(errno) +
                                          "; `modprobe nvidia-peermem`, IOMMU off or iommu=pt)");
            params_.registration = "peermem";
            warnings_.push_back("GPU ring registered through nvidia-peermem (dma-buf: " +
                                dmabuf_why + ")");
        }
    } else {
        m.mr = {lib.reg_mr(m.pd.get(), reinterpret_cast<void *>(m.base), bytes, access),
                lib.dereg_mr};
        if (!m.mr) throw_errno("ibv_reg_mr of the " + std::to_string(bytes) + "-byte ring");
        params_.registration = "host";
    }
    params_.rkey = m.mr.get()->rkey;

    const std::size_t depth = opt_.recv_depth ? opt_.recv_depth : 2 * geom_.chunks + 64;
    m.channel = {lib.create_comp_channel(m.ctx.get()), lib.destroy_comp_channel};
    if (!m.channel) throw_errno("ibv_create_comp_channel");
    m.cq = {lib.create_cq(m.ctx.get(), static_cast<int>(depth), nullptr, m.channel.get(), 0),
            lib.destroy_cq};
    if (!m.cq) throw_errno("ibv_create_cq");
    ibv_qp_init_attr qia{};
    qia.send_cq = m.cq.get();
    qia.recv_cq = m.cq.get();
    qia.cap.max_send_wr = 1;
    qia.cap.max_recv_wr = static_cast<std::uint32_t>(depth);
    qia.cap.max_send_sge = 1;
    qia.cap.max_recv_sge = 1;
    qia.qp_type = IBV_QPT_UC;
    m.qp = {lib.create_qp(m.pd.get(), &qia), lib.destroy_qp};
    if (!m.qp) throw_errno("ibv_create_qp(UC)");
    params_.qpn = m.qp.get()->qp_num;

    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (int e = lib.modify_qp(m.qp.get(), &a,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        throw os_error(e, "ibv_modify_qp(INIT)");
    // A WRITE with immediate consumes a receive that carries no data of its own.
    for (std::size_t i = 0; i < depth; i++) {
        ibv_recv_wr wr{}, *bad = nullptr;
        wr.wr_id = i;
        if (int e = ibv_post_recv(m.qp.get(), &wr, &bad)) throw os_error(e, "ibv_post_recv");
    }
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = mtu_enum(opt_.mtu);
    a.dest_qp_num = opt_.peer_qpn;
    a.rq_psn = opt_.psn;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid.index);
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.dgid.raw[10] = 0xff;
    a.ah_attr.grh.dgid.raw[11] = 0xff;
    const in_addr peer = parse_ipv4("peer_ip", opt_.peer_ip);
    std::memcpy(&a.ah_attr.grh.dgid.raw[12], &peer, 4);
    if (int e = lib.modify_qp(m.qp.get(), &a,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN))
        throw os_error(e, "ibv_modify_qp(RTR)");
    if (int e = ibv_req_notify_cq(m.cq.get(), 0)) throw os_error(e, "ibv_req_notify_cq");
#else
    throw std::runtime_error("this build of casper400g_rx has no rdma-core support (built "
                             "without libibverbs-dev); only emulate=True works");
#endif
}

rdma_capture::~rdma_capture() { stop(); }

void rdma_capture::start() {
    if (started_) return;
    started_ = true;
    if (opt_.emulate) {
        running_ = true;
        return;
    }
    running_ = true;
    thread_ = std::thread([this] { run(); });
}

void rdma_capture::stop() {
    if (stopped_) return;
    stopped_ = true;
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    running_ = false;
    ring_->finish();
}

void rdma_capture::run() {
#ifdef CASPER400G_RX_HAVE_IBV
    impl &m = *impl_;
    const ibv_lib &lib = *m.lib;
    pollfd pfd{m.channel.get()->fd, POLLIN, 0};
    while (!stop_) {
        ibv_wc wc[32];
        int n;
        while ((n = ibv_poll_cq(m.cq.get(), 32, wc)) > 0) {
            for (int i = 0; i < n; i++) {
                if (wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM)
                    ring_->on_immediate(ntohl(wc[i].imm_data));
                else
                    ring_->on_error();
                ibv_recv_wr wr{}, *bad = nullptr;
                wr.wr_id = wc[i].wr_id;
                if (wc[i].status != IBV_WC_WR_FLUSH_ERR) ibv_post_recv(m.qp.get(), &wr, &bad);
            }
        }
        if (n < 0) ring_->on_error();
        // Sleep until the next completion (re-armed before polling again, so none is missed).
        if (::poll(&pfd, 1, 50) > 0) {
            ibv_cq *cq = nullptr;
            void *ctx = nullptr;
            if (lib.get_cq_event(m.channel.get(), &cq, &ctx) == 0) {
                lib.ack_cq_events(cq, 1);
                ibv_req_notify_cq(m.cq.get(), 0);
            }
        }
    }
#endif
    running_ = false;
}

void rdma_capture::emulate_write(std::size_t offset, const std::uint8_t *data, std::size_t n) {
    if (!opt_.emulate) throw std::logic_error("emulate_write needs emulate=True");
    if (offset > geom_.ring_bytes() || n > geom_.ring_bytes() - offset)
        throw std::out_of_range("write of " + std::to_string(n) + " bytes at ring offset " +
                                std::to_string(offset) + " beyond the " +
                                std::to_string(geom_.ring_bytes()) + "-byte ring");
    if (on_gpu()) {
        impl &m = *impl_;
        m.gpu->make_current();
        m.gpu->check(m.gpu->drv().cuMemcpyHtoDAsync(m.base + offset, data, n, m.stream->get()),
                     "cuMemcpyHtoDAsync");
        m.gpu->check(m.gpu->drv().cuStreamSynchronize(m.stream->get()), "cuStreamSynchronize");
    } else {
        std::memcpy(reinterpret_cast<std::uint8_t *>(impl_->base) + offset, data, n);
    }
}

void rdma_capture::emulate_immediate(std::uint32_t imm) {
    if (!opt_.emulate) throw std::logic_error("emulate_immediate needs emulate=True");
    ring_->on_immediate(imm);
}

}  // namespace casper400g_rx
