#include "casper400g_rx/cuda_chunks.h"

#include <stdexcept>

namespace casper400g_rx {

namespace {

constexpr std::size_t align = 4096;
std::size_t round_up(std::size_t n) { return (n + align - 1) / align * align; }

std::size_t checked_chunk_bytes(std::size_t n, std::size_t ppc, std::size_t payload) {
    if (n == 0 || ppc == 0 || payload == 0)
        throw std::invalid_argument("GPU chunk ring dimensions must be > 0");
    const std::size_t b = round_up(ppc * payload);
    if (b / payload < ppc || n > SIZE_MAX / b)
        throw std::invalid_argument("GPU chunk ring of " + std::to_string(n) +
                                    " chunks is too large");
    return b;
}

}  // namespace

gpu_chunk_pool::gpu_chunk_pool(std::shared_ptr<const cu::device> dev, std::size_t n_chunks,
                               std::size_t packets_per_chunk, std::size_t payload_size)
    : dev_(std::move(dev)),
      ppc_(packets_per_chunk),
      payload_(payload_size),
      chunk_bytes_(checked_chunk_bytes(n_chunks, packets_per_chunk, payload_size)),
      data_(dev_, n_chunks * chunk_bytes_),
      present_(dev_, n_chunks * packets_per_chunk),
      present_host_(dev_, n_chunks * packets_per_chunk) {
    events_.reserve(n_chunks * (1 + gpu_chunk::max_consumers));
    chunks_.resize(n_chunks);
    for (std::size_t i = 0; i < n_chunks; i++) {
        gpu_chunk &c = chunks_[i];
        c.index = i;
        c.data = data_.get() + i * chunk_bytes_;
        c.present = present_.get() + i * ppc_;
        c.present_host = present_host_.host() + i * ppc_;
        events_.emplace_back(dev_, cu::event_disable_timing);
        c.ready = events_.back().get();
        for (auto &d : c.done) {
            events_.emplace_back(dev_, cu::event_disable_timing);
            d = events_.back().get();
        }
    }
}

void gpu_chunk_pool::add_host_extras(std::vector<std::uint64_t> item_ids, std::uint64_t *storage) {
    item_ids_ = std::move(item_ids);
    const std::size_t per_chunk = ppc_ * (1 + item_ids_.size());
    if (storage == nullptr) {
        extras_host_ = std::make_unique<std::uint64_t[]>(chunks_.size() * per_chunk);
        storage = extras_host_.get();
    }
    for (std::size_t i = 0; i < chunks_.size(); i++) {
        chunks_[i].heap_bytes_host = storage + i * per_chunk;
        chunks_[i].items_host = item_ids_.empty() ? nullptr : chunks_[i].heap_bytes_host + ppc_;
    }
}

void record_release(const cu::device &dev, gpu_chunk *c, const std::vector<cu::stream> &after) {
    dev.make_current();
    c->n_done = 0;
    for (cu::stream s : after) {
        if (c->n_done < gpu_chunk::max_consumers) {
            dev.check(dev.drv().cuEventRecord(c->done[c->n_done], s), "cuEventRecord");
            c->n_done++;
        } else {
            dev.check(dev.drv().cuStreamSynchronize(s), "cuStreamSynchronize");
        }
    }
}

}  // namespace casper400g_rx
