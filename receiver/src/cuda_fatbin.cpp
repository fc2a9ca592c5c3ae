#include "casper400g_rx/cuda_fatbin.h"

#ifdef CASPER400G_RX_FATBIN
// The fatbin's bytes, placed in .rodata by the assembler (no code generator needed).
__asm__(
    ".section .rodata\n"
    ".balign 64\n"
    ".hidden casper400g_rx_fatbin\n"
    "casper400g_rx_fatbin:\n"
    ".incbin \"" CASPER400G_RX_FATBIN "\"\n"
    ".byte 0\n"
    ".previous\n");
extern "C" const unsigned char casper400g_rx_fatbin[];

const void *casper400g_rx::cuda_kernels_image() noexcept { return casper400g_rx_fatbin; }
#else
const void *casper400g_rx::cuda_kernels_image() noexcept { return nullptr; }
#endif
