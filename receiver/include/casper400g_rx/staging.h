// Staging memory split by device: when one capture delivers into several GPUs, its chunk
// pool is cut into one part per GPU, each bound to that GPU's NUMA node, so that a GPU's
// copies read local memory. A chunk's part is fixed: chunk i of the pool belongs to the
// GPU that chunk number i routes to, and the pool is a multiple of the routing's period,
// so any run of pool-size consecutive chunk numbers routes exactly as many numbers to a
// GPU as its part has chunks: the engine's window always finds its chunks (it takes a
// free chunk of the part the chunk number routes to, engine.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace casper400g_rx {

struct staging_plan {
    // A routing table longer than this keeps one pool: its period would be the pool's
    // smallest size (docs/design/scaleout.md).
    static constexpr std::size_t max_period = 256;

    // Part of chunk number k: route[k % route.size()]; empty: the pool is one part.
    std::vector<std::uint32_t> route;
    // Per part, the NUMA node its memory is bound to (-1: not bound, the node unknown).
    std::vector<int> nodes;

    std::size_t parts() const noexcept { return nodes.empty() ? 1 : nodes.size(); }
    std::size_t period() const noexcept { return route.empty() ? 1 : route.size(); }
    std::size_t part_of(std::uint64_t chunk_number) const noexcept {
        return route.empty() ? 0 : route[static_cast<std::size_t>(chunk_number % route.size())];
    }
    // `n` chunks rounded up to a multiple of the period.
    std::size_t round_pool(std::size_t n) const noexcept {
        const std::size_t p = period();
        return (n + p - 1) / p * p;
    }
    // Throws naming a route entry without a part, a part without chunks or a bad node.
    void validate() const;
};

// Where one part of a pool lies: its node and whether the kernel took the binding, with
// the pages of its payload memory found on that node once written.
struct staging_binding {
    int node = -1;
    bool bound = false;
    std::string why_not;  // empty when bound
    std::size_t pages = 0;
    std::size_t pages_on_node = 0;
};

// Binds [p, p + bytes) (page-aligned, not yet written) to NUMA node `node` with
// mbind(MPOL_PREFERRED, MPOL_MF_MOVE): pages come from that node while it has memory.
// Returns why it could not ("" when bound); never throws: an unbound part still works.
std::string bind_to_node(void *p, std::size_t bytes, int node) noexcept;

// How many of the pages of [p, p + bytes) lie on `node` (move_pages, asking only), and
// how many pages were asked about; 0 of 0 where the kernel cannot say.
void count_pages_on_node(const void *p, std::size_t bytes, int node, std::size_t &pages,
                         std::size_t &on_node) noexcept;

}  // namespace casper400g_rx
