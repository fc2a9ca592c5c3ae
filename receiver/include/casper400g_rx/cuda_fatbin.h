// The reorder kernels' fatbin (sm_90 code + PTX), embedded at build time when nvcc
// was found; nullptr when the package was built without it.
#pragma once

namespace casper400g_rx {
const void *cuda_kernels_image() noexcept;
}
