// Host memory standing in for a device of the staged delivery (staged_lanes.h): the lane's
// ring is host memory and its copy a memcpy made by the lane's copy thread, finished when
// copy() returns. The multi-device delivery's routing, rings, drop_oldest and counters
// run with it where there is no GPU; its chunks' `data` and `present` addresses are host
// addresses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "casper400g_rx/chunk.h"
#include "casper400g_rx/staged_lanes.h"

namespace casper400g_rx {

class host_lane_device : public lane_device {
public:
    // A ring of `n_chunks` chunks shaped like `host`'s (with its SPEAD per-heap arrays,
    // the named items `item_ids`).
    host_lane_device(std::size_t n_chunks, const chunk_pool &host,
                     std::vector<std::uint64_t> item_ids = {});

    std::size_t ring_size() const override { return chunks_.size(); }
    gpu_chunk *ring_chunk(std::size_t i) override { return &chunks_[i]; }
    std::size_t copy(const chunk &h, gpu_chunk &g) override;
    void wait_copied(const chunk &) override {}

    std::size_t packets_per_chunk() const noexcept { return ppc_; }
    std::size_t payload_size() const noexcept { return payload_; }
    const std::vector<std::uint64_t> &item_ids() const noexcept { return item_ids_; }
    // The address of the host chunk's payloads that ring chunk `i` was last copied from
    // (0: none yet): which part of the staging pool a chunk came through.
    std::uint64_t staged_from(std::size_t i) const noexcept { return staged_from_[i]; }
    static std::uint8_t *host_address(std::uint64_t address) noexcept {
        return reinterpret_cast<std::uint8_t *>(static_cast<std::uintptr_t>(address));
    }

private:
    std::size_t ppc_, payload_, items_;
    std::vector<std::uint64_t> item_ids_;
    std::unique_ptr<std::uint8_t[]> data_, present_, present_host_;
    std::unique_ptr<std::uint64_t[]> extras_;
    std::vector<gpu_chunk> chunks_;
    std::vector<std::uint64_t> staged_from_;
};

}  // namespace casper400g_rx
