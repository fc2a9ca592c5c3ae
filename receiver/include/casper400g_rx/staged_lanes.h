// Host-staged delivery into one device or several, apart from what a device is: the
// engine's ready host chunks are routed by chunk number (chunk_router) to lanes, one per
// device; a lane's copy thread queues each of its host chunks into a chunk of its own
// device ring and hands that on through the capture's one ready queue, and its recycle
// thread gives the host chunk back to the engine once the copy out of it has finished.
// With one lane the copy thread takes the engine's ready queue itself; with several a
// dispatcher thread routes, so a lane that waits for its consumer holds up only the host
// chunks routed to it. A lane's threads run where set_cpus says (its device's NUMA node:
// the driver's calls and the waits on its copies stay on that socket) and are named
// rx-copy<lane>, rx-recycle<lane> and rx-dispatch, so that they can be found.
//
// A lane_device is a GPU (cuda_delivery.cpp) or host memory standing in for one
// (host_lanes.h), so the routing, the rings, drop_oldest and the per-lane counters run and
// are tested where there is no GPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "casper400g_rx/capture.h"
#include "casper400g_rx/chunk.h"
#include "casper400g_rx/chunk_router.h"
#include "casper400g_rx/cuda_chunks.h"
#include "casper400g_rx/engine.h"
#include "casper400g_rx/lane_queue.h"

namespace casper400g_rx {

// What a lane's device does with a host chunk.
class lane_device {
public:
    virtual ~lane_device() = default;
    // The device's ring of chunks, each `packets_per_chunk x payload_size` bytes plus a
    // mask, with host arrays for the SPEAD per-heap values when the format has them.
    virtual std::size_t ring_size() const = 0;
    virtual gpu_chunk *ring_chunk(std::size_t i) = 0;
    // Once on each of the lane's threads before its first call (a GPU binds its context).
    virtual void bind_thread() {}
    // Queues the copy of h's payloads and mask into g, ordered after the work its last
    // consumers queued on it; g.ready completes with the copy. Returns the bytes copied.
    virtual std::size_t copy(const chunk &h, gpu_chunk &g) = 0;
    // Blocks until the copy out of h queued last has finished (h may then be refilled).
    virtual void wait_copied(const chunk &h) = 0;
};

struct lane_counters {
    std::uint64_t routed = 0;           // host chunks routed to this device
    std::uint64_t chunks = 0;           // copied into its ring and handed on
    std::uint64_t packets = 0;          // packets (slots present) in those chunks
    std::uint64_t chunks_dropped = 0;   // ready chunks taken back unconsumed (drop_oldest)
    std::uint64_t packets_dropped = 0;  // packets inside those chunks
    std::uint64_t waits = 0;            // times the lane waited for a free device chunk
    std::uint64_t bytes_copied = 0;     // host-to-device bytes (payloads and masks)
    std::uint64_t in_use = 0;           // device chunks not free (ready, or the consumer's)
    std::uint64_t n_chunks = 0;         // the device ring
};

class staged_lanes {
public:
    staged_lanes(std::shared_ptr<engine> eng, chunk_router router,
                 std::vector<std::unique_ptr<lane_device>> devices);
    ~staged_lanes();  // aborts and joins
    staged_lanes(const staged_lanes &) = delete;
    staged_lanes &operator=(const staged_lanes &) = delete;

    // The CPUs lane `lane`'s copy and recycle threads run on (empty: where the thread that
    // calls start() runs); before start(). Throws naming a bad lane or CPU.
    void set_cpus(std::size_t lane, std::vector<int> cpus);
    const std::vector<int> &cpus(std::size_t lane) const { return lanes_.at(lane)->cpus; }

    void start();
    // Every thread gives up at its next wait (host chunks it holds go back to the engine).
    void abort();
    // The stream ends without ever having started (a capture stopped before start()).
    void finish_unstarted();

    gpu_chunk *next(std::chrono::nanoseconds timeout, gpu_chunk_queue::status &why) {
        return ready_.pop_for(timeout, why);
    }
    // Back to its lane's ring (a GPU orders the refill after its consumers first).
    void release(gpu_chunk *c);
    bool finished() const { return ready_.drained(); }
    bool copying() const noexcept { return active_.load() > 0; }
    // Rethrows the first exception a lane thread raised.
    void check_error();

    std::size_t lanes() const noexcept { return lanes_.size(); }
    lane_device &device(std::size_t lane) { return *lanes_[lane]->dev; }
    const chunk_router &router() const noexcept { return router_; }
    lane_counters counters(std::size_t lane) const;
    // Every lane's counters summed, under the names a GPU capture's stats use (gpu_chunks,
    // gpu_chunks_dropped, gpu_packets_dropped, gpu_waits, gpu_chunks_in_use, n_gpu_chunks,
    // h2d_bytes).
    std::map<std::string, std::uint64_t> totals() const;

private:
    struct lane {
        lane(std::unique_ptr<lane_device> d, std::size_t host_chunks);
        std::unique_ptr<lane_device> dev;
        chunk_queue inbox;  // host chunks routed here (several lanes)
        gpu_chunk_queue free;
        std::mutex inflight_mutex;
        std::condition_variable inflight_cv;
        std::deque<chunk *> inflight;  // host chunks whose copy is queued, in order
        bool copy_done = false;
        std::thread copy_thread, recycle_thread;
        std::vector<int> cpus;  // where both threads run (empty: inherited)
        std::atomic<std::uint64_t> routed{0}, chunks{0}, packets{0}, chunks_dropped{0},
            packets_dropped{0}, waits{0}, bytes_copied{0};
    };

    void dispatch_main();
    void copy_main(std::size_t i);
    void recycle_main(std::size_t i);
    gpu_chunk *acquire(std::size_t i);
    // Names the calling thread of lane `i` and pins it to the lane's CPUs (if any).
    void enter_lane_thread(std::size_t i, const char *what);
    void fail(std::exception_ptr e);

    std::shared_ptr<engine> eng_;
    chunk_router router_;
    std::vector<std::unique_ptr<lane>> lanes_;
    lane_ready_queue ready_;
    std::thread dispatch_thread_;
    std::atomic<bool> abort_{false};
    std::atomic<std::size_t> active_{0};  // lanes whose copy thread runs
    std::mutex error_mutex_;
    std::exception_ptr error_;
    bool started_ = false;
};

// A host capture and the lanes that deliver its chunks, started and stopped as one.
class staged_delivery {
public:
    staged_delivery(std::shared_ptr<capture> cap, chunk_router router,
                    std::vector<std::unique_ptr<lane_device>> devices);
    ~staged_delivery();

    void start();
    // Stopping the source flushes the open chunks; the lanes carry them to their devices
    // and then end the stream (the consumer drains it with next()).
    void stop();
    void check_error();
    bool running() const { return cap_->running() || lanes_.copying(); }
    staged_lanes &lanes() noexcept { return lanes_; }
    const staged_lanes &lanes() const noexcept { return lanes_; }
    capture &host() noexcept { return *cap_; }

private:
    std::shared_ptr<capture> cap_;
    staged_lanes lanes_;
    bool started_ = false;
};

}  // namespace casper400g_rx
