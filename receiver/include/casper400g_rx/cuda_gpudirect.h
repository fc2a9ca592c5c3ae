// GPUDirect placement, with a NIC-less emulation of the NIC: whole frames are
// written into a GPU arrival ring in arrival order (here by host-to-device DMA
// from pinned staging, as a NIC's DMA would write them), and the reorder kernels
// (cuda_kernels.cu) place each payload into time-ordered GPU chunks with the CPU
// engine's accounting. Per batch the control launches (parse, walk) and one scatter
// launch run on two streams, so that the next batch's control overlaps the current
// scatter.
#pragma once

#include <atomic>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "casper400g_rx/cuda_chunks.h"
#include "casper400g_rx/cuda_kernels.h"
#include "casper400g_rx/engine.h"
#include "casper400g_rx/format.h"

namespace casper400g_rx {

// The one home of these defaults: the bindings and gpu.py (GPUDIRECT_DEFAULTS) read them
// from here. They carry a 400 Gb/s stream on 2 SMs (740 Gb/s measured on an H100).
struct gpudirect_config {
    std::size_t ring_packets = 32768;  // arrival ring slots (a multiple of batch)
    std::size_t batch = 4096;          // packets per parse/walk/scatter launch group
    std::size_t headroom = 6;          // bytes before each frame: a 42-byte header's payload on 16 B
    unsigned blocks = 2;               // scatter thread blocks: the SM footprint
    std::size_t slots = 8;             // launches in flight
};

// What the emulated NIC receives: given frames (repeated), or example-stream
// packets (seq = first.. or a schedule) framed as Ethernet/IPv4/UDP to udp_port.
struct frame_feed {
    std::vector<std::uint8_t> frames;  // n rows of `stride` bytes
    std::size_t stride = 0;
    std::vector<std::size_t> sizes;
    std::size_t repeat = 1;
    bool generate = false;
    std::uint64_t first = 0, count = 0;
    std::vector<std::uint64_t> schedule;
    std::uint16_t udp_port = 7148;

    std::uint64_t total() const;
    std::size_t max_frame(std::size_t payload_size) const;
};

// Writes the example-stream frame of packet `seq` (Ethernet/IPv4/UDP, IPv4 header
// checksum set, UDP checksum 0) into out; returns its length.
std::size_t build_example_frame(std::uint8_t *out, std::size_t payload_size, std::uint64_t seq,
                                std::uint16_t udp_port);

class gpudirect_capture : public gpu_capture {
public:
    gpudirect_capture(const format &fmt, const engine_config &cfg,
                      std::shared_ptr<const cu::device> dev, const gpudirect_config &gcfg,
                      frame_feed feed);
    ~gpudirect_capture() override;

    void start() override;
    void stop() override;
    void check_error() override;
    bool running() const override { return running_.load(); }
    gpu_chunk *next(std::chrono::nanoseconds timeout, gpu_chunk_queue::status &why) override;
    void release(gpu_chunk *c, const std::vector<cu::stream> &after) override;
    bool finished() const override { return ready_.drained(); }
    std::map<std::string, std::uint64_t> stats() const override;
    gpu_chunk_pool &pool() override { return pool_; }
    cu::stream fill_stream() const override { return scatter_.get(); }

    // Benchmark: fills the whole arrival ring from the feed, then times the reorder
    // launches over it alone (queued behind a gate, released at once). Returns
    // seconds; the capture is spent afterwards (its chunks are not handed out).
    // control_only: time the parse and walk launches alone (no scatter).
    double time_ring_pass(bool control_only = false);

private:
    void main();
    void fill_region(std::size_t region, std::uint64_t pos, std::size_t n);
    void issue(std::uint64_t start, std::size_t n, std::size_t region, bool scatter = true);
    void issue_finish();
    void complete_oldest();
    void recover();
    void post_free(std::uint32_t buffer);
    void service_releases(bool wait);
    void fail(std::exception_ptr e);

    format fmt_;
    engine_config cfg_;
    std::shared_ptr<const cu::device> dev_;
    gpudirect_config g_;
    frame_feed feed_;
    std::size_t stride_;
    std::size_t regions_;
    std::uint64_t total_;

    gpu_chunk_pool pool_;
    cu::device_memory ring_, lens_, bits_, n_present_, state_, win_, snap_, slot_state_, resolve_,
        parsed_, ev_idx_, ev_count_;
    cu::mapped_host_memory records_, free_ring_, gate_;
    std::vector<std::unique_ptr<cu::mapped_host_memory>> staging_;
    cu::stream_owner dma_, ctrl_, scatter_;
    std::vector<cu::event_owner> dma_ev_, ctrl_ev_, scat_ev_;
    cu::event_owner t0_, t1_;
    cu::module mod_ = nullptr;
    cu::function k_parse_ = nullptr, k_walk_ = nullptr, k_scatter_ = nullptr, k_gate_ = nullptr;
    unsigned walk_shmem_ = 0;
    gd::params p_{};
    std::size_t record_stride_;

    struct launch {
        std::uint64_t start, end;
        std::size_t slot;
    };
    std::deque<launch> inflight_;
    std::uint64_t launches_ = 0;
    std::uint64_t consumed_ = 0;  // packets the device has handled, as far as the host knows
    bool stalled_ = false;
    std::uint64_t pos_ = 0;       // packets written into the ring so far
    std::uint64_t free_tail_ = 0;
    std::uint64_t device_free_head_ = 0;  // free-ring entries taken, as of the last record

    gpu_chunk_queue ready_;
    std::mutex released_mutex_;
    std::vector<gpu_chunk *> released_;
    std::vector<gpu_chunk *> pending_;  // released, waiting for the consumer's streams

    std::thread thread_;
    std::atomic<bool> stop_{false}, running_{false};
    std::mutex error_mutex_;
    std::exception_ptr error_;
    bool started_ = false;

    mutable std::mutex stats_mutex_;
    gd::counters totals_{};
    std::atomic<std::uint64_t> dropped_{0}, packets_dropped_{0}, waits_{0}, stalls_{0},
        gpu_chunks_in_use_{0};
};

}  // namespace casper400g_rx
