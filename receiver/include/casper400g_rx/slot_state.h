// Read-modify-writes of per-slot state (presence flags, a SPEAD heap's cell bitmap and
// byte count) that several receive queues may write at once. Shared, they are atomic
// (locked instructions); written by one queue only, plain loads and stores. A locked
// instruction costs tens of cycles and first waits for the streaming stores before it
// to drain, several times per packet on the placement path: a capture with one queue
// needs none of them.
#pragma once

#include <cstdint>

namespace casper400g_rx {

// Sets a slot's flag; true when this call set it (it was 0).
inline bool take_slot(std::uint8_t &flag, bool shared) noexcept {
    if (shared) return __atomic_exchange_n(&flag, std::uint8_t{1}, __ATOMIC_RELAXED) == 0;
    if (__atomic_load_n(&flag, __ATOMIC_RELAXED) != 0) return false;
    __atomic_store_n(&flag, std::uint8_t{1}, __ATOMIC_RELAXED);
    return true;
}

// v |= mask; returns the old value.
template <class T>
inline T or_fetch_old(T &v, T mask, bool shared) noexcept {
    if (shared) return __atomic_fetch_or(&v, mask, __ATOMIC_RELAXED);
    const T old = __atomic_load_n(&v, __ATOMIC_RELAXED);
    __atomic_store_n(&v, static_cast<T>(old | mask), __ATOMIC_RELAXED);
    return old;
}

// v += add; returns the new value.
inline std::uint64_t add_fetch_new(std::uint64_t &v, std::uint64_t add, bool shared) noexcept {
    if (shared) return __atomic_add_fetch(&v, add, __ATOMIC_RELAXED);
    const std::uint64_t now = __atomic_load_n(&v, __ATOMIC_RELAXED) + add;
    __atomic_store_n(&v, now, __ATOMIC_RELAXED);
    return now;
}

// v = desired if v is 0; true when it was.
inline bool set_if_zero(std::uint64_t &v, std::uint64_t desired, bool shared) noexcept {
    if (shared) {
        std::uint64_t zero = 0;
        return __atomic_compare_exchange_n(&v, &zero, desired, false, __ATOMIC_RELAXED,
                                           __ATOMIC_RELAXED);
    }
    if (__atomic_load_n(&v, __ATOMIC_RELAXED) != 0) return false;
    __atomic_store_n(&v, desired, __ATOMIC_RELAXED);
    return true;
}

}  // namespace casper400g_rx
