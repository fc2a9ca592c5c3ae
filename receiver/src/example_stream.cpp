#include "casper400g_rx/example_stream.h"

namespace casper400g_rx {

namespace {

inline void store_be64(std::uint8_t *p, std::uint64_t v) noexcept {
    const std::uint64_t be = __builtin_bswap64(v);
    __builtin_memcpy(p, &be, 8);
}

}  // namespace

void fill_example_payload(std::uint8_t *payload, std::size_t size, std::uint64_t seq,
                          bool full) noexcept {
    const std::size_t words = size / 8;
    if (words == 0) return;
    store_be64(payload, seq);
    if (!full) return;
    const std::uint64_t base = seq << 10;
    for (std::size_t k = 1; k < words; k++) store_be64(payload + 8 * k, base | k);
}

}  // namespace casper400g_rx
