// Python bindings of the GPU delivery (casper400g_rx._core: GpuCapture, GpuChunk,
// GPUDirect, the NIC-emulation mem source). Called from the module's init.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>

#include "casper400g_rx/capture.h"

namespace casper400g_rx {

// wrap: turns a capture into the module's Capture object; unwrap: the reverse
// (shared ownership), for handing a host capture to the GPU delivery.
void bind_cuda(pybind11::module_ &m,
               std::function<pybind11::object(std::shared_ptr<capture>)> wrap,
               std::function<std::shared_ptr<capture>(pybind11::handle)> unwrap);

}  // namespace casper400g_rx
