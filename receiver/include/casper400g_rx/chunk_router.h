// Which device a chunk goes to when one capture delivers into several: round-robin by
// chunk number, or the user's table indexed by chunk number modulo its length (any
// periodic assignment: [0, 0, 1, 1] gives each device runs of two chunks). By chunk
// number, not by arrival: a chunk's device is known before it is filled, on every host
// that captures a share of the same stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace casper400g_rx {

class chunk_router {
public:
    // A table longer than this is a mistake, not a period (its memory is per capture).
    static constexpr std::size_t max_table = std::size_t{1} << 20;
    static constexpr std::size_t max_lanes = 64;

    // Round-robin over `lanes` devices: chunk k to device k % lanes.
    explicit chunk_router(std::size_t lanes);
    // Chunk k to device table[k % table.size()]; every device below `lanes` must get
    // chunks. Throws std::invalid_argument naming the offending entry.
    chunk_router(std::size_t lanes, std::vector<std::uint32_t> table);

    std::size_t lanes() const noexcept { return lanes_; }
    const std::vector<std::uint32_t> &table() const noexcept { return table_; }
    std::size_t lane_of(std::uint64_t chunk_id) const noexcept {
        return table_.empty() ? static_cast<std::size_t>(chunk_id % lanes_)
                              : table_[static_cast<std::size_t>(chunk_id % table_.size())];
    }

private:
    std::size_t lanes_;
    std::vector<std::uint32_t> table_;
};

}  // namespace casper400g_rx
