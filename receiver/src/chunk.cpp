#include "casper400g_rx/chunk.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace casper400g_rx {

namespace {

constexpr std::size_t page = 4096;

std::size_t round_up(std::size_t n) { return (n + page - 1) / page * page; }

constexpr std::size_t huge_page = 2u << 20;

// The pool's payload memory on transparent huge pages where the kernel has them: the
// placement paths touch a new line per packet across tens of MiB of chunks, and with 4 KiB
// pages a TLB miss every 16 packets of 256 B (a nested page walk in a VM) cost the
// header-split lane a tenth of its rate. (Best effort: without them, ordinary pages.)
std::uint8_t *alloc_pages(std::size_t bytes) {
    void *p = nullptr;
    if (bytes >= huge_page) {
        const std::size_t n = (bytes + huge_page - 1) / huge_page * huge_page;
        if (posix_memalign(&p, huge_page, n) != 0) throw std::bad_alloc();
        madvise(p, n, MADV_HUGEPAGE);
        return static_cast<std::uint8_t *>(p);
    }
    if (posix_memalign(&p, page, round_up(bytes)) != 0) throw std::bad_alloc();
    return static_cast<std::uint8_t *>(p);
}

}  // namespace

std::size_t count_present(const std::uint8_t *present, std::size_t n) noexcept {
    // Flags are 0 or 1: add eight at a time.
    std::size_t total = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, present + i, 8);
        total += static_cast<std::size_t>((w * 0x0101010101010101ULL) >> 56);
    }
    for (; i < n; i++) total += present[i];
    return total;
}

void chunk_pool::free_deleter::operator()(void *p) const noexcept { std::free(p); }

chunk_pool::chunk_pool(std::size_t n_chunks, std::size_t packets_per_chunk,
                       std::size_t payload_size, const slot_extras &extras,
                       const staging_plan &staging)
    : packets_per_chunk_(packets_per_chunk),
      payload_size_(payload_size),
      extras_(extras),
      staging_(staging) {
    if (n_chunks == 0 || packets_per_chunk == 0 || payload_size == 0)
        throw std::invalid_argument("chunk pool dimensions must be > 0");
    staging_.validate();
    if (n_chunks % staging_.period() != 0)
        throw std::invalid_argument("a staging pool of " + std::to_string(n_chunks) +
                                    " chunks split by a route of period " +
                                    std::to_string(staging_.period()) +
                                    ": the pool must be a multiple of it");
    const std::size_t chunk_bytes = round_up(packets_per_chunk * payload_size);
    const std::size_t mask_bytes = round_up(packets_per_chunk);
    if (chunk_bytes / payload_size < packets_per_chunk ||
        n_chunks > SIZE_MAX / (chunk_bytes + mask_bytes))
        throw std::invalid_argument("chunk pool of " + std::to_string(n_chunks) +
                                    " chunks is too large");
    chunk_bytes_ = chunk_bytes;
    const std::size_t words = extras_.words();
    std::size_t extra_bytes = 0;
    if (words != 0) {
        if (words > SIZE_MAX / 8 / packets_per_chunk ||
            extras_.edge_bytes > SIZE_MAX / 2 / packets_per_chunk)
            throw std::invalid_argument("per-slot arrays of " + std::to_string(words) +
                                        " words are too large");
        extra_bytes =
            round_up((words * packets_per_chunk + extras_.edge_words(packets_per_chunk)) * 8);
        if (n_chunks > SIZE_MAX / extra_bytes)
            throw std::invalid_argument("chunk pool of " + std::to_string(n_chunks) +
                                        " chunks is too large");
    }
    parts_.resize(staging_.parts());
    for (std::size_t i = 0; i < n_chunks; i++) parts_[staging_.part_of(i)].chunks++;
    const bool split = parts_.size() > 1;
    for (std::size_t p = 0; p < parts_.size(); p++) {
        part &pt = parts_[p];
        pt.data.reset(alloc_pages(pt.chunks * chunk_bytes));
        pt.present.reset(alloc_pages(pt.chunks * mask_bytes));
        if (extra_bytes) pt.extra.reset(alloc_pages(pt.chunks * extra_bytes));
        // One part: where the opening thread's first touch puts it (placement.py).
        if (split) {
            const int node = staging_.nodes[p];
            pt.binding.node = node;
            pt.binding.why_not = bind_to_node(pt.data.get(), pt.chunks * chunk_bytes, node);
            if (pt.binding.why_not.empty()) {
                bind_to_node(pt.present.get(), pt.chunks * mask_bytes, node);
                if (extra_bytes) bind_to_node(pt.extra.get(), pt.chunks * extra_bytes, node);
            }
            pt.binding.bound = pt.binding.why_not.empty();
        }
        // Touch every page now: first-touch page faults on the receive path would stall
        // it for longer than a socket buffer lasts at line rate.
        std::memset(pt.data.get(), 0, pt.chunks * chunk_bytes);
        std::memset(pt.present.get(), 0, pt.chunks * mask_bytes);
        if (extra_bytes) std::memset(pt.extra.get(), 0, pt.chunks * extra_bytes);
        if (split && pt.binding.bound)
            count_pages_on_node(pt.data.get(), pt.chunks * chunk_bytes, pt.binding.node,
                                pt.binding.pages, pt.binding.pages_on_node);
    }
    chunks_.resize(n_chunks);
    std::vector<std::size_t> next(parts_.size(), 0);
    for (std::size_t i = 0; i < n_chunks; i++) {
        part &pt = parts_[staging_.part_of(i)];
        const std::size_t k = next[staging_.part_of(i)]++;
        chunk &c = chunks_[i];
        c.data = pt.data.get() + k * chunk_bytes;
        c.present = pt.present.get() + k * mask_bytes;
        c.index = i;
        if (extra_bytes == 0) continue;
        auto *w = reinterpret_cast<std::uint64_t *>(pt.extra.get() + k * extra_bytes);
        if (extras_.heap_bytes) {
            c.heap_bytes = w;
            w += packets_per_chunk;
        }
        if (extras_.items) {
            c.items = w;
            w += extras_.items * packets_per_chunk;
        }
        if (extras_.cell_words) {
            c.cells = w;
            w += extras_.cell_words * packets_per_chunk;
        }
        if (extras_.edge_bytes) {
            c.edges_used = reinterpret_cast<std::uint8_t *>(w);
            c.edges = c.edges_used + packets_per_chunk;
        }
        reset_extras(c);
    }
}

void chunk_pool::reset_extras(chunk &c) const noexcept {
    const std::size_t ppc = packets_per_chunk_;
    if (c.heap_bytes != nullptr) std::memset(c.heap_bytes, 0, ppc * 8);
    if (c.items != nullptr) std::memset(c.items, 0xff, extras_.items * ppc * 8);
    if (c.cells != nullptr) std::memset(c.cells, 0, extras_.cell_words * ppc * 8);
    if (c.edges != nullptr) {
        // Most heaps split on cell boundaries and never touch their edges.
        for (std::size_t s = 0; s < ppc; s++) {
            if (c.edges_used[s] == 0) continue;
            std::memset(c.edges + s * extras_.edge_bytes, 0, extras_.edge_bytes);
            c.edges_used[s] = 0;
        }
    }
}

}  // namespace casper400g_rx
