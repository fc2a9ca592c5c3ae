// A capture: one engine fed by one source's threads, started and stopped as a unit.
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/source.h"

namespace casper400g_rx {

class capture {
public:
    capture(const format &fmt, const engine_config &cfg, std::unique_ptr<source> src);
    // A capture around an engine made elsewhere (e.g. the header-split engine).
    capture(std::shared_ptr<engine> eng, std::unique_ptr<source> src);
    capture(const capture &) = delete;
    capture &operator=(const capture &) = delete;
    ~capture();  // stops and joins

    void start();
    // Stops the source, flushes the open chunks and ends the stream. Idempotent.
    void stop();
    // Rethrows the first exception a source thread raised, if any.
    void check_error();
    bool running() const noexcept { return running_threads_.load() > 0; }

    engine &eng() noexcept { return *engine_; }
    source &src() noexcept { return *source_; }
    std::shared_ptr<engine> engine_ptr() const noexcept { return engine_; }

private:
    void thread_main(std::size_t i);

    std::shared_ptr<engine> engine_;  // shared: chunks handed out keep it alive
    std::unique_ptr<source> source_;
    std::vector<std::thread> threads_;
    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> running_threads_{0};
    std::mutex error_mutex_;
    std::exception_ptr error_;
    bool started_ = false;
    bool stopped_ = false;
};

}  // namespace casper400g_rx
