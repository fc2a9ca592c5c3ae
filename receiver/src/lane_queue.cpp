#include "casper400g_rx/lane_queue.h"

#include <stdexcept>

namespace casper400g_rx {

lane_ready_queue::lane_ready_queue(std::size_t capacity) : ring_(capacity) {
    if (capacity == 0) throw std::invalid_argument("a ready queue needs room for a chunk");
}

void lane_ready_queue::push(gpu_chunk *c) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (count_ == ring_.size()) throw std::logic_error("device chunk queue overflow");
        at(count_) = c;
        count_++;
    }
    cv_.notify_one();
}

gpu_chunk *lane_ready_queue::pop_for(std::chrono::nanoseconds timeout, status &why) {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool woken = cv_.wait_for(lock, timeout, [this] { return count_ > 0 || finished_; });
    if (count_ == 0) {
        why = woken ? status::finished : status::timeout;
        return nullptr;
    }
    why = status::ok;
    gpu_chunk *c = at(0);
    head_ = (head_ + 1) % ring_.size();
    count_--;
    return c;
}

gpu_chunk *lane_ready_queue::take_oldest(std::size_t lane) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < count_; i++) {
        gpu_chunk *c = at(i);
        if (c->lane != lane) continue;
        // The ones behind it close up, so the order of the rest stays as filled.
        for (std::size_t j = i; j + 1 < count_; j++) at(j) = at(j + 1);
        count_--;
        return c;
    }
    return nullptr;
}

void lane_ready_queue::finish() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_ = true;
    }
    cv_.notify_all();
}

bool lane_ready_queue::drained() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return finished_ && count_ == 0;
}

std::size_t lane_ready_queue::size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
}

}  // namespace casper400g_rx
