// A packet source feeds the engine from one or more threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

namespace casper400g_rx {

class engine;

class source {
public:
    virtual ~source() = default;
    virtual std::size_t n_threads() const { return 1; }
    // Receive queues feeding the engine (each calls add_batch with its own index), and
    // the queue thread `i` serves, or -1 for a thread that feeds none (a NIC emulation).
    virtual std::size_t n_queues() const { return n_threads(); }
    virtual int queue_of(std::size_t i) const { return static_cast<int>(i); }
    // CPU to pin thread `i` to, or -1 for no pinning.
    virtual int cpu(std::size_t) const { return -1; }
    // Runs in thread `i` until the source is exhausted or `stop` is set.
    virtual void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) = 0;
    // Wakes threads blocked in the kernel so they notice `stop`.
    virtual void interrupt() {}
    // Non-fatal problems found while setting up (e.g. a capped receive buffer).
    virtual std::vector<std::string> warnings() const { return {}; }
};

// Packets handed to the engine per call by the built-in sources.
inline constexpr std::size_t batch_size = 64;

}  // namespace casper400g_rx
