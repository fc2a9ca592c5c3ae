#include "casper400g_rx/cuda_delivery.h"

#include <stdexcept>

namespace casper400g_rx {

namespace {

constexpr std::size_t page = 4096;
std::size_t round_up(std::size_t n) { return (n + page - 1) / page * page; }

// The pool's chunks are page-aligned and page-rounded (chunk_pool), so each one is pinned
// where it lies: the engine keeps writing into the same memory. Portable: pinned for
// every GPU's context, so any GPU's copy reads it by DMA.
std::vector<std::unique_ptr<cu::host_registration>> pin(
    const std::shared_ptr<const cu::device> &dev, chunk_pool &host) {
    std::vector<std::unique_ptr<cu::host_registration>> out;
    const std::size_t data_bytes = round_up(host.packets_per_chunk() * host.payload_size());
    const std::size_t mask_bytes = round_up(host.packets_per_chunk());
    for (std::size_t i = 0; i < host.size(); i++) {
        out.push_back(std::make_unique<cu::host_registration>(dev, host.get(i)->data, data_bytes));
        out.push_back(
            std::make_unique<cu::host_registration>(dev, host.get(i)->present, mask_bytes));
    }
    return out;
}

std::vector<std::unique_ptr<lane_device>> make_lanes(
    const std::vector<std::shared_ptr<const cu::device>> &devs, engine &eng,
    std::size_t n_gpu_chunks) {
    std::vector<std::unique_ptr<lane_device>> out;
    for (const auto &d : devs) out.push_back(std::make_unique<cuda_lane>(d, eng, n_gpu_chunks));
    return out;
}

const std::shared_ptr<const cu::device> &first(
    const std::vector<std::shared_ptr<const cu::device>> &devs) {
    if (devs.empty()) throw std::invalid_argument("GPU delivery needs a device, got none");
    return devs.front();
}

}  // namespace

cuda_lane::cuda_lane(std::shared_ptr<const cu::device> dev, engine &eng, std::size_t n_chunks)
    : dev_(std::move(dev)),
      pool_(dev_, n_chunks ? n_chunks : eng.pool().size(), eng.config().packets_per_chunk,
            eng.fmt().payload_size),
      stream_(dev_) {
    const std::size_t host_chunks = eng.pool().size();
    copied_.reserve(host_chunks);
    for (std::size_t i = 0; i < host_chunks; i++)
        copied_.emplace_back(dev_, cu::event_blocking_sync | cu::event_disable_timing);
    if (const auto &s = eng.fmt().spead)
        pool_.add_host_extras(
            std::vector<std::uint64_t>(s->items.begin(), s->items.begin() + s->n_items));
}

std::size_t cuda_lane::copy(const chunk &h, gpu_chunk &g) {
    const cu::driver &d = dev_->drv();
    const std::size_t ppc = pool_.packets_per_chunk();
    const std::size_t bytes = ppc * pool_.payload_size();
    for (unsigned k = 0; k < g.n_done; k++)
        dev_->check(d.cuStreamWaitEvent(stream_.get(), g.done[k], 0), "cuStreamWaitEvent");
    g.n_done = 0;
    dev_->check(d.cuMemcpyHtoDAsync(g.data, h.data, bytes, stream_.get()),
                "cuMemcpyHtoDAsync (chunk data)");
    dev_->check(d.cuMemcpyHtoDAsync(g.present, h.present, ppc, stream_.get()),
                "cuMemcpyHtoDAsync (present mask)");
    dev_->check(d.cuEventRecord(g.ready, stream_.get()), "cuEventRecord");
    dev_->check(d.cuEventRecord(copied_[h.index].get(), stream_.get()), "cuEventRecord");
    return bytes + ppc;
}

void cuda_lane::wait_copied(const chunk &h) {
    dev_->check(dev_->drv().cuEventSynchronize(copied_[h.index].get()),
                "cuEventSynchronize (host chunk copy)");
}

gpu_delivery::gpu_delivery(std::shared_ptr<capture> cap,
                           std::vector<std::shared_ptr<const cu::device>> devs,
                           std::size_t n_gpu_chunks, chunk_router router)
    : pinned_(pin(first(devs), cap->eng().pool())),
      core_(cap, std::move(router), make_lanes(devs, cap->eng(), n_gpu_chunks)) {
    for (std::size_t i = 0; i < core_.lanes().lanes(); i++)
        lanes_.push_back(static_cast<cuda_lane *>(&core_.lanes().device(i)));
}

void gpu_delivery::release(gpu_chunk *c, const std::vector<cu::stream> &after) {
    record_release(lanes_.at(c->lane)->dev(), c, after);
    core_.lanes().release(c);
}

}  // namespace casper400g_rx
