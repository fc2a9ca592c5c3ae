// GPU chunks: the ring of device-memory chunks a GPU capture fills, their queues,
// and the interface both GPU capture kinds (host-staged copy, GPUDirect) offer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "casper400g_rx/cuda_driver.h"
#include "casper400g_rx/ptr_queue.h"

namespace casper400g_rx {

struct gpu_chunk {
    static constexpr unsigned max_consumers = 4;

    cu::deviceptr data = 0;     // packets_per_chunk * payload_size bytes on the GPU
    cu::deviceptr present = 0;  // packets_per_chunk flags on the GPU
    std::uint8_t *present_host = nullptr;  // the same flags in pinned host memory
    std::uint64_t chunk_id = 0;
    std::size_t n_present = 0;
    std::size_t index = 0;
    std::size_t lane = 0;  // the device of a capture's several it is on (staged_lanes.h)
    cu::event ready = nullptr;  // completes when data/present hold the chunk
    // Recorded on the consumer's streams at release: the chunk is refilled only
    // once the work queued there before the release has finished.
    cu::event done[max_consumers] = {};
    unsigned n_done = 0;
    // SPEAD formats: the host chunk's per-heap byte counts and named items, in host memory.
    std::uint64_t *heap_bytes_host = nullptr;
    std::uint64_t *items_host = nullptr;  // item i of slot s at [i * packets_per_chunk + s]
    // ... and on the GPU, where the GPUDirect kernels settle them (0: host memory only).
    cu::deviceptr heap_bytes_dev = 0;
    cu::deviceptr items_dev = 0;  // as items_host
};

class gpu_chunk_pool {
public:
    gpu_chunk_pool(std::shared_ptr<const cu::device> dev, std::size_t n_chunks,
                   std::size_t packets_per_chunk, std::size_t payload_size);
    std::size_t size() const noexcept { return chunks_.size(); }
    gpu_chunk *get(std::size_t i) noexcept { return &chunks_[i]; }
    std::size_t packets_per_chunk() const noexcept { return ppc_; }
    std::size_t payload_size() const noexcept { return payload_; }
    std::size_t chunk_bytes() const noexcept { return chunk_bytes_; }
    cu::deviceptr data_base() const noexcept { return data_.get(); }
    cu::deviceptr present_base() const noexcept { return present_.get(); }
    const cu::mapped_host_memory &present_host() const noexcept { return present_host_; }
    const std::shared_ptr<const cu::device> &dev() const noexcept { return dev_; }
    // Gives every chunk host arrays for per-heap byte counts and the named items: in
    // `storage` when given (size() * packets_per_chunk * (1 + item_ids) uint64, the
    // caller's, e.g. mapped memory the GPU writes), else allocated here.
    void add_host_extras(std::vector<std::uint64_t> item_ids, std::uint64_t *storage = nullptr);
    const std::vector<std::uint64_t> &item_ids() const noexcept { return item_ids_; }

private:
    std::shared_ptr<const cu::device> dev_;
    std::size_t ppc_, payload_, chunk_bytes_;
    cu::device_memory data_;
    cu::device_memory present_;
    cu::mapped_host_memory present_host_;
    std::vector<cu::event_owner> events_;
    std::vector<gpu_chunk> chunks_;
    std::unique_ptr<std::uint64_t[]> extras_host_;
    std::vector<std::uint64_t> item_ids_;
};

// GPU chunks between the filling thread and the consumer.
using gpu_chunk_queue = ptr_queue<gpu_chunk>;

// What the Python layer needs from a GPU capture.
class gpu_capture {
public:
    virtual ~gpu_capture() = default;
    virtual void start() = 0;
    virtual void stop() = 0;
    virtual void check_error() = 0;
    virtual bool running() const = 0;
    // The next chunk whose fill has been queued (wait on its `ready` event), or nullptr.
    virtual gpu_chunk *next(std::chrono::nanoseconds timeout, gpu_chunk_queue::status &why) = 0;
    // Back to the ring once the work queued on `after` (the consumer's streams) is done.
    virtual void release(gpu_chunk *c, const std::vector<cu::stream> &after) = 0;
    virtual bool finished() const = 0;
    virtual std::map<std::string, std::uint64_t> stats() const = 0;
    virtual gpu_chunk_pool &pool() = 0;
    // The stream the chunks are filled on (for __cuda_array_interface__).
    virtual cu::stream fill_stream() const = 0;
    // A capture delivering into several GPUs: the ring and the stream of c's device.
    virtual gpu_chunk_pool &pool_of(const gpu_chunk &) { return pool(); }
    virtual cu::stream fill_stream_of(const gpu_chunk &) const { return fill_stream(); }
};

// Records the consumer's streams into c->done (one event per stream; streams beyond
// the events' number are waited for here).
void record_release(const cu::device &dev, gpu_chunk *c, const std::vector<cu::stream> &after);

}  // namespace casper400g_rx
