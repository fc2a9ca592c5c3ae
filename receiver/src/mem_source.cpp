#include "casper400g_rx/mem_source.h"

#include <stdexcept>
#include <string>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/example_stream.h"

namespace casper400g_rx {

buffer_source::buffer_source(const std::uint8_t *data, std::size_t stride,
                             std::vector<std::size_t> sizes, bool frames, linktype lt,
                             std::uint16_t udp_port, std::size_t repeat)
    : data_(data, data + stride * sizes.size()),
      stride_(stride),
      sizes_(std::move(sizes)),
      frames_(frames),
      lt_(lt),
      udp_port_(udp_port),
      repeat_(repeat) {
    for (std::size_t i = 0; i < sizes_.size(); i++)
        if (sizes_[i] > stride_)
            throw std::invalid_argument("packet " + std::to_string(i) + " size " +
                                        std::to_string(sizes_[i]) + " exceeds the row stride " +
                                        std::to_string(stride_));
}

void buffer_source::run(std::size_t, engine &eng, const std::atomic<bool> &stop) {
    packet_ref batch[batch_size];
    std::size_t n = 0;
    for (std::size_t r = 0; r < repeat_; r++) {
        for (std::size_t i = 0; i < sizes_.size(); i++) {
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
                eng.add_batch(batch, n);
                n = 0;
            }
        }
    }
    if (n) eng.add_batch(batch, n);
}

generator_source::generator_source(std::size_t payload_size, std::uint64_t first,
                                   std::uint64_t count, std::vector<std::uint64_t> schedule,
                                   bool fill)
    : payload_size_(payload_size),
      first_(first),
      count_(schedule.empty() ? count : schedule.size()),
      schedule_(std::move(schedule)),
      fill_(fill) {
    if (payload_size_ < 8 || payload_size_ % 8 != 0)
        throw std::invalid_argument("example-stream payload size must be a multiple of 8, got " +
                                    std::to_string(payload_size_));
}

void generator_source::run(std::size_t, engine &eng, const std::atomic<bool> &stop) {
    // The staging area plays the NIC's receive ring: written here, copied by the engine.
    std::vector<std::uint8_t> staging(batch_size * payload_size_);
    packet_ref batch[batch_size];
    for (std::size_t j = 0; j < batch_size; j++) {
        batch[j] = packet_ref{staging.data() + j * payload_size_, payload_size_, -1};
        if (!fill_) fill_example_payload(staging.data() + j * payload_size_, payload_size_, 0);
    }
    for (std::uint64_t i = 0; i < count_;) {
        if (stop.load(std::memory_order_relaxed)) return;
        const std::size_t n = static_cast<std::size_t>(
            std::min<std::uint64_t>(batch_size, count_ - i));
        for (std::size_t j = 0; j < n; j++) {
            const std::uint64_t seq = schedule_.empty() ? first_ + i + j : schedule_[i + j];
            fill_example_payload(staging.data() + j * payload_size_, payload_size_, seq, fill_);
        }
        eng.add_batch(batch, n);
        i += n;
    }
}

}  // namespace casper400g_rx
