// Copies into chunk memory, shared by the placement paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace casper400g_rx {

#if defined(__x86_64__)
namespace detail {

// Whole 64-byte lines by streaming stores, as wide as the CPU allows: a 64-byte store
// fills a write-combining buffer at once, where 16-byte ones take four store-buffer
// entries per line and hold the buffer longer (measured on a Xeon: wider stores copy
// more per cycle; the extension is built for baseline x86-64, so the wide ones are
// chosen at run time).
inline void stream_lines_sse2(std::uint8_t *dst, const std::uint8_t *src,
                              std::size_t size) noexcept {
    auto *d = reinterpret_cast<__m128i *>(dst);
    const auto *s = reinterpret_cast<const __m128i *>(src);
    for (std::size_t i = 0; i < size / 16; i += 4) {
        const __m128i a = _mm_loadu_si128(s + i);
        const __m128i b = _mm_loadu_si128(s + i + 1);
        const __m128i c = _mm_loadu_si128(s + i + 2);
        const __m128i e = _mm_loadu_si128(s + i + 3);
        _mm_stream_si128(d + i, a);
        _mm_stream_si128(d + i + 1, b);
        _mm_stream_si128(d + i + 2, c);
        _mm_stream_si128(d + i + 3, e);
    }
}

__attribute__((target("avx2"))) inline void stream_lines_avx2(
    std::uint8_t *dst, const std::uint8_t *src, std::size_t size) noexcept {
    auto *d = reinterpret_cast<__m256i *>(dst);
    const auto *s = reinterpret_cast<const __m256i *>(src);
    for (std::size_t i = 0; i < size / 32; i += 2) {
        const __m256i a = _mm256_loadu_si256(s + i);
        const __m256i b = _mm256_loadu_si256(s + i + 1);
        _mm256_stream_si256(d + i, a);
        _mm256_stream_si256(d + i + 1, b);
    }
}

__attribute__((target("avx512f"))) inline void stream_lines_avx512(
    std::uint8_t *dst, const std::uint8_t *src, std::size_t size) noexcept {
    for (std::size_t i = 0; i < size; i += 64)
        _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i), _mm512_loadu_si512(src + i));
}

// Widest streaming store of this CPU, in bytes (16, 32 or 64).
inline const unsigned stream_width = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 64u;
    if (__builtin_cpu_supports("avx2")) return 32u;
    return 16u;
}();

}  // namespace detail
#endif

// Streams whole 64-byte lines (size a multiple of 64, dst 16-byte aligned) with stores
// of up to `width` bytes (16, 32 or 64), each aligned to its own width.
inline void stream_lines(std::uint8_t *dst, const std::uint8_t *src, std::size_t size,
                         unsigned width) noexcept {
#if defined(__x86_64__)
    const auto at = reinterpret_cast<std::uintptr_t>(dst);
    if (width >= 64 && (at & 63) == 0)
        detail::stream_lines_avx512(dst, src, size);
    else if (width >= 32 && (at & 31) == 0)
        detail::stream_lines_avx2(dst, src, size);
    else
        detail::stream_lines_sse2(dst, src, size);
#else
    (void)width;
    std::memcpy(dst, src, size);
#endif
}

// The payload goes to a chunk that the CPU does not read again (the consumer, or the
// DMA to the GPU, reads it later): streaming stores write it without reading the line
// first and without evicting the cache, a third less memory traffic than memcpy.
inline void copy_payload(std::uint8_t *dst, const std::uint8_t *src, std::size_t size) noexcept {
#if defined(__x86_64__)
    if ((reinterpret_cast<std::uintptr_t>(dst) & 15) == 0 && size % 64 == 0) {
        stream_lines(dst, src, size, detail::stream_width);
        return;
    }
#endif
    std::memcpy(dst, src, size);
}

// Pieces of a slot at any offset and of any size (the packets of a SPEAD heap) below
// this are copied plainly: streaming a few lines saves less than it costs.
inline constexpr std::size_t min_streamed_piece = 512;

// The same for pieces of a slot at any offset and of any size: plain copies up to the
// first 64-byte boundary and after the last whole line, streaming stores for the whole
// lines between. A line that a piece shares with its neighbour is then written by plain
// stores from both sides, never by both kinds (a line half streamed and half written
// plainly costs more than it saves: 1472-B packets fell to a third of their rate).
inline void copy_into_chunk(std::uint8_t *dst, const std::uint8_t *src, std::size_t size) noexcept {
    const std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(dst) & 63)) & 63;
    if (size < head + min_streamed_piece) {
        std::memcpy(dst, src, size);
        return;
    }
    std::memcpy(dst, src, head);
    const std::size_t bulk = (size - head) / 64 * 64;
    copy_payload(dst + head, src + head, bulk);
    std::memcpy(dst + head + bulk, src + head + bulk, size - head - bulk);
}

// Streaming stores are weakly ordered: this makes them visible before anything that
// may hand their chunk on (a window move, the end of a batch).
inline void order_payload_stores() noexcept {
#if defined(__x86_64__)
    _mm_sfence();
#endif
}

}  // namespace casper400g_rx
