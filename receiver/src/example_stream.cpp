#include "casper400g_rx/example_stream.h"

#include <cstdint>
#include <initializer_list>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace casper400g_rx {

namespace {

inline void store_be64(std::uint8_t *p, std::uint64_t v) noexcept {
    const std::uint64_t be = __builtin_bswap64(v);
    __builtin_memcpy(p, &be, 8);
}

inline std::uint64_t example_word(std::uint64_t seq, std::size_t k) noexcept {
    return k == 0 ? seq : (seq << 10) | k;
}

#if defined(__x86_64__)

inline bool aligned(const std::uint8_t *p, std::uintptr_t bytes) noexcept {
    return (reinterpret_cast<std::uintptr_t>(p) & (bytes - 1)) == 0;
}

// Words [k, k1) one 8-byte streaming store each; returns where it stopped (k1, or the
// first word at an `align`-byte boundary of dst when align > 0 and k >= 1: the wide
// kernels below start there).
std::size_t stream8_words(std::uint8_t *&dst, std::uint64_t seq, std::size_t k, std::size_t k1,
                          std::uintptr_t align) noexcept {
    for (; k < k1; k++, dst += 8) {
        if (align && k >= 1 && aligned(dst, align)) break;
        _mm_stream_si64(reinterpret_cast<long long *>(dst),
                        static_cast<long long>(__builtin_bswap64(example_word(seq, k))));
    }
    return k;
}

// Words k >= 1 are (seq << 10) | k: one OR of a broadcast with a running index per
// vector, then a byte shuffle to big-endian. dst is 32-byte aligned.
__attribute__((target("avx2"))) std::size_t stream32_words(std::uint8_t *&dst, std::uint64_t seq,
                                                           std::size_t k,
                                                           std::size_t k1) noexcept {
    const __m256i base = _mm256_set1_epi64x(static_cast<long long>(seq << 10));
    const __m256i step = _mm256_set1_epi64x(4);
    const __m256i bswap = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
                                           7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
    __m256i idx = _mm256_setr_epi64x(static_cast<long long>(k), static_cast<long long>(k + 1),
                                     static_cast<long long>(k + 2), static_cast<long long>(k + 3));
    for (; k + 4 <= k1; k += 4, dst += 32) {
        const __m256i w = _mm256_shuffle_epi8(_mm256_or_si256(base, idx), bswap);
        _mm256_stream_si256(reinterpret_cast<__m256i *>(dst), w);
        idx = _mm256_add_epi64(idx, step);
    }
    return k;
}

__attribute__((target("avx512f,avx512bw"))) std::size_t stream64_words(std::uint8_t *&dst,
                                                                         std::uint64_t seq,
                                                                         std::size_t k,
                                                                         std::size_t k1) noexcept {
    const __m512i base = _mm512_set1_epi64(static_cast<long long>(seq << 10));
    const __m512i step = _mm512_set1_epi64(8);
    const __m512i bswap = _mm512_set_epi64(0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                                           0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                                           0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                                           0x08090a0b0c0d0e0fLL, 0x0001020304050607LL);
    __m512i idx = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(k)),
                                   _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
    for (; k + 8 <= k1; k += 8, dst += 64) {
        const __m512i w = _mm512_shuffle_epi8(_mm512_or_si512(base, idx), bswap);
        _mm512_stream_si512(reinterpret_cast<__m512i *>(dst), w);
        idx = _mm512_add_epi64(idx, step);
    }
    return k;
}

#endif

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

void order_streaming_stores() noexcept {
#if defined(__x86_64__)
    _mm_sfence();
#endif
}

bool word_store_supported(word_store how) noexcept {
    switch (how) {
        case word_store::cached:
            return true;
#if defined(__x86_64__)
        case word_store::stream8:
            return true;
        case word_store::stream32:
            return __builtin_cpu_supports("avx2");
        case word_store::stream64:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
        default:
            return false;
    }
}

word_store widest_word_store() noexcept {
    for (const word_store how : {word_store::stream64, word_store::stream32, word_store::stream8})
        if (word_store_supported(how)) return how;
    return word_store::cached;
}

const char *word_store_name(word_store how) noexcept {
    switch (how) {
        case word_store::cached:
            return "cached";
        case word_store::stream8:
            return "stream8";
        case word_store::stream32:
            return "stream32";
        case word_store::stream64:
            return "stream64";
    }
    return "?";
}

void write_example_words(std::uint8_t *dst, std::uint64_t seq, std::size_t k0, std::size_t k1,
                         word_store how) noexcept {
#if defined(__x86_64__)
    if (how != word_store::cached && aligned(dst, 8)) {
        std::size_t k = k0;
        if (how == word_store::stream64 || how == word_store::stream32) {
            const std::uintptr_t width = how == word_store::stream64 ? 64 : 32;
            k = stream8_words(dst, seq, k, k1, width);
            k = how == word_store::stream64 ? stream64_words(dst, seq, k, k1)
                                            : stream32_words(dst, seq, k, k1);
        }
        stream8_words(dst, seq, k, k1, 0);
        return;
    }
#else
    (void)how;
#endif
    for (std::size_t k = k0; k < k1; k++) store_be64(dst + 8 * (k - k0), example_word(seq, k));
}

}  // namespace casper400g_rx
