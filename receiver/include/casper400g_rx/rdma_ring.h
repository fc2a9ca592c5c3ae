// The receiver's side of the core's RDMA mode (docs/design/receiver.md, "RDMA source"):
// the chunk ring the core writes with RDMA WRITE, turned into chunks without touching a
// packet. This part knows no verbs: it is told about immediates (`on_immediate`) and hands
// chunks out and takes them back; rdma_source.h connects it to a queue pair.
//
// Ring (docs/design/core.md §6): `chunks` chunks of `slots` slots of `slot_size` bytes;
// datagram n lives in slot n mod slots of chunk n div slots, at ring place
// (n div slots) mod chunks; a slot starts with n as 8 big-endian bytes, then the datagram.
// The immediate of a chunk's last packet is {chunks the core dropped so far mod 256, chunk
// number mod 2^24}.
//
// What an immediate for chunk c does (c unwrapped against the next chunk expected, e):
//   * c < e: an immediate for a chunk already handed on or passed: `late_immediates`;
//   * c >= e + chunks: a chunk the core cannot have written (with credits it writes at
//     most a ring past the oldest chunk the consumer holds, which is <= e): not trusted,
//     `out_of_window_immediates`, and nothing moves, no credit is sent. Only a run of
//     rdma_resync_after such immediates, each at most a ring past the one before (a core
//     running without flow control after a ring of immediates was lost, or restarted
//     ahead), moves the ring to them (`resyncs`); the chunks it jumps are not counted.
//   * e <= k < c, chunks without their own immediate: delivered if any of their slots holds
//     its sequence number (their immediate was lost: `missing_immediates`); otherwise the
//     core dropped them (the immediate's count says how many: `core_dropped_chunks`) or all
//     their packets were lost, and all their slots count `lost`;
//   * chunk c itself is delivered.
// A slot is present when its header holds its own sequence number (a slot left over from
// the ring's previous pass holds an older one). A chunk whose ring place the consumer
// still holds cannot be delivered (the core wrote over it: flow control off) and counts
// `overruns`.
// Credits: the number of the last chunk the consumer released, the chunks before it all
// released too (chunks never delivered count as released), is sent to the core whenever
// it grows.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

namespace casper400g_rx {

struct rdma_geometry {
    std::size_t slot_size = 8200;       // bytes per slot, header included
    std::size_t slots = 1024;           // slots per chunk
    std::size_t chunks = 4;             // chunks in the ring
    std::size_t payload_size = 8192;    // datagram bytes per slot shown in a chunk
    void validate() const;
    std::size_t chunk_bytes() const noexcept { return slot_size * slots; }
    std::size_t ring_bytes() const noexcept { return chunk_bytes() * chunks; }
};

inline constexpr std::size_t rdma_slot_header = 8;
// Consecutive immediates beyond the window, each following the last, that resync the ring.
inline constexpr std::uint64_t rdma_resync_after = 4;

struct rdma_counters {
    std::uint64_t immediates = 0;           // completions with an immediate
    std::uint64_t chunks = 0;               // chunks handed to the consumer
    std::uint64_t packets = 0;              // present slots in them
    std::uint64_t bytes = 0;                // their payload bytes (packets * payload_size)
    std::uint64_t lost = 0;                 // slots not present (delivered chunks and chunks passed)
    std::uint64_t core_dropped_chunks = 0;  // chunks the core dropped (flow control), per immediates
    std::uint64_t lost_chunks = 0;          // chunks passed with no slot present, beyond those
    std::uint64_t missing_immediates = 0;   // chunks delivered without their own immediate
    std::uint64_t late_immediates = 0;      // immediates for chunks already handed on or passed
    std::uint64_t out_of_window_immediates = 0;  // for chunks a ring or more past the next one
    std::uint64_t resyncs = 0;              // times a run of those moved the ring to them
    std::uint64_t overruns = 0;             // chunks whose ring place the consumer still held
    std::uint64_t errors = 0;               // completions with an error status
    std::uint64_t credits_sent = 0;
    std::uint64_t credit = 0xFFFF'FFFF;     // last credit (chunk number mod 2^32)
};

// Computes a chunk's present flags from its slot headers; returns the count. The default
// reads host memory; the GPU ring replaces it with a kernel.
using rdma_present_fn =
    std::function<std::size_t(std::size_t place, std::uint64_t first_seq, std::uint8_t *present)>;
// Sends a credit (the last released chunk, mod 2^32).
using rdma_credit_fn = std::function<void(std::uint32_t)>;

std::size_t rdma_present_host(const std::uint8_t *chunk_base, const rdma_geometry &g,
                              std::uint64_t first_seq, std::uint8_t *present);

class rdma_ring {
public:
    struct slot_chunk {                 // one ring place
        std::uint64_t chunk_id = 0;
        std::size_t n_present = 0;
        std::size_t place = 0;
        bool held = false;              // ready or with the consumer
    };

    rdma_ring(const rdma_geometry &g, rdma_present_fn present, rdma_credit_fn credit);
    rdma_ring(const rdma_ring &) = delete;
    rdma_ring &operator=(const rdma_ring &) = delete;

    const rdma_geometry &geometry() const noexcept { return g_; }
    void on_immediate(std::uint32_t imm);
    void on_error();
    // The next ready chunk, waiting up to `timeout`; nullptr when none (or `finished`).
    slot_chunk *pop_for(std::chrono::nanoseconds timeout, bool &finished);
    void release(slot_chunk *c);
    void finish();                      // no more immediates: waiters see the end
    std::uint8_t *present(std::size_t place) noexcept { return &present_[place * g_.slots]; }
    rdma_counters stats() const;
    std::size_t ready_count() const;

private:
    // Hands chunk `id` on if it has data (or has its own immediate); false: it is empty.
    bool consider_locked(std::uint64_t id, bool own_immediate);
    void credit_locked();

    rdma_geometry g_;
    rdma_present_fn present_fn_;
    rdma_credit_fn credit_fn_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<slot_chunk> places_;
    std::vector<std::uint8_t> present_;      // chunks * slots flags
    std::deque<slot_chunk *> ready_;
    std::uint64_t expected_ = 0;             // next chunk number to deliver or pass
    std::uint32_t drop_count_ = 0;           // the core's dropped count, unwrapped
    std::uint64_t run_ = 0;                  // consecutive immediates beyond the window
    std::uint64_t run_last_ = 0;             // ... the chunk the last of them named
    bool finished_ = false;
    rdma_counters c_;
};

}  // namespace casper400g_rx
