// The example stream of the project (docs/design/architecture.md): payload = big-endian
// 64-bit words; word 0 is the packet sequence n, word k is (n << 10) | k.
#pragma once

#include <cstddef>
#include <cstdint>

namespace casper400g_rx {

// Writes the payload of packet `seq` (size must be a multiple of 8).
// With `full == false` only word 0 is written; the rest is left as it was.
void fill_example_payload(std::uint8_t *payload, std::size_t size, std::uint64_t seq,
                          bool full = true) noexcept;

}  // namespace casper400g_rx
