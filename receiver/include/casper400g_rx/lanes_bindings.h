// Python bindings of the staged delivery with host memory standing in for its devices
// (_core.host_lanes: HostLanes, HostLaneChunk): the routing, rings and counters of a
// multi-GPU delivery, tested where there is no GPU. Called from bind_cuda.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "casper400g_rx/capture.h"
#include "casper400g_rx/staged_lanes.h"

namespace casper400g_rx {

// A lane's counters as the `device_stats` entries of GpuCapture and HostLanes have them.
pybind11::dict lane_stats_dict(const lane_counters &c);

// Where lane `lane`'s staging memory lies (the `staging` entry of those dicts): its part
// of the pool split per device, or the one pool every device shares.
pybind11::dict staging_stats_dict(const chunk_pool &pool, std::size_t lane);

// Per lane, the CPUs its threads run on (the `cpus` argument of gpu_delivery and
// host_lanes: one list per device, [] to leave a lane's threads where they start).
template <class Delivery>
void set_lane_cpus(Delivery &d, std::size_t lanes, std::vector<std::vector<int>> cpus) {
    if (cpus.size() != lanes)
        throw std::invalid_argument("cpus names the CPUs of " + std::to_string(cpus.size()) +
                                    " devices' threads, the delivery has " +
                                    std::to_string(lanes));
    for (std::size_t i = 0; i < lanes; i++) d.set_cpus(i, std::move(cpus[i]));
}

void bind_lanes(pybind11::module_ &m,
                std::function<std::shared_ptr<capture>(pybind11::handle)> unwrap);

}  // namespace casper400g_rx
