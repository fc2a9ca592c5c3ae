// GPUDirect placement, with a NIC-less emulation of the NIC: whole frames are
// written into a GPU arrival ring in arrival order (here by host-to-device DMA
// from pinned staging, as a NIC's DMA would write them), and the reorder kernels
// (cuda_kernels.cu) place each payload into time-ordered GPU chunks with the CPU
// engine's accounting. Per batch the control launches (parse, walk) and one scatter
// launch run on two streams, so that the next batch's control overlaps the current
// scatter.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
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

// Which GPU of a capture's several an engine is (gd::route_chunk): chunk id mod gpus.
struct gpu_route {
    std::uint32_t gpus = 1, gpu = 0;
};

// SPEAD formats: stats() names `rejected` by reason as this prefix + spead_reject_name
// (the bindings make them the dict `rejected_by`, as the CPU engine's stats have it).
inline constexpr const char *gd_rejected_by_prefix = "rejected_by.";

// What the emulated NIC receives: given frames (repeated), or example-stream
// packets (seq = first.. or a schedule) framed as Ethernet/IPv4/UDP to udp_port.
// `steer` keeps of the generated stream first.. only the packets of one GPU's chunks
// (ppc packets per chunk), as the NIC's steering would (steer_feed for the others).
struct frame_feed {
    std::vector<std::uint8_t> frames;  // n rows of `stride` bytes
    std::size_t stride = 0;
    std::vector<std::size_t> sizes;
    std::size_t repeat = 1;
    bool generate = false;
    std::uint64_t first = 0, count = 0;
    std::vector<std::uint64_t> schedule;
    std::uint16_t udp_port = 7148;
    gpu_route steer;
    std::uint64_t ppc = 1;

    std::uint64_t total() const;
    std::size_t max_frame(std::size_t payload_size) const;
    // The sequence number of generated packet i (of total()).
    std::uint64_t seq_at(std::uint64_t i) const;
};

// GPU `route.gpu`'s share of `feed`, as a NIC steering each chunk's packets to its GPU's
// queue (or the FPGA's destination table sending them to its port) would deliver it:
// the example stream's packets of its chunks (ppc packets per chunk), or the given
// frames whose sequence number (parsed as `fmt` says) falls in its chunks, in arrival
// order. Frames that fail the parse (stray traffic) go to GPU 0, whose engine rejects
// and counts them.
frame_feed steer_feed(const frame_feed &feed, const format &fmt, std::uint64_t ppc,
                      gpu_route route);

// A GPU's window in local chunk ids: opened (`started`) at `lo`, reached `hi`.
struct gpu_span {
    bool started = false;
    std::uint64_t lo = 0, hi = 0;
};

// Per GPU, the chunks of the capture's extent that its own window never reached: the
// extent runs from first_chunk (or the lowest chunk any GPU opened at) to the highest
// any GPU reached (global ids), and GPU g's share of it is the chunks = g mod G; its
// window counted those in its span lost or placed, the others are lost here.
std::vector<std::uint64_t> unreached_chunks(const std::vector<gpu_span> &spans,
                                            std::optional<std::uint64_t> first_chunk);

// Writes the example-stream frame of packet `seq` (Ethernet/IPv4/UDP, IPv4 header
// checksum set, UDP checksum 0) into out; returns its length.
std::size_t build_example_frame(std::uint8_t *out, std::size_t payload_size, std::uint64_t seq,
                                std::uint16_t udp_port);

class gpudirect_capture : public gpu_capture {
public:
    // route: this engine's GPU of a capture's several; it places that GPU's chunks and
    // hands them over with their global ids.
    gpudirect_capture(const format &fmt, const engine_config &cfg,
                      std::shared_ptr<const cu::device> dev, const gpudirect_config &gcfg,
                      frame_feed feed, gpu_route route = {});
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

    // The next chunk if one is ready (nullptr otherwise); next() without the wait.
    gpu_chunk *try_next();
    // Called (on the capture's thread) when a chunk is ready and when the stream ends.
    void on_ready(std::function<void()> f) { notify_ = std::move(f); }
    // The window's extent so far in local chunk ids, and whether the stream was handled
    // to its end (not stopped early).
    gpu_span span() const;
    bool completed() const { return completed_.load(); }
    const cu::device &device() const { return *dev_; }
    gpu_route route() const { return route_; }

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

    gd::spead_desc spead_;  // enabled = 0 for fixed-size formats
    gpu_chunk_pool pool_;
    cu::device_memory ring_, lens_, bits_, n_present_, state_, win_, snap_, slot_state_, resolve_,
        parsed_, ev_idx_, ev_count_;
    // SPEAD formats: per-heap bytes and items of the GPU chunks, the item bids, the items
    // of each packet in the ring and the buffer it was placed in (gd::params).
    cu::device_memory heap_bytes_, items_, item_tags_, packet_items_, spead_placed_;
    cu::mapped_host_memory records_, free_ring_, gate_, extras_;
    std::vector<std::unique_ptr<cu::mapped_host_memory>> staging_;
    cu::stream_owner dma_, ctrl_, scatter_;
    std::vector<cu::event_owner> dma_ev_, ctrl_ev_, scat_ev_;
    cu::event_owner t0_, t1_;
    cu::module mod_ = nullptr;
    cu::function k_parse_ = nullptr, k_walk_ = nullptr, k_scatter_ = nullptr, k_gate_ = nullptr;
    unsigned walk_shmem_ = 0;
    gd::params p_{};
    gpu_route route_;
    gpu_span span_;  // under stats_mutex_
    std::function<void()> notify_;
    std::atomic<bool> completed_{false};
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

// The kernels' view of a SPEAD format (enabled = 0 for others): spead_format's fields and
// the header-data split's cut of its heaps (split_layout::for_spead), for heaps_per_chunk
// heaps per chunk. Throws std::invalid_argument for what the kernels cannot place.
gd::spead_desc gd_spead_desc(const format &fmt, std::size_t heaps_per_chunk);

// GPUDirect into several GPUs: one engine per GPU (its own arrival ring, kernels and
// chunks), GPU g taking chunks g, g + G, ... (gd::route_chunk). Chunks come out of one
// queue as their GPUs finish them, the lowest id first among those ready, each on its
// own GPU (gpu_chunk::lane: its position in `devs`). stats: the GPUs' counters summed,
// with the chunks no GPU's window reached counted lost once the stream has ended.
class gpudirect_multi : public gpu_capture {
public:
    // feeds: per GPU the frames its ring receives (steer_feed, or the same feed for all).
    gpudirect_multi(const format &fmt, const engine_config &cfg,
                    const std::vector<std::shared_ptr<const cu::device>> &devs,
                    const gpudirect_config &gcfg, std::vector<frame_feed> feeds);
    // The engines' threads end before the wake-up they call goes.
    ~gpudirect_multi() override;

    void start() override;
    void stop() override;
    void check_error() override;
    bool running() const override;
    gpu_chunk *next(std::chrono::nanoseconds timeout, gpu_chunk_queue::status &why) override;
    void release(gpu_chunk *c, const std::vector<cu::stream> &after) override;
    bool finished() const override;
    std::map<std::string, std::uint64_t> stats() const override;
    gpu_chunk_pool &pool() override { return engines_.front()->pool(); }
    cu::stream fill_stream() const override { return engines_.front()->fill_stream(); }
    gpu_chunk_pool &pool_of(const gpu_chunk &c) override { return engines_.at(c.lane)->pool(); }
    cu::stream fill_stream_of(const gpu_chunk &c) const override {
        return engines_.at(c.lane)->fill_stream();
    }

    std::size_t devices() const noexcept { return engines_.size(); }
    const gpudirect_capture &engine(std::size_t i) const { return *engines_.at(i); }
    // GPU i's counters; its `lost` includes its chunks no window reached (stream ended).
    std::map<std::string, std::uint64_t> device_stats(std::size_t i) const;

private:
    std::vector<std::uint64_t> unreached() const;

    std::optional<std::uint64_t> first_chunk_;
    std::uint64_t ppc_;
    std::vector<std::unique_ptr<gpudirect_capture>> engines_;
    std::mutex next_mutex_;
    std::vector<gpu_chunk *> held_;  // per GPU: taken from its queue, not yet handed out
    std::atomic<std::size_t> n_held_{0};
    std::mutex wake_mutex_;
    std::condition_variable wake_;
    std::uint64_t wakes_ = 0;
};

}  // namespace casper400g_rx
