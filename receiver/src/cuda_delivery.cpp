#include "casper400g_rx/cuda_delivery.h"

#include <cstring>
#include <stdexcept>

namespace casper400g_rx {

namespace {

constexpr std::size_t page = 4096;
std::size_t round_up(std::size_t n) { return (n + page - 1) / page * page; }

}  // namespace

gpu_delivery::gpu_delivery(std::shared_ptr<capture> cap, std::shared_ptr<const cu::device> dev,
                           std::size_t n_gpu_chunks)
    : cap_(std::move(cap)),
      eng_(cap_->engine_ptr()),
      dev_(std::move(dev)),
      pool_(dev_, n_gpu_chunks ? n_gpu_chunks : eng_->pool().size(),
            eng_->config().packets_per_chunk, eng_->fmt().payload_size),
      stream_(dev_),
      free_(pool_.size()),
      ready_(pool_.size()) {
    chunk_pool &host = eng_->pool();
    if (pool_.size() < 2)
        throw std::invalid_argument("gpu_chunks must be at least 2, got " +
                                    std::to_string(pool_.size()));
    // The pool's chunks are page-aligned and page-rounded (chunk_pool), so each one
    // is pinned where it lies: the engine keeps writing into the same memory.
    const std::size_t data_bytes = round_up(host.packets_per_chunk() * host.payload_size());
    const std::size_t mask_bytes = round_up(host.packets_per_chunk());
    for (std::size_t i = 0; i < host.size(); i++) {
        pinned_.push_back(
            std::make_unique<cu::host_registration>(dev_, host.get(i)->data, data_bytes));
        pinned_.push_back(
            std::make_unique<cu::host_registration>(dev_, host.get(i)->present, mask_bytes));
        copied_.emplace_back(dev_, cu::event_blocking_sync | cu::event_disable_timing);
    }
    if (const auto &s = eng_->fmt().spead)
        pool_.add_host_extras(
            std::vector<std::uint64_t>(s->items.begin(), s->items.begin() + s->n_items));
    for (std::size_t i = 0; i < pool_.size(); i++) free_.push(pool_.get(i));
}

gpu_delivery::~gpu_delivery() {
    abort_ = true;
    try {
        cap_->stop();
    } catch (...) {
        // Destructors must not throw; the capture's error was reported by stop() before.
    }
    eng_->ready().interrupt();
    if (copy_thread_.joinable()) copy_thread_.join();
    if (recycle_thread_.joinable()) recycle_thread_.join();
}

void gpu_delivery::start() {
    if (started_) return;
    started_ = true;
    copying_ = true;
    recycle_thread_ = std::thread(&gpu_delivery::recycle_main, this);
    copy_thread_ = std::thread(&gpu_delivery::copy_main, this);
    cap_->start();
}

void gpu_delivery::stop() {
    // Stopping the source flushes the open chunks; the copy thread carries them to
    // the GPU and then ends the stream (the consumer drains it with next()).
    cap_->stop();
    if (!started_) ready_.finish();
}

void gpu_delivery::fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = e;
}

void gpu_delivery::check_error() {
    cap_->check_error();
    std::exception_ptr e;
    {
        std::lock_guard<std::mutex> lock(error_mutex_);
        e = error_;
        error_ = nullptr;
    }
    if (e) std::rethrow_exception(e);
}

bool gpu_delivery::running() const { return cap_->running() || copying_.load(); }

gpu_chunk *gpu_delivery::acquire() {
    if (gpu_chunk *g = free_.try_pop()) return g;
    if (eng_->config().policy == slow_consumer_policy::drop_oldest) {
        if (gpu_chunk *g = ready_.try_pop()) {
            gpu_dropped_++;
            gpu_packets_dropped_ += g->n_present;
            return g;
        }
    }
    gpu_waits_++;
    while (!abort_) {
        gpu_chunk_queue::status why;
        if (gpu_chunk *g = free_.pop_for(std::chrono::milliseconds(50), why)) return g;
    }
    return nullptr;
}

void gpu_delivery::copy_main() {
    const cu::driver &d = dev_->drv();
    try {
        dev_->make_current();
        const std::size_t ppc = pool_.packets_per_chunk();
        const std::size_t bytes = ppc * pool_.payload_size();
        while (!abort_) {
            chunk_queue::status why;
            chunk *h = eng_->ready().pop_for(std::chrono::milliseconds(50), why);
            if (h == nullptr) {
                if (why == chunk_queue::status::finished) break;
                continue;
            }
            gpu_chunk *g = acquire();
            if (g == nullptr) {
                eng_->release(h);
                break;
            }
            for (unsigned k = 0; k < g->n_done; k++)
                dev_->check(d.cuStreamWaitEvent(stream_.get(), g->done[k], 0),
                            "cuStreamWaitEvent");
            g->n_done = 0;
            dev_->check(d.cuMemcpyHtoDAsync(g->data, h->data, bytes, stream_.get()),
                        "cuMemcpyHtoDAsync (chunk data)");
            dev_->check(d.cuMemcpyHtoDAsync(g->present, h->present, ppc, stream_.get()),
                        "cuMemcpyHtoDAsync (present mask)");
            dev_->check(d.cuEventRecord(g->ready, stream_.get()), "cuEventRecord");
            dev_->check(d.cuEventRecord(copied_[h->index].get(), stream_.get()), "cuEventRecord");
            std::memcpy(g->present_host, h->present, ppc);
            if (g->heap_bytes_host != nullptr) {
                std::memcpy(g->heap_bytes_host, h->heap_bytes, ppc * sizeof(std::uint64_t));
                if (g->items_host != nullptr)
                    std::memcpy(g->items_host, h->items,
                                pool_.item_ids().size() * ppc * sizeof(std::uint64_t));
            }
            g->chunk_id = h->chunk_id;
            g->n_present = h->n_present;
            h2d_bytes_ += bytes + ppc;
            {
                std::lock_guard<std::mutex> lock(inflight_mutex_);
                inflight_.push_back(h);
            }
            inflight_cv_.notify_one();
            gpu_chunks_++;
            ready_.push(g);
        }
    } catch (...) {
        fail(std::current_exception());
    }
    {
        std::lock_guard<std::mutex> lock(inflight_mutex_);
        copy_done_ = true;
    }
    inflight_cv_.notify_one();
    copying_ = false;
    ready_.finish();
}

void gpu_delivery::recycle_main() {
    try {
        dev_->make_current();
        for (;;) {
            chunk *h;
            {
                std::unique_lock<std::mutex> lock(inflight_mutex_);
                inflight_cv_.wait(lock, [this] { return !inflight_.empty() || copy_done_; });
                if (inflight_.empty()) return;
                h = inflight_.front();
                inflight_.pop_front();
            }
            dev_->check(dev_->drv().cuEventSynchronize(copied_[h->index].get()),
                        "cuEventSynchronize (host chunk copy)");
            eng_->release(h);
        }
    } catch (...) {
        fail(std::current_exception());
    }
}

gpu_chunk *gpu_delivery::next(std::chrono::nanoseconds timeout, gpu_chunk_queue::status &why) {
    return ready_.pop_for(timeout, why);
}

void gpu_delivery::release(gpu_chunk *c, const std::vector<cu::stream> &after) {
    record_release(*dev_, c, after);
    free_.push(c);
}

std::map<std::string, std::uint64_t> gpu_delivery::stats() const {
    return {{"gpu_chunks", gpu_chunks_.load()},
            {"gpu_chunks_dropped", gpu_dropped_.load()},
            {"gpu_packets_dropped", gpu_packets_dropped_.load()},
            {"gpu_waits", gpu_waits_.load()},
            {"gpu_chunks_in_use", pool_.size() - free_.size()},
            {"n_gpu_chunks", pool_.size()},
            {"h2d_bytes", h2d_bytes_.load()}};
}

}  // namespace casper400g_rx
