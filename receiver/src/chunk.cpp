#include "casper400g_rx/chunk.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace casper400g_rx {

namespace {

constexpr std::size_t page = 4096;

std::size_t round_up(std::size_t n) { return (n + page - 1) / page * page; }

std::uint8_t *alloc_pages(std::size_t bytes) {
    void *p = nullptr;
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
                       std::size_t payload_size, const slot_extras &extras)
    : packets_per_chunk_(packets_per_chunk), payload_size_(payload_size), extras_(extras) {
    if (n_chunks == 0 || packets_per_chunk == 0 || payload_size == 0)
        throw std::invalid_argument("chunk pool dimensions must be > 0");
    const std::size_t chunk_bytes = round_up(packets_per_chunk * payload_size);
    const std::size_t mask_bytes = round_up(packets_per_chunk);
    if (chunk_bytes / payload_size < packets_per_chunk ||
        n_chunks > SIZE_MAX / (chunk_bytes + mask_bytes))
        throw std::invalid_argument("chunk pool of " + std::to_string(n_chunks) +
                                    " chunks is too large");
    data_.reset(alloc_pages(n_chunks * chunk_bytes));
    present_.reset(alloc_pages(n_chunks * mask_bytes));
    // Touch every page now: first-touch page faults on the receive path would stall it
    // for longer than a socket buffer lasts at line rate.
    std::memset(data_.get(), 0, n_chunks * chunk_bytes);
    std::memset(present_.get(), 0, n_chunks * mask_bytes);
    chunks_.resize(n_chunks);
    for (std::size_t i = 0; i < n_chunks; i++) {
        chunks_[i].data = data_.get() + i * chunk_bytes;
        chunks_[i].present = present_.get() + i * mask_bytes;
        chunks_[i].index = i;
    }
    const std::size_t words = extras_.words();
    if (words == 0) return;
    if (words > SIZE_MAX / 8 / packets_per_chunk ||
        extras_.edge_bytes > SIZE_MAX / 2 / packets_per_chunk)
        throw std::invalid_argument("per-slot arrays of " + std::to_string(words) +
                                    " words are too large");
    const std::size_t extra_bytes =
        round_up((words * packets_per_chunk + extras_.edge_words(packets_per_chunk)) * 8);
    if (n_chunks > SIZE_MAX / extra_bytes)
        throw std::invalid_argument("chunk pool of " + std::to_string(n_chunks) +
                                    " chunks is too large");
    extra_.reset(alloc_pages(n_chunks * extra_bytes));
    std::memset(extra_.get(), 0, n_chunks * extra_bytes);
    for (std::size_t i = 0; i < n_chunks; i++) {
        auto *w = reinterpret_cast<std::uint64_t *>(extra_.get() + i * extra_bytes);
        if (extras_.heap_bytes) {
            chunks_[i].heap_bytes = w;
            w += packets_per_chunk;
        }
        if (extras_.items) {
            chunks_[i].items = w;
            w += extras_.items * packets_per_chunk;
        }
        if (extras_.cell_words) {
            chunks_[i].cells = w;
            w += extras_.cell_words * packets_per_chunk;
        }
        if (extras_.edge_bytes) {
            chunks_[i].edges_used = reinterpret_cast<std::uint8_t *>(w);
            chunks_[i].edges = chunks_[i].edges_used + packets_per_chunk;
        }
        reset_extras(chunks_[i]);
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
