// Host-staged GPU delivery: the engine fills chunks in pinned host memory; a copy
// thread moves each ready chunk into a ring of GPU chunks with cuMemcpyHtoDAsync on
// the capture's own stream and hands the GPU chunk on at once, carrying the event
// that completes with its copy; a recycle thread returns the host chunk to the
// engine as soon as that copy has finished.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "casper400g_rx/capture.h"
#include "casper400g_rx/cuda_chunks.h"

namespace casper400g_rx {

class gpu_delivery : public gpu_capture {
public:
    // n_gpu_chunks: 0 = as many as the engine's pool.
    gpu_delivery(std::shared_ptr<capture> cap, std::shared_ptr<const cu::device> dev,
                 std::size_t n_gpu_chunks);
    ~gpu_delivery() override;

    void start() override;
    void stop() override;
    void check_error() override;
    bool running() const override;
    gpu_chunk *next(std::chrono::nanoseconds timeout, gpu_chunk_queue::status &why) override;
    void release(gpu_chunk *c, const std::vector<cu::stream> &after) override;
    bool finished() const override { return ready_.drained(); }
    std::map<std::string, std::uint64_t> stats() const override;
    gpu_chunk_pool &pool() override { return pool_; }
    cu::stream fill_stream() const override { return stream_.get(); }
    capture &host() noexcept { return *cap_; }

private:
    void copy_main();
    void recycle_main();
    gpu_chunk *acquire();
    void fail(std::exception_ptr e);

    std::shared_ptr<capture> cap_;
    std::shared_ptr<engine> eng_;
    std::shared_ptr<const cu::device> dev_;
    std::vector<std::unique_ptr<cu::host_registration>> pinned_;
    gpu_chunk_pool pool_;
    cu::stream_owner stream_;
    std::vector<cu::event_owner> copied_;  // per host chunk: its copy has finished
    gpu_chunk_queue free_, ready_;

    std::mutex inflight_mutex_;
    std::condition_variable inflight_cv_;
    std::deque<chunk *> inflight_;  // host chunks whose copy is queued, in order
    bool copy_done_ = false;

    std::thread copy_thread_, recycle_thread_;
    std::atomic<bool> abort_{false};
    std::atomic<bool> copying_{false};
    std::atomic<std::uint64_t> gpu_chunks_{0}, gpu_dropped_{0}, gpu_packets_dropped_{0},
        gpu_waits_{0}, h2d_bytes_{0};
    std::mutex error_mutex_;
    std::exception_ptr error_;
    bool started_ = false;
};

}  // namespace casper400g_rx
