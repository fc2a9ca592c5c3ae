// Python bindings of the rdma source (src/rdma_bindings.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace casper400g_rx {

// Adds RdmaCapture and RdmaChunk to the extension module (after EngineConfig).
void register_rdma(pybind11::module_ &m);

}  // namespace casper400g_rx
