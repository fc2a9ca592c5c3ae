#include "casper400g_rx/staging.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace casper400g_rx {

namespace {

// From <linux/mempolicy.h>, called through syscall(2): the receiver does not link libnuma.
constexpr int mpol_preferred = 1;
constexpr unsigned mpol_mf_move = 1u << 1;
constexpr int max_node = 1023;  // the node mask passed below has 1024 bits
constexpr std::size_t page = 4096;
constexpr std::size_t pages_per_call = 1024;

}  // namespace

void staging_plan::validate() const {
    if (route.size() > max_period)
        throw std::invalid_argument("a staging route of " + std::to_string(route.size()) +
                                    " entries: at most " + std::to_string(max_period));
    if (nodes.size() > 1 && route.empty())
        throw std::invalid_argument("staging split into " + std::to_string(nodes.size()) +
                                    " parts needs a route (the part of each chunk number)");
    std::vector<bool> used(parts(), false);
    for (std::size_t k = 0; k < route.size(); k++) {
        if (route[k] >= parts())
            throw std::invalid_argument("staging route entry " + std::to_string(k) + " is part " +
                                        std::to_string(route[k]) + " of " +
                                        std::to_string(parts()));
        used[route[k]] = true;
    }
    for (std::size_t p = 0; p < parts(); p++) {
        if (!route.empty() && !used[p])
            throw std::invalid_argument("staging part " + std::to_string(p) +
                                        " gets no chunk number from the route");
        if (!nodes.empty() && (nodes[p] < -1 || nodes[p] > max_node))
            throw std::invalid_argument("staging part " + std::to_string(p) + ": node " +
                                        std::to_string(nodes[p]) + " is not a NUMA node (0.." +
                                        std::to_string(max_node) + ", or -1: unbound)");
    }
}

std::string bind_to_node(void *p, std::size_t bytes, int node) noexcept {
    if (node < 0) return "NUMA node unknown";
    if (node > max_node) return "node " + std::to_string(node) + " is beyond node " +
                                std::to_string(max_node);
    unsigned long mask[(max_node + 1) / (8 * sizeof(unsigned long))] = {};
    mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
    const long rc = syscall(SYS_mbind, p, bytes, mpol_preferred, mask,
                            static_cast<unsigned long>(max_node + 2), mpol_mf_move);
    if (rc == 0) return "";
    const int err = errno;
    if (err == EINVAL)
        return "mbind to node " + std::to_string(node) +
               ": not a node with memory this process may use (EINVAL)";
    return "mbind to node " + std::to_string(node) + ": " + std::strerror(err);
}

void count_pages_on_node(const void *p, std::size_t bytes, int node, std::size_t &pages,
                         std::size_t &on_node) noexcept {
    pages = 0;
    on_node = 0;
    const auto *base = static_cast<const char *>(p);
    const std::size_t n = (bytes + page - 1) / page;
    void *addr[pages_per_call];
    int status[pages_per_call];
    for (std::size_t first = 0; first < n; first += pages_per_call) {
        const std::size_t k = n - first < pages_per_call ? n - first : pages_per_call;
        for (std::size_t i = 0; i < k; i++)
            addr[i] = const_cast<char *>(base + (first + i) * page);  // only asked about
        if (syscall(SYS_move_pages, 0, static_cast<unsigned long>(k), addr, nullptr, status, 0) !=
            0) {
            pages = on_node = 0;
            return;
        }
        pages += k;
        for (std::size_t i = 0; i < k; i++) on_node += status[i] == node;
    }
}

}  // namespace casper400g_rx
