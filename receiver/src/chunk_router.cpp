#include "casper400g_rx/chunk_router.h"

#include <stdexcept>
#include <string>

namespace casper400g_rx {

namespace {

std::size_t checked_lanes(std::size_t lanes) {
    if (lanes == 0 || lanes > chunk_router::max_lanes)
        throw std::invalid_argument("a capture delivers into 1 to " +
                                    std::to_string(chunk_router::max_lanes) + " devices, got " +
                                    std::to_string(lanes));
    return lanes;
}

}  // namespace

chunk_router::chunk_router(std::size_t lanes) : lanes_(checked_lanes(lanes)) {}

chunk_router::chunk_router(std::size_t lanes, std::vector<std::uint32_t> table)
    : lanes_(checked_lanes(lanes)), table_(std::move(table)) {
    if (table_.empty()) throw std::invalid_argument("the chunk-to-device mapping is empty");
    if (table_.size() > max_table)
        throw std::invalid_argument("the chunk-to-device mapping has " +
                                    std::to_string(table_.size()) + " entries, at most " +
                                    std::to_string(max_table));
    std::vector<bool> used(lanes_, false);
    for (std::size_t k = 0; k < table_.size(); k++) {
        if (table_[k] >= lanes_)
            throw std::invalid_argument("mapping entry " + std::to_string(k) + " is device " +
                                        std::to_string(table_[k]) + " of " +
                                        std::to_string(lanes_));
        used[table_[k]] = true;
    }
    for (std::size_t d = 0; d < lanes_; d++)
        if (!used[d])
            throw std::invalid_argument("device " + std::to_string(d) +
                                        " gets no chunk from the mapping");
}

}  // namespace casper400g_rx
