// NIC-less emulation of a receive queue: a generator thread writes example-stream
// packets into a ring of receive slots at a set rate, as a NIC's DMA would, and a
// receive thread hands the filled slots to the engine in batches (the poll loop of
// a kernel-bypass backend). A full ring drops the packet, counted like a NIC's
// out-of-buffer counter; with rate 0 the generator waits instead (lossless).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "casper400g_rx/source.h"

namespace casper400g_rx {

struct emu_config {
    std::size_t payload_size = 8192;
    std::uint64_t first = 0;
    std::uint64_t count = 0;
    double rate_gbps = 0.0;       // payload rate; 0 = as fast as the receiver takes them
    std::size_t ring_slots = 16384;  // 128 MiB of 8192-B slots: ~10 ms at 100 Gb/s
    bool fill = false;            // write every payload word, not only the sequence number
    std::vector<int> cpus;        // {generator, receiver} CPUs, or empty
};

class emu_source : public source {
public:
    explicit emu_source(const emu_config &cfg);
    std::size_t n_threads() const override { return 2; }
    int cpu(std::size_t i) const override;
    void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) override;
    std::uint64_t nic_drops() const noexcept { return drops_.load(std::memory_order_relaxed); }
    std::uint64_t generated() const noexcept { return generated_.load(std::memory_order_relaxed); }

private:
    void generate(const std::atomic<bool> &stop);
    void receive(engine &eng, const std::atomic<bool> &stop);

    emu_config cfg_;
    std::unique_ptr<std::uint8_t[]> ring_;
    // Single producer, single consumer: slots [tail_, head_) are filled.
    alignas(64) std::atomic<std::uint64_t> head_{0};
    alignas(64) std::atomic<std::uint64_t> tail_{0};
    alignas(64) std::atomic<bool> done_{false};
    std::atomic<std::uint64_t> drops_{0};
    std::atomic<std::uint64_t> generated_{0};
};

}  // namespace casper400g_rx
