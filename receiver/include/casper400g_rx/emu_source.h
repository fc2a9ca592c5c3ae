// NIC-less emulation of receive queues: a generator thread writes example-stream
// packets into rings of receive slots at a set rate, as a NIC's DMA would (packet i
// into queue i % queues, as round-robin spreading does), and one receive thread per
// queue hands its filled slots to the engine in batches (the poll loop of a
// kernel-bypass backend). A full ring drops the packet, counted like a NIC's
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
    std::size_t ring_slots = 16384;  // per queue; 128 MiB of 8192-B slots: ~10 ms at 100 Gb/s
    bool fill = false;            // write every payload word, not only the sequence number
    std::size_t queues = 1;
    std::vector<int> cpus;        // {generator, receiver 0, receiver 1, ...} CPUs, or empty
};

class emu_source : public source {
public:
    explicit emu_source(const emu_config &cfg);
    std::size_t n_threads() const override { return 1 + cfg_.queues; }
    std::size_t n_queues() const override { return cfg_.queues; }
    int queue_of(std::size_t i) const override { return static_cast<int>(i) - 1; }
    int cpu(std::size_t i) const override;
    void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) override;
    std::uint64_t nic_drops() const noexcept { return drops_.load(std::memory_order_relaxed); }
    std::uint64_t generated() const noexcept { return generated_.load(std::memory_order_relaxed); }

private:
    void generate(const std::atomic<bool> &stop);
    void receive(std::size_t q, engine &eng, const std::atomic<bool> &stop);

    // Single producer, single consumer: slots [tail, head) are filled.
    struct ring {
        std::unique_ptr<std::uint8_t[]> slots;
        alignas(64) std::atomic<std::uint64_t> head{0};
        alignas(64) std::atomic<std::uint64_t> tail{0};
    };
    emu_config cfg_;
    std::vector<std::unique_ptr<ring>> rings_;
    alignas(64) std::atomic<bool> done_{false};
    std::atomic<std::uint64_t> drops_{0};
    std::atomic<std::uint64_t> generated_{0};
};

}  // namespace casper400g_rx
