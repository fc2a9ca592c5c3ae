// Host-staged GPU delivery into one GPU or several: the engine fills chunks in pinned
// host memory; each ready chunk is routed by its number to a GPU (chunk_router.h), whose
// copy thread moves it into that GPU's ring of chunks with cuMemcpyHtoDAsync on the GPU's
// own stream and hands the GPU chunk on at once, carrying the event that completes with
// its copy; the GPU's recycle thread returns the host chunk to the engine as soon as that
// copy has finished (staged_lanes.h). The host pool is pinned once for every GPU.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "casper400g_rx/capture.h"
#include "casper400g_rx/cuda_chunks.h"
#include "casper400g_rx/staged_lanes.h"

namespace casper400g_rx {

// One GPU of a staged delivery: its ring, its copy stream, and an event per host chunk
// that completes when the copy out of that chunk has.
class cuda_lane : public lane_device {
public:
    cuda_lane(std::shared_ptr<const cu::device> dev, engine &eng, std::size_t n_chunks);

    std::size_t ring_size() const override { return pool_.size(); }
    gpu_chunk *ring_chunk(std::size_t i) override { return pool_.get(i); }
    void bind_thread() override { dev_->make_current(); }
    std::size_t copy(const chunk &h, gpu_chunk &g) override;
    void wait_copied(const chunk &h) override;

    gpu_chunk_pool &pool() noexcept { return pool_; }
    cu::stream stream() const noexcept { return stream_.get(); }
    const cu::device &dev() const noexcept { return *dev_; }

private:
    std::shared_ptr<const cu::device> dev_;
    gpu_chunk_pool pool_;
    cu::stream_owner stream_;
    std::vector<cu::event_owner> copied_;  // per host chunk: its copy has finished
};

class gpu_delivery : public gpu_capture {
public:
    // Into each of `devs`, chunks routed by `router` (one lane per device);
    // n_gpu_chunks per GPU ring, 0 = as many as the engine's pool.
    gpu_delivery(std::shared_ptr<capture> cap, std::vector<std::shared_ptr<const cu::device>> devs,
                 std::size_t n_gpu_chunks, chunk_router router);
    ~gpu_delivery() override = default;

    void start() override { core_.start(); }
    void stop() override { core_.stop(); }
    void check_error() override { core_.check_error(); }
    bool running() const override { return core_.running(); }
    gpu_chunk *next(std::chrono::nanoseconds timeout, gpu_chunk_queue::status &why) override {
        return core_.lanes().next(timeout, why);
    }
    void release(gpu_chunk *c, const std::vector<cu::stream> &after) override;
    bool finished() const override { return core_.lanes().finished(); }
    // The GPUs' counters summed (the keys of a one-GPU capture).
    std::map<std::string, std::uint64_t> stats() const override {
        return core_.lanes().totals();
    }
    gpu_chunk_pool &pool() override { return lanes_.front()->pool(); }
    cu::stream fill_stream() const override { return lanes_.front()->stream(); }
    gpu_chunk_pool &pool_of(const gpu_chunk &c) override { return lanes_.at(c.lane)->pool(); }
    cu::stream fill_stream_of(const gpu_chunk &c) const override {
        return lanes_.at(c.lane)->stream();
    }

    std::size_t devices() const noexcept { return lanes_.size(); }
    const cu::device &device(std::size_t i) const { return lanes_.at(i)->dev(); }
    lane_counters counters(std::size_t i) const { return core_.lanes().counters(i); }
    // The host chunks (staging), split per GPU where the capture's engine was (staging.h).
    const chunk_pool &host_pool() noexcept { return core_.host().eng().pool(); }
    // The CPUs GPU i's copy and recycle threads run on (staged_lanes::set_cpus).
    void set_cpus(std::size_t i, std::vector<int> cpus) {
        core_.lanes().set_cpus(i, std::move(cpus));
    }
    const std::vector<int> &cpus(std::size_t i) const { return core_.lanes().cpus(i); }
    const chunk_router &router() const noexcept { return core_.lanes().router(); }
    capture &host() noexcept { return core_.host(); }

private:
    // Declared first: unpinned only after the lanes' threads and copies have ended.
    std::vector<std::unique_ptr<cu::host_registration>> pinned_;
    std::vector<cuda_lane *> lanes_;  // owned by core_
    staged_delivery core_;
};

}  // namespace casper400g_rx
