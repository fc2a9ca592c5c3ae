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

// How write_example_words stores: plain (cached) stores, or streaming stores of 8, 32 or
// 64 bytes. A NIC's DMA writes memory without reading it first and without filling the
// CPU's caches; streaming stores do the same, so an emulated NIC loads the memory
// system as a NIC would. The wider the store, the less of its core the emulation takes
// from the receive lane it shares the core with.
enum class word_store : std::uint8_t { cached, stream8, stream32, stream64 };

// The widest streaming store this CPU has (stream8 on any x86-64; cached elsewhere).
word_store widest_word_store() noexcept;
// Whether this CPU can run `how`.
bool word_store_supported(word_store how) noexcept;
const char *word_store_name(word_store how) noexcept;

// Payload words [k0, k1) of packet `seq`, written from `dst` on (dst holds word k0).
// `how` must be one this CPU supports (word_store_supported: the caller checks once,
// not per packet). Streaming kinds fall back to narrower stores where `dst` is not
// aligned for them; callers that use streaming stores order them (sfence) before
// announcing the data.
void write_example_words(std::uint8_t *dst, std::uint64_t seq, std::size_t k0, std::size_t k1,
                         word_store how) noexcept;

// Makes streaming stores visible to other threads before what follows (sfence).
void order_streaming_stores() noexcept;

}  // namespace casper400g_rx
