#include "casper400g_rx/mem_source.h"

#include <stdexcept>
#include <string>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/example_stream.h"

namespace casper400g_rx {

buffer_source::buffer_source(const std::uint8_t *data, std::size_t stride,
                             std::vector<std::size_t> sizes, bool frames, linktype lt,
                             std::uint16_t udp_port, std::size_t repeat, std::size_t queues)
    : data_(data, data + stride * sizes.size()),
      stride_(stride),
      sizes_(std::move(sizes)),
      frames_(frames),
      lt_(lt),
      udp_port_(udp_port),
      repeat_(repeat),
      queues_(queues) {
    if (queues_ == 0 || queues_ > 1024)
        throw std::invalid_argument("queues must be 1..1024, got " + std::to_string(queues_));
    for (std::size_t i = 0; i < sizes_.size(); i++)
        if (sizes_[i] > stride_)
            throw std::invalid_argument("packet " + std::to_string(i) + " size " +
                                        std::to_string(sizes_[i]) + " exceeds the row stride " +
                                        std::to_string(stride_));
}

void buffer_source::run(std::size_t q, engine &eng, const std::atomic<bool> &stop) {
    packet_ref batch[batch_size];
    std::size_t n = 0;
    for (std::size_t r = 0; r < repeat_; r++) {
        for (std::size_t i = q; i < sizes_.size(); i += queues_) {
            if (stop.load(std::memory_order_relaxed)) return;
            const std::uint8_t *p = data_.data() + i * stride_;
            if (frames_) {
                // A frame that does not parse still reaches the engine, as an
                // empty packet, so that it is counted `rejected`.
                batch[n++] = parse_frame(p, sizes_[i], lt_, udp_port_).value_or(packet_ref{});
            } else {
                batch[n++] = packet_ref{p, sizes_[i], -1};
            }
            if (n == batch_size) {
                eng.add_batch(q, batch, n);
                n = 0;
            }
        }
    }
    if (n) eng.add_batch(q, batch, n);
}

generator_source::generator_source(std::size_t payload_size, std::uint64_t first,
                                   std::uint64_t count, std::vector<std::uint64_t> schedule,
                                   bool fill, std::size_t queues,
                                   std::vector<std::uint32_t> queue_of)
    : payload_size_(payload_size),
      first_(first),
      count_(schedule.empty() ? count : schedule.size()),
      schedule_(std::move(schedule)),
      fill_(fill),
      queues_(queues),
      queue_of_(std::move(queue_of)) {
    if (queues_ == 0 || queues_ > 1024)
        throw std::invalid_argument("queues must be 1..1024, got " + std::to_string(queues_));
    if (!queue_of_.empty() && queue_of_.size() != count_)
        throw std::invalid_argument("queue_of has " + std::to_string(queue_of_.size()) +
                                    " entries for " + std::to_string(count_) + " packets");
    for (std::size_t i = 0; i < queue_of_.size(); i++)
        if (queue_of_[i] >= queues_)
            throw std::invalid_argument("queue_of[" + std::to_string(i) + "] = " +
                                        std::to_string(queue_of_[i]) + " is not a queue of " +
                                        std::to_string(queues_));
    if (payload_size_ < 8 || payload_size_ % 8 != 0)
        throw std::invalid_argument("example-stream payload size must be a multiple of 8, got " +
                                    std::to_string(payload_size_));
}

void generator_source::run(std::size_t q, engine &eng, const std::atomic<bool> &stop) {
    // The staging area plays the NIC's receive ring: written here, copied by the engine.
    std::vector<std::uint8_t> staging(batch_size * payload_size_);
    packet_ref batch[batch_size];
    for (std::size_t j = 0; j < batch_size; j++) {
        batch[j] = packet_ref{staging.data() + j * payload_size_, payload_size_, -1};
        if (!fill_) fill_example_payload(staging.data() + j * payload_size_, payload_size_, 0);
    }
    // Packet indices of this queue: q, q + queues, ... or those queue_of assigns to it.
    const std::uint64_t step = queue_of_.empty() ? queues_ : 1;
    std::uint64_t i = queue_of_.empty() ? q : 0;
    while (i < count_) {
        if (stop.load(std::memory_order_relaxed)) return;
        std::size_t n = 0;
        for (; n < batch_size && i < count_; i += step) {
            if (!queue_of_.empty() && queue_of_[i] != q) continue;
            const std::uint64_t seq = schedule_.empty() ? first_ + i : schedule_[i];
            fill_example_payload(staging.data() + n * payload_size_, payload_size_, seq, fill_);
            n++;
        }
        if (n) eng.add_batch(q, batch, n);
    }
}

}  // namespace casper400g_rx
