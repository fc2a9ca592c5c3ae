#include "casper400g_rx/capture.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <string>

#include "casper400g_rx/errors.h"

namespace casper400g_rx {

capture::capture(const format &fmt, const engine_config &cfg, std::unique_ptr<source> src)
    : engine_(std::make_shared<engine>(fmt, cfg)), source_(std::move(src)) {}

capture::capture(std::shared_ptr<engine> eng, std::unique_ptr<source> src)
    : engine_(std::move(eng)), source_(std::move(src)) {}

capture::~capture() {
    try {
        stop();
    } catch (...) {
        // Destructors must not throw; stop() only fails on a broken thread join.
    }
}

void capture::start() {
    if (started_) return;
    started_ = true;
    engine_->set_queues(source_->n_queues());
    const std::size_t n = source_->n_threads();
    running_threads_ = n;
    threads_.reserve(n);
    for (std::size_t i = 0; i < n; i++) {
        threads_.emplace_back(&capture::thread_main, this, i);
        const int cpu = source_->cpu(i);
        if (cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            const int rc = pthread_setaffinity_np(threads_.back().native_handle(), sizeof(set), &set);
            if (rc != 0) {
                stop();
                throw_errno("cannot pin receive thread " + std::to_string(i) + " to CPU " +
                                std::to_string(cpu),
                            rc);
            }
        }
    }
}

void capture::thread_main(std::size_t i) {
    try {
        source_->run(i, *engine_, stop_);
    } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
    }
    // Chunks stop waiting for a queue whose source has ended.
    const int q = source_->queue_of(i);
    if (q >= 0 && static_cast<std::size_t>(q) < engine_->queues())
        engine_->queue_done(static_cast<std::size_t>(q));
    // The last thread to finish ends the stream, so a finite source (pcap, mem)
    // flushes its chunks without anyone calling stop().
    if (running_threads_.fetch_sub(1) == 1) engine_->finish();
}

void capture::stop() {
    if (stopped_) return;
    stopped_ = true;
    stop_ = true;
    source_->interrupt();
    engine_->interrupt();
    for (auto &t : threads_)
        if (t.joinable()) t.join();
    engine_->finish();
}

void capture::check_error() {
    std::exception_ptr e;
    {
        std::lock_guard<std::mutex> lock(error_mutex_);
        e = error_;
        error_ = nullptr;
    }
    if (e) std::rethrow_exception(e);
}

}  // namespace casper400g_rx
