// In-memory packet sources: a copy of given packets (UDP payloads or whole
// frames), or a generator of the example stream following a schedule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "casper400g_rx/format.h"
#include "casper400g_rx/source.h"

namespace casper400g_rx {

class buffer_source : public source {
public:
    // `data` holds n packets at `stride` bytes apart, `sizes[i]` valid bytes each.
    // frames: packets are link-layer frames of type `lt`, parsed to UDP payloads.
    // With `queues` > 1, queue q replays packets q, q + queues, ... on its own thread.
    buffer_source(const std::uint8_t *data, std::size_t stride, std::vector<std::size_t> sizes,
                  bool frames, linktype lt, std::uint16_t udp_port, std::size_t repeat = 1,
                  std::size_t queues = 1);
    std::size_t n_threads() const override { return queues_; }
    void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) override;

private:
    std::vector<std::uint8_t> data_;
    std::size_t stride_;
    std::vector<std::size_t> sizes_;
    bool frames_;
    linktype lt_;
    std::uint16_t udp_port_;
    std::size_t repeat_;
    std::size_t queues_;
};

// Emits example-stream payloads, either seq = first, first+1, ... (count of
// them) or exactly the sequence numbers listed in `schedule`. With several queues,
// each on its own thread: queue q emits entries q, q + queues, ... (a NIC spreading
// packets round-robin), or, with `queue_of` (one entry per packet), the packets
// assigned to it.
class generator_source : public source {
public:
    generator_source(std::size_t payload_size, std::uint64_t first, std::uint64_t count,
                     std::vector<std::uint64_t> schedule, bool fill, std::size_t queues = 1,
                     std::vector<std::uint32_t> queue_of = {});
    std::size_t n_threads() const override { return queues_; }
    void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) override;

private:
    std::size_t payload_size_;
    std::uint64_t first_;
    std::uint64_t count_;
    std::vector<std::uint64_t> schedule_;
    bool fill_;
    std::size_t queues_;
    std::vector<std::uint32_t> queue_of_;
};

}  // namespace casper400g_rx
