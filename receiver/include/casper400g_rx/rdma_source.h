// The `rdma` source (docs/design/receiver.md, "RDMA source"): the core's RDMA mode writes
// the stream straight into a chunk ring in host or GPU memory with RoCEv2 RDMA WRITE; this
// side owns the ring, its memory region, an Unreliable Connection queue pair and the
// completion queue of the immediates, and turns each immediate into a chunk (rdma_ring.h).
// No CPU touches a packet: one completion per chunk, one header read per slot.
//
// Verbs come from rdma-core through dlopen (ibv_lib.h); every object has an RAII owner. GPU
// memory is registered with ibv_reg_dmabuf_mr (CUDA dma-buf export) or, failing that,
// ibv_reg_mr through nvidia-peermem. `emulate` builds the same ring without any verbs: the
// caller writes the ring and posts immediates (tests, the demo without an RDMA device).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "casper400g_rx/rdma_ring.h"

namespace casper400g_rx {

struct rdma_options {
    std::string device;             // RDMA device, e.g. "mlx5_0" or "rxe0"; "" = by `ip`, else first
    std::string ip;                 // local IPv4 whose RoCEv2 GID the QP uses; "" = the first one
    std::string peer_ip;            // the core's IPv4 (the QP's remote address, credit target)
    std::uint16_t credit_port = 0;  // the core's credit UDP port; 0 = no credit datagrams
    std::uint32_t psn = 0;          // the QP's receive PSN: the core's start PSN
    std::uint32_t peer_qpn = 1;     // the core sends from no QP of its own; any value will do
    int mtu = 4096;                 // path MTU: 1024, 2048 or 4096
    int gpu = -1;                   // >= 0: the ring lives in this GPU's memory
    std::size_t recv_depth = 0;     // receives posted for immediates; 0 = 2 * chunks + 64
    bool emulate = false;           // no verbs: emulate_write / emulate_immediate feed the ring
};

// What the core needs to write into this ring (FourHundredGbe.rdma_connect).
struct rdma_params {
    std::uint32_t qpn = 0;
    std::uint32_t psn = 0;
    std::uint32_t rkey = 0;
    std::uint64_t va = 0;
    std::string gid;
    int gid_index = -1;
    std::string ip;
    std::string mac;
    std::string netdev;
    std::string device;
    int mtu = 4096;
    std::string memory;        // "host" or "cuda:N"
    std::string registration;  // "host", "dmabuf", "peermem" or "emulated"
};

class rdma_capture {
public:
    rdma_capture(const rdma_geometry &g, const rdma_options &o);
    ~rdma_capture();
    rdma_capture(const rdma_capture &) = delete;
    rdma_capture &operator=(const rdma_capture &) = delete;

    void start();
    void stop();  // idempotent: the completion thread ends, waiters see the end of the stream
    bool running() const noexcept { return running_.load(); }

    rdma_ring &ring() noexcept { return *ring_; }
    const rdma_params &params() const noexcept { return params_; }
    const rdma_options &options() const noexcept { return opt_; }
    bool on_gpu() const noexcept;
    int gpu() const noexcept { return opt_.gpu; }
    // Address of ring place `place` (its first slot's header): host pointer or device address.
    std::uint64_t place_address(std::size_t place) const noexcept;
    // The GPU ring's device-side present flags of `place` (0 for a host ring).
    std::uint64_t present_gpu(std::size_t place) const noexcept;
    // Waits for `stream` (a CUstream handle; 0: every stream of the context) on a GPU ring.
    void gpu_synchronize(std::uintptr_t stream) const;
    std::vector<std::string> warnings() const { return warnings_; }

    void emulate_write(std::size_t offset, const std::uint8_t *data, std::size_t n);
    void emulate_immediate(std::uint32_t imm);

    struct impl;

private:
    void run();
    std::size_t count_offset() const noexcept;
    rdma_options opt_;
    rdma_geometry geom_;
    std::unique_ptr<impl> impl_;
    std::unique_ptr<rdma_ring> ring_;
    rdma_params params_;
    std::vector<std::string> warnings_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> running_{false};
    bool started_ = false;
    bool stopped_ = false;
};

}  // namespace casper400g_rx
