#include "casper400g_rx/emu_source.h"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/example_stream.h"

namespace casper400g_rx {

emu_source::emu_source(const emu_config &cfg) : cfg_(cfg) {
    if (cfg_.payload_size < 8 || cfg_.payload_size % 8 != 0)
        throw std::invalid_argument("example-stream payload size must be a multiple of 8, got " +
                                    std::to_string(cfg_.payload_size));
    if (cfg_.ring_slots < batch_size)
        throw std::invalid_argument("ring_slots must be at least " + std::to_string(batch_size) +
                                    ", got " + std::to_string(cfg_.ring_slots));
    if (cfg_.rate_gbps < 0)
        throw std::invalid_argument("rate_gbps must be >= 0, got " + std::to_string(cfg_.rate_gbps));
    if (!cfg_.cpus.empty() && cfg_.cpus.size() != 2)
        throw std::invalid_argument("cpus must name 2 CPUs (generator, receiver), got " +
                                    std::to_string(cfg_.cpus.size()));
    ring_.reset(new std::uint8_t[cfg_.ring_slots * cfg_.payload_size]);
    // Every slot starts as a whole example payload, so that with fill=false only the
    // sequence word changes per packet (the rest is what a NIC would have written).
    for (std::size_t s = 0; s < cfg_.ring_slots; s++)
        fill_example_payload(ring_.get() + s * cfg_.payload_size, cfg_.payload_size, 0);
}

int emu_source::cpu(std::size_t i) const { return cfg_.cpus.empty() ? -1 : cfg_.cpus[i]; }

void emu_source::run(std::size_t i, engine &eng, const std::atomic<bool> &stop) {
    if (i == 0) {
        generate(stop);
    } else {
        receive(eng, stop);
    }
}

void emu_source::generate(const std::atomic<bool> &stop) {
    using clock = std::chrono::steady_clock;
    const std::size_t slots = cfg_.ring_slots;
    const std::size_t size = cfg_.payload_size;
    const double ns_per_packet = cfg_.rate_gbps > 0 ? size * 8.0 / cfg_.rate_gbps : 0.0;
    const auto t0 = clock::now();
    std::uint64_t i = 0;
    std::uint64_t head = 0;
    while (i < cfg_.count && !stop.load(std::memory_order_relaxed)) {
        // Packets arrive in bursts of up to a batch: the rate holds over a batch.
        std::uint64_t due = cfg_.count;
        if (ns_per_packet > 0) {
            const double ns = std::chrono::duration<double, std::nano>(clock::now() - t0).count();
            due = std::min<std::uint64_t>(cfg_.count, static_cast<std::uint64_t>(ns / ns_per_packet) + 1);
            if (due <= i) {
                // Ahead of schedule: sleep until the next batch is due rather than spin,
                // so that the emulated NIC leaves the CPU to the receiver it feeds.
                const double wait_ns = (i + batch_size) * ns_per_packet - ns;
                if (wait_ns > 20000)
                    std::this_thread::sleep_for(std::chrono::nanoseconds(
                        static_cast<std::int64_t>(wait_ns) - 10000));
                else
                    std::this_thread::yield();
                continue;
            }
        }
        const std::uint64_t n = std::min<std::uint64_t>(due - i, batch_size);
        const std::uint64_t tail = tail_.load(std::memory_order_acquire);
        std::uint64_t space = slots - (head - tail);
        if (space < n && ns_per_packet == 0) {
            std::this_thread::yield();  // unpaced: wait for the receiver, lose nothing
            continue;
        }
        const std::uint64_t put = std::min<std::uint64_t>(n, space);
        for (std::uint64_t k = 0; k < put; k++) {
            std::uint8_t *slot = ring_.get() + ((head + k) % slots) * size;
            fill_example_payload(slot, size, cfg_.first + i + k, cfg_.fill);
        }
        head += put;
        head_.store(head, std::memory_order_release);
        if (put < n) drops_.fetch_add(n - put, std::memory_order_relaxed);
        i += n;
        generated_.store(i, std::memory_order_relaxed);
    }
    done_.store(true, std::memory_order_release);
}

void emu_source::receive(engine &eng, const std::atomic<bool> &stop) {
    const std::size_t slots = cfg_.ring_slots;
    const std::size_t size = cfg_.payload_size;
    packet_ref batch[batch_size];
    std::uint64_t tail = 0;
    for (;;) {
        const bool done = done_.load(std::memory_order_acquire);
        const std::uint64_t head = head_.load(std::memory_order_acquire);
        if (head == tail) {
            if (done || stop.load(std::memory_order_relaxed)) return;
            std::this_thread::yield();  // busy-poll, as a kernel-bypass receiver does
            continue;
        }
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(head - tail, batch_size));
        for (std::size_t k = 0; k < n; k++)
            batch[k] = packet_ref{ring_.get() + ((tail + k) % slots) * size, size, -1};
        eng.add_batch(batch, n);
        tail += n;
        tail_.store(tail, std::memory_order_release);
    }
}

}  // namespace casper400g_rx
