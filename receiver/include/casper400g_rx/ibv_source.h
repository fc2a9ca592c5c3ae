// The `ibv` backend: a raw-packet receive path on NVIDIA/Mellanox NICs through
// rdma-core, loaded at run time so that the package works where it is absent.
//
// Per queue: one completion queue, one IBV_QPT_RAW_PACKET queue pair (or, with the
// striding RQ, a multi-packet work queue behind an RSS queue pair), one flow rule
// (destination MAC + IPv4 + UDP port, full masks) per destination address (the
// interface's, or each multicast group's) and one pinned thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/source.h"

namespace casper400g_rx {

// rdma-core (or the ibv code itself) is not available: the message says which and why.
class ibv_unavailable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ibv_options {
    std::string interface;  // netdev of the NIC port (e.g. "enp1s0f0np0"); or give `ip`
    std::string ip;         // local IPv4 the stream is sent to (finds the interface when not given)
    std::string device;     // RDMA device name; default: the one behind `interface`
    std::uint8_t ib_port = 1;
    std::uint16_t port = 0;       // UDP destination port of queue 0; queue q listens on port + q
    std::size_t queues = 1;
    std::size_t depth = 2048;     // receives posted per queue
    std::vector<int> cpus;        // one per queue, or empty
    std::string rq = "split";     // "split" (header-data split, fixed slots) or "striding"
    bool busy_poll = true;        // false: sleep on a completion channel
    std::string mac;              // destination MAC of the flow rule; default: the interface's
    // IPv4 multicast groups: flow rules for each group's address and MAC (RFC 1112)
    // instead of the interface's. Joining them (IGMP) is the caller's: a raw queue has
    // no socket (casper400g_rx/multicast.py).
    std::vector<std::string> groups;
};

// The Ethernet address of an IPv4 multicast group (network order): 01:00:5e and the
// group's low 23 bits. Throws std::invalid_argument when the address is not multicast.
void multicast_mac(std::uint32_t group_be, std::uint8_t out[6]);

// Whether the backend was compiled in and rdma-core loads here: "" when usable,
// otherwise the reason (for `casper400g-rx hwcheck` and error messages).
bool ibv_compiled() noexcept;
std::string ibv_load_error();

// Builds the capture; throws ibv_unavailable, std::invalid_argument or os_error with
// the cause and what to do about it.
class capture;
struct format;
std::unique_ptr<capture> make_ibv_capture(const format &fmt, const engine_config &cfg,
                                          const ibv_options &opt);

// The flow rule for one queue, as the bytes handed to ibv_create_flow (an ibv_flow_attr
// followed by the Ethernet, IPv4 and UDP specs). Throws ibv_unavailable when compiled out.
std::vector<std::uint8_t> flow_rule_bytes(const std::uint8_t dst_mac[6], std::uint32_t dst_ip_be,
                                          std::uint16_t dst_port, std::uint8_t ib_port);

// Facts about one RDMA device, for hwcheck.
struct ibv_device_report {
    std::string name;
    std::string netdev;  // "" when no interface maps to it
    std::string transport;
    std::string link_layer;
    std::string state;
    int active_mtu = 0;      // bytes
    double speed_gbps = 0;   // from active width x speed
    bool raw_packet = false;  // IBV_DEVICE_RAW_IP_CSUM or raw packet QP creatable
    bool mlx5 = false;
    bool striding_rq = false;
    std::string striding_range;  // stride sizes and counts the device accepts
    bool dmabuf = false;         // ibv_reg_dmabuf_mr exported by the loaded library
    std::string firmware;
    std::string error;  // what failed while querying it
};
std::vector<ibv_device_report> ibv_list_devices();

// Registers `bytes` of freshly allocated GPU memory on device `gpu` with the RDMA
// device: dma-buf first, then peermem. Returns the method that worked ("dmabuf" or
// "peermem"); throws with an explanation when neither does.
std::string ibv_gpu_register_check(const std::string &device, int gpu, std::size_t bytes);

}  // namespace casper400g_rx
