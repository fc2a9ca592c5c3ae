#include "casper400g_rx/host_lanes.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace casper400g_rx {

namespace {

std::uint64_t address_of(const std::uint8_t *p) {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}

}  // namespace

host_lane_device::host_lane_device(std::size_t n_chunks, const chunk_pool &host,
                                   std::vector<std::uint64_t> item_ids)
    : ppc_(host.packets_per_chunk()),
      payload_(host.payload_size()),
      items_(host.extras().items),
      item_ids_(std::move(item_ids)) {
    if (n_chunks == 0) throw std::invalid_argument("a device ring needs chunks, got 0");
    if (item_ids_.size() != items_)
        throw std::invalid_argument("the host chunks carry " + std::to_string(items_) +
                                    " named items, " + std::to_string(item_ids_.size()) +
                                    " ids given");
    const std::size_t bytes = ppc_ * payload_;
    if (n_chunks > SIZE_MAX / bytes)
        throw std::invalid_argument("a device ring of " + std::to_string(n_chunks) +
                                    " chunks is too large");
    // Zeroed: a slot no packet reached reads as zeros, as on a GPU that was never written.
    data_.reset(new std::uint8_t[n_chunks * bytes]());
    present_.reset(new std::uint8_t[n_chunks * ppc_]());
    present_host_.reset(new std::uint8_t[n_chunks * ppc_]());
    const bool spead = host.extras().heap_bytes;
    const std::size_t per_chunk = ppc_ * (1 + items_);
    if (spead) extras_.reset(new std::uint64_t[n_chunks * per_chunk]());
    chunks_.resize(n_chunks);
    staged_from_.assign(n_chunks, 0);
    for (std::size_t i = 0; i < n_chunks; i++) {
        gpu_chunk &c = chunks_[i];
        c.index = i;
        c.data = address_of(data_.get() + i * bytes);
        c.present = address_of(present_.get() + i * ppc_);
        c.present_host = present_host_.get() + i * ppc_;
        if (spead) {
            c.heap_bytes_host = extras_.get() + i * per_chunk;
            c.items_host = items_ ? c.heap_bytes_host + ppc_ : nullptr;
        }
    }
}

std::size_t host_lane_device::copy(const chunk &h, gpu_chunk &g) {
    const std::size_t bytes = ppc_ * payload_;
    std::memcpy(host_address(g.data), h.data, bytes);
    staged_from_[g.index] = address_of(h.data);
    std::memcpy(host_address(g.present), h.present, ppc_);
    return bytes + ppc_;
}

}  // namespace casper400g_rx
