// Python bindings of the staged delivery with host memory standing in for its devices
// (_core.host_lanes: HostLanes, HostLaneChunk): the routing, rings and counters of a
// multi-GPU delivery, tested where there is no GPU. Called from bind_cuda.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>

#include "casper400g_rx/capture.h"
#include "casper400g_rx/staged_lanes.h"

namespace casper400g_rx {

// A lane's counters as the `device_stats` entries of GpuCapture and HostLanes have them.
pybind11::dict lane_stats_dict(const lane_counters &c);

void bind_lanes(pybind11::module_ &m,
                std::function<std::shared_ptr<capture>(pybind11::handle)> unwrap);

}  // namespace casper400g_rx
