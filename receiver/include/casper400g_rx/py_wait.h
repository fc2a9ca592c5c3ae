// Blocking waits from Python that Ctrl-C can interrupt (used by the pybind11 bindings only).
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <optional>

namespace casper400g_rx {

// How long the GIL stays released between checks for Ctrl-C.
inline constexpr auto signal_poll = std::chrono::milliseconds(50);

// The end of a wait of `timeout` seconds from now; no timeout waits forever.
inline std::chrono::steady_clock::time_point deadline_after(std::optional<double> timeout) {
    using clock = std::chrono::steady_clock;
    return timeout ? clock::now() + std::chrono::duration_cast<clock::duration>(
                                        std::chrono::duration<double>(std::max(0.0, *timeout)))
                   : clock::time_point::max();
}

// Calls `pop(slice, finished)` with the GIL released, in slices of at most signal_poll,
// until it returns a non-null pointer, the source says it `finished`, or `timeout` passes;
// Python signals are checked between slices. `check()` runs before every slice and once
// more after the source finished: it raises the capture's stored error. Returns the
// pointer, or null on timeout or end of stream.
template <class Pop, class Check>
auto wait_interruptible(std::optional<double> timeout, Pop &&pop, Check &&check) {
    using clock = std::chrono::steady_clock;
    const auto deadline = deadline_after(timeout);
    for (;;) {
        check();
        bool finished = false;
        decltype(pop(clock::duration{}, finished)) got = nullptr;
        {
            pybind11::gil_scoped_release nogil;
            const auto now = clock::now();
            const auto slice = std::min<clock::duration>(
                signal_poll, deadline > now ? deadline - now : clock::duration::zero());
            got = pop(slice, finished);
        }
        if (got != nullptr) return got;
        if (finished) {
            check();
            return got;
        }
        if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
        if (clock::now() >= deadline) return got;
    }
}

}  // namespace casper400g_rx
