// Quotient and remainder by a divisor that stays fixed for a while (a queue's depth,
// packets per chunk, the number of lanes): a shift and a mask when it is a power of two,
// as the sizes chosen by default are, else the division. A 64-bit division takes tens of
// cycles, and the header-split path made several per packet.
#pragma once

#include <cstdint>

namespace casper400g_rx {

class divider {
public:
    explicit divider(std::uint64_t d) noexcept
        : d_(d), mask_(d - 1), shift_(d ? static_cast<unsigned>(__builtin_ctzll(d)) : 0),
          pow2_(d != 0 && (d & (d - 1)) == 0) {}
    std::uint64_t quot(std::uint64_t x) const noexcept { return pow2_ ? x >> shift_ : x / d_; }
    std::uint64_t rem(std::uint64_t x) const noexcept { return pow2_ ? x & mask_ : x % d_; }

private:
    std::uint64_t d_, mask_;
    unsigned shift_;
    bool pow2_;
};

}  // namespace casper400g_rx
