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
    if (cfg_.queues == 0 || cfg_.queues > 256)
        throw std::invalid_argument("queues must be 1..256, got " + std::to_string(cfg_.queues));
    if (!cfg_.cpus.empty() && cfg_.cpus.size() != 1 + cfg_.queues)
        throw std::invalid_argument("cpus must name " + std::to_string(1 + cfg_.queues) +
                                    " CPUs (generator, then one receiver per queue), got " +
                                    std::to_string(cfg_.cpus.size()));
    for (std::size_t q = 0; q < cfg_.queues; q++) {
        auto r = std::make_unique<ring>();
        r->slots.reset(new std::uint8_t[cfg_.ring_slots * cfg_.payload_size]);
        // Every slot starts as a whole example payload, so that with fill=false only the
        // sequence word changes per packet (the rest is what a NIC would have written).
        for (std::size_t s = 0; s < cfg_.ring_slots; s++)
            fill_example_payload(r->slots.get() + s * cfg_.payload_size, cfg_.payload_size, 0);
        rings_.push_back(std::move(r));
    }
}

int emu_source::cpu(std::size_t i) const { return cfg_.cpus.empty() ? -1 : cfg_.cpus[i]; }

void emu_source::run(std::size_t i, engine &eng, const std::atomic<bool> &stop) {
    if (i == 0) {
        generate(stop);
    } else {
        receive(i - 1, eng, stop);
    }
}

void emu_source::generate(const std::atomic<bool> &stop) {
    using clock = std::chrono::steady_clock;
    const std::size_t slots = cfg_.ring_slots;
    const std::size_t size = cfg_.payload_size;
    const std::size_t nq = cfg_.queues;
    const double ns_per_packet = cfg_.rate_gbps > 0 ? size * 8.0 / cfg_.rate_gbps : 0.0;
    const auto t0 = clock::now();
    std::uint64_t i = 0;
    std::vector<std::uint64_t> heads(nq, 0);
    // Each ring's tail as last read: read again only when the ring looks full, so that
    // the generator does not pull the line the receive thread writes once per packet.
    std::vector<std::uint64_t> tails(nq, 0);
    auto full = [&](std::size_t q) {
        if (heads[q] - tails[q] < slots) return false;
        tails[q] = rings_[q]->tail.load(std::memory_order_acquire);
        return heads[q] - tails[q] >= slots;
    };
    while (i < cfg_.count && !stop.load(std::memory_order_relaxed)) {
        // Packets arrive in bursts of up to a batch per queue: the rate holds over a batch.
        const std::uint64_t burst = batch_size * nq;
        std::uint64_t due = cfg_.count;
        if (ns_per_packet > 0) {
            const double ns = std::chrono::duration<double, std::nano>(clock::now() - t0).count();
            due = std::min<std::uint64_t>(cfg_.count, static_cast<std::uint64_t>(ns / ns_per_packet) + 1);
            if (due <= i) {
                // Ahead of schedule: sleep until the next burst is due rather than spin,
                // so that the emulated NIC leaves the CPU to the receivers it feeds.
                const double wait_ns = (i + burst) * ns_per_packet - ns;
                if (wait_ns > 20000)
                    std::this_thread::sleep_for(std::chrono::nanoseconds(
                        static_cast<std::int64_t>(wait_ns) - 10000));
                else
                    std::this_thread::yield();
                continue;
            }
        }
        const std::uint64_t n = std::min<std::uint64_t>(due - i, burst);
        if (ns_per_packet == 0) {
            // Unpaced: wait for the receivers, lose nothing -- until each queue has room
            // for its whole share of the burst.
            bool room = true;
            for (std::size_t q = 0; q < nq && room; q++) {
                const std::uint64_t first = (q + nq - i % nq) % nq;  // its first k in the burst
                const std::uint64_t share = n > first ? (n - first - 1) / nq + 1 : 0;
                if (heads[q] - tails[q] + share > slots)
                    tails[q] = rings_[q]->tail.load(std::memory_order_acquire);
                room = heads[q] - tails[q] + share <= slots;
            }
            if (!room) {
                std::this_thread::yield();
                continue;
            }
        }
        std::uint64_t dropped = 0;
        for (std::uint64_t k = 0; k < n; k++) {
            const std::size_t q = (i + k) % nq;
            ring &r = *rings_[q];
            std::uint64_t &h = heads[q];
            if (full(q)) {
                dropped++;
                continue;
            }
            fill_example_payload(r.slots.get() + (h % slots) * size, size, cfg_.first + i + k,
                                 cfg_.fill);
            h++;
        }
        for (std::size_t q = 0; q < nq; q++)
            rings_[q]->head.store(heads[q], std::memory_order_release);
        if (dropped) drops_.fetch_add(dropped, std::memory_order_relaxed);
        i += n;
        generated_.store(i, std::memory_order_relaxed);
    }
    done_.store(true, std::memory_order_release);
}

void emu_source::receive(std::size_t q, engine &eng, const std::atomic<bool> &stop) {
    const std::size_t slots = cfg_.ring_slots;
    const std::size_t size = cfg_.payload_size;
    ring &r = *rings_[q];
    packet_ref batch[batch_size];
    std::uint64_t tail = 0;
    for (;;) {
        const bool done = done_.load(std::memory_order_acquire);
        const std::uint64_t head = r.head.load(std::memory_order_acquire);
        if (head == tail) {
            if (done || stop.load(std::memory_order_relaxed)) return;
            std::this_thread::yield();  // busy-poll, as a kernel-bypass receiver does
            continue;
        }
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(head - tail, batch_size));
        for (std::size_t k = 0; k < n; k++)
            batch[k] = packet_ref{r.slots.get() + ((tail + k) % slots) * size, size, -1};
        eng.add_batch(q, batch, n);
        tail += n;
        r.tail.store(tail, std::memory_order_release);
    }
}

}  // namespace casper400g_rx
