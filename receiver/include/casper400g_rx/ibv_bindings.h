// Python bindings of the ibv backend, its NIC-less emulation and their units.
// Kept apart from bindings.cpp, which only calls register_ibv() and the factories.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "casper400g_rx/capture.h"
#include "casper400g_rx/nic_emulator.h"
#include "casper400g_rx/ibv_source.h"

namespace casper400g_rx {

struct emulator_options {
    std::size_t queues = 1;
    std::size_t depth = 256;
    std::uint64_t first = 0;
    std::uint64_t count = 0;
    std::vector<std::uint64_t> schedule;
    std::vector<std::uint64_t> bad;
    std::uint16_t udp_port = 10000;
    bool fill = true;
    bool serial = false;
    double rate_gbps = 0.0;  // total over the queues; 0 = unpaced
    std::vector<int> cpus;   // one per queue thread, or empty
    std::uint32_t poll_us = 0;  // paced: each queue thread polls every poll_us (0: busy)
    std::vector<emulator_config::stall> stalls;  // paced: (queue, packet, microseconds)
    // Given UDP payloads instead of the example stream (emulator_config).
    std::vector<std::uint8_t> packets;
    std::size_t stride = 0;
    std::vector<std::size_t> sizes;
    std::vector<std::uint32_t> queue_of;
};

// The header-split engine fed by the NIC emulation (the `mem` backend's ibv mode).
std::unique_ptr<capture> make_split_emulation(const format &fmt, const engine_config &cfg,
                                              const emulator_options &opt);

// Counters beyond the common ones, from engines and sources that keep them.
std::vector<std::pair<std::string, std::uint64_t>> extra_stats(engine &eng, source &src);

void register_ibv(pybind11::module_ &m);

}  // namespace casper400g_rx
