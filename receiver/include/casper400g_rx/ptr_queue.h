// Bounded FIFO of pointers with blocking pops: how chunks (host or GPU) pass between a
// capture's threads and its consumer.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace casper400g_rx {

// Its capacity is the pool size, so push never waits. A lock is taken per item (a chunk),
// never per packet.
template <class T>
class ptr_queue {
public:
    enum class status { ok, timeout, interrupted, finished };

    explicit ptr_queue(std::size_t capacity) : ring_(capacity) {}

    void push(T *p) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (count_ == ring_.size()) throw std::logic_error("chunk queue overflow");
            ring_[(head_ + count_) % ring_.size()] = p;
            count_++;
        }
        cv_.notify_one();
    }

    T *try_pop() {
        std::lock_guard<std::mutex> lock(mutex_);
        return count_ == 0 ? nullptr : take();
    }

    // The oldest item that `pred` accepts, taken out (the others keep their order), or null.
    template <class Pred>
    T *try_pop_first(Pred pred) {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::size_t n = ring_.size();
        for (std::size_t i = 0; i < count_; i++) {
            T *p = ring_[(head_ + i) % n];
            if (!pred(static_cast<const T *>(p))) continue;
            for (std::size_t j = i; j + 1 < count_; j++)
                ring_[(head_ + j) % n] = ring_[(head_ + j + 1) % n];
            count_--;
            return p;
        }
        return nullptr;
    }

    // Waits up to `timeout` for an item. Returns nullptr with the reason when none.
    T *pop_for(std::chrono::nanoseconds timeout, status &why) {
        std::unique_lock<std::mutex> lock(mutex_);
        const bool woken = cv_.wait_for(
            lock, timeout, [this] { return count_ > 0 || interrupted_ || finished_; });
        if (count_ > 0) {
            why = status::ok;
            return take();
        }
        why = !woken ? status::timeout : interrupted_ ? status::interrupted : status::finished;
        return nullptr;
    }

    // Wakes current and future waiters (`interrupted` once the queue is empty).
    void interrupt() { set(interrupted_); }
    // No more items will be pushed: waiters get `finished` once the queue is empty.
    void finish() { set(finished_); }

    std::size_t size() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return count_;
    }

    // finish() was called and every item has been popped.
    bool drained() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return finished_ && count_ == 0;
    }

private:
    T *take() {
        T *p = ring_[head_];
        head_ = (head_ + 1) % ring_.size();
        count_--;
        return p;
    }
    void set(bool &flag) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            flag = true;
        }
        cv_.notify_all();
    }

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<T *> ring_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    bool interrupted_ = false;
    bool finished_ = false;
};

}  // namespace casper400g_rx
