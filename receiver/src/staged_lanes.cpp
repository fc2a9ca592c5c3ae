#include "casper400g_rx/staged_lanes.h"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace casper400g_rx {

namespace {

constexpr auto slice = std::chrono::milliseconds(50);  // how often a waiting thread looks at abort

std::string cpu_list(const std::vector<int> &cpus) {
    std::string out;
    for (int c : cpus) out += (out.empty() ? "" : ",") + std::to_string(c);
    return out;
}

// The engine's pool split per device must route as the delivery does: a chunk's memory
// is then that of the device its number goes to. One part serves any routing.
void check_staging(const chunk_pool &pool, const chunk_router &router) {
    if (pool.parts() == 1) return;
    if (pool.parts() != router.lanes())
        throw std::invalid_argument("the staging pool is split into " +
                                    std::to_string(pool.parts()) + " parts, the delivery has " +
                                    std::to_string(router.lanes()) + " devices");
    const std::size_t a = pool.staging().period();
    const std::size_t b = router.table().empty() ? router.lanes() : router.table().size();
    std::size_t g = a, r = b;
    while (r != 0) g = std::exchange(r, g % r);
    const std::size_t lcm = a / g * b;
    for (std::size_t k = 0; k < lcm; k++)
        if (pool.part_of(k) != router.lane_of(k))
            throw std::invalid_argument("the staging pool puts chunk " + std::to_string(k) +
                                        " in the part of device " +
                                        std::to_string(pool.part_of(k)) +
                                        ", the delivery routes it to device " +
                                        std::to_string(router.lane_of(k)));
}

std::size_t total_ring(const std::vector<std::unique_ptr<lane_device>> &devices) {
    std::size_t n = 0;
    for (const auto &d : devices) n += d->ring_size();
    return n;
}

}  // namespace

staged_lanes::lane::lane(std::unique_ptr<lane_device> d, std::size_t host_chunks)
    : dev(std::move(d)), inbox(host_chunks), free(dev->ring_size()) {}

staged_lanes::staged_lanes(std::shared_ptr<engine> eng, chunk_router router,
                           std::vector<std::unique_ptr<lane_device>> devices)
    : eng_(std::move(eng)), router_(std::move(router)), ready_(total_ring(devices)) {
    if (devices.size() != router_.lanes())
        throw std::invalid_argument("the mapping routes to " + std::to_string(router_.lanes()) +
                                    " devices, " + std::to_string(devices.size()) + " given");
    check_staging(eng_->pool(), router_);
    for (std::size_t i = 0; i < devices.size(); i++) {
        if (devices[i]->ring_size() < 2)
            throw std::invalid_argument("gpu_chunks must be at least 2, got " +
                                        std::to_string(devices[i]->ring_size()));
        lanes_.push_back(std::make_unique<lane>(std::move(devices[i]), eng_->pool().size()));
        lane &l = *lanes_.back();
        for (std::size_t k = 0; k < l.dev->ring_size(); k++) {
            gpu_chunk *g = l.dev->ring_chunk(k);
            g->lane = i;
            l.free.push(g);
        }
    }
}

staged_lanes::~staged_lanes() {
    abort();
    if (dispatch_thread_.joinable()) dispatch_thread_.join();
    for (auto &l : lanes_) {
        if (l->copy_thread.joinable()) l->copy_thread.join();
        if (l->recycle_thread.joinable()) l->recycle_thread.join();
    }
}

void staged_lanes::set_cpus(std::size_t i, std::vector<int> cpus) {
    if (i >= lanes_.size())
        throw std::out_of_range("lane " + std::to_string(i) + " of a delivery with " +
                                std::to_string(lanes_.size()) + " lanes");
    if (started_) throw std::logic_error("set_cpus after start");
    for (int c : cpus)
        if (c < 0 || c >= CPU_SETSIZE)
            throw std::invalid_argument("lane " + std::to_string(i) + ": CPU " +
                                        std::to_string(c) + " is not a CPU number (0.." +
                                        std::to_string(CPU_SETSIZE - 1) + ")");
    lanes_[i]->cpus = std::move(cpus);
}

void staged_lanes::enter_lane_thread(std::size_t i, const char *what) {
    const std::string name = std::string("rx-") + what + std::to_string(i);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());  // only a label
    const std::vector<int> &cpus = lanes_[i]->cpus;
    if (cpus.empty()) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    if (rc != 0)
        throw std::runtime_error("cannot pin lane " + std::to_string(i) + "'s " + what +
                                 " thread to CPUs " + cpu_list(cpus) + ": " +
                                 std::strerror(rc));
}

void staged_lanes::start() {
    if (started_) return;
    started_ = true;
    active_ = lanes_.size();
    for (std::size_t i = 0; i < lanes_.size(); i++) {
        lanes_[i]->recycle_thread = std::thread(&staged_lanes::recycle_main, this, i);
        lanes_[i]->copy_thread = std::thread(&staged_lanes::copy_main, this, i);
    }
    if (lanes_.size() > 1) dispatch_thread_ = std::thread(&staged_lanes::dispatch_main, this);
}

void staged_lanes::abort() {
    abort_ = true;
    eng_->ready().interrupt();
    for (auto &l : lanes_) l->inbox.interrupt();
}

void staged_lanes::finish_unstarted() {
    if (!started_) ready_.finish();
}

void staged_lanes::fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = e;
}

void staged_lanes::check_error() {
    std::exception_ptr e;
    {
        std::lock_guard<std::mutex> lock(error_mutex_);
        e = std::exchange(error_, nullptr);
    }
    if (e) std::rethrow_exception(e);
}

void staged_lanes::dispatch_main() {
    pthread_setname_np(pthread_self(), "rx-dispatch");
    try {
        while (!abort_) {
            chunk_queue::status why;
            chunk *h = eng_->ready().pop_for(slice, why);
            if (h == nullptr) {
                if (why == chunk_queue::status::finished) break;
                continue;
            }
            lane &l = *lanes_[router_.lane_of(h->chunk_id)];
            l.routed++;
            l.inbox.push(h);
        }
    } catch (...) {
        fail(std::current_exception());
        abort();
    }
    for (auto &l : lanes_) l->inbox.finish();
}

gpu_chunk *staged_lanes::acquire(std::size_t i) {
    lane &l = *lanes_[i];
    if (gpu_chunk *g = l.free.try_pop()) return g;
    if (eng_->config().policy == slow_consumer_policy::drop_oldest) {
        if (gpu_chunk *g = ready_.take_oldest(i)) {
            l.chunks_dropped++;
            l.packets_dropped += g->n_present;
            return g;
        }
    }
    l.waits++;
    while (!abort_) {
        gpu_chunk_queue::status why;
        if (gpu_chunk *g = l.free.pop_for(slice, why)) return g;
    }
    return nullptr;
}

void staged_lanes::copy_main(std::size_t i) {
    lane &l = *lanes_[i];
    // One lane takes the engine's ready queue itself; several get theirs routed.
    chunk_queue &in = lanes_.size() == 1 ? eng_->ready() : l.inbox;
    chunk_pool &host = eng_->pool();
    const std::size_t ppc = host.packets_per_chunk();
    const slot_extras &extras = host.extras();
    try {
        enter_lane_thread(i, "copy");
        l.dev->bind_thread();
        while (!abort_) {
            chunk_queue::status why;
            chunk *h = in.pop_for(slice, why);
            if (h == nullptr) {
                if (why == chunk_queue::status::finished) break;
                continue;
            }
            if (lanes_.size() == 1) l.routed++;
            gpu_chunk *g = acquire(i);
            if (g == nullptr) {
                eng_->release(h);
                break;
            }
            l.bytes_copied += l.dev->copy(*h, *g);
            // What the consumer reads on the host: the mask and SPEAD's per-heap arrays.
            std::memcpy(g->present_host, h->present, ppc);
            if (g->heap_bytes_host != nullptr && extras.heap_bytes) {
                std::memcpy(g->heap_bytes_host, h->heap_bytes, ppc * sizeof(std::uint64_t));
                if (g->items_host != nullptr && extras.items)
                    std::memcpy(g->items_host, h->items,
                                extras.items * ppc * sizeof(std::uint64_t));
            }
            g->chunk_id = h->chunk_id;
            g->n_present = h->n_present;
            {
                std::lock_guard<std::mutex> lock(l.inflight_mutex);
                l.inflight.push_back(h);
            }
            l.inflight_cv.notify_one();
            l.chunks++;
            l.packets += g->n_present;
            ready_.push(g);
        }
    } catch (...) {
        fail(std::current_exception());
        abort();
    }
    // Given up (abort): what was routed here goes back to the engine's pool.
    while (chunk *h = l.inbox.try_pop()) eng_->release(h);
    {
        std::lock_guard<std::mutex> lock(l.inflight_mutex);
        l.copy_done = true;
    }
    l.inflight_cv.notify_one();
    // The last lane to end ends the stream: every chunk routed anywhere is in the queue.
    if (active_.fetch_sub(1) == 1) ready_.finish();
}

void staged_lanes::recycle_main(std::size_t i) {
    lane &l = *lanes_[i];
    try {
        enter_lane_thread(i, "recycle");
        l.dev->bind_thread();
        for (;;) {
            chunk *h;
            {
                std::unique_lock<std::mutex> lock(l.inflight_mutex);
                l.inflight_cv.wait(lock, [&l] { return !l.inflight.empty() || l.copy_done; });
                if (l.inflight.empty()) return;
                h = l.inflight.front();
                l.inflight.pop_front();
            }
            l.dev->wait_copied(*h);
            eng_->release(h);
        }
    } catch (...) {
        fail(std::current_exception());
        abort();
    }
}

void staged_lanes::release(gpu_chunk *c) { lanes_.at(c->lane)->free.push(c); }

lane_counters staged_lanes::counters(std::size_t i) const {
    const lane &l = *lanes_.at(i);
    lane_counters c;
    c.routed = l.routed.load();
    c.chunks = l.chunks.load();
    c.packets = l.packets.load();
    c.chunks_dropped = l.chunks_dropped.load();
    c.packets_dropped = l.packets_dropped.load();
    c.waits = l.waits.load();
    c.bytes_copied = l.bytes_copied.load();
    c.n_chunks = l.dev->ring_size();
    c.in_use = c.n_chunks - l.free.size();
    return c;
}

std::map<std::string, std::uint64_t> staged_lanes::totals() const {
    lane_counters t;
    for (std::size_t i = 0; i < lanes_.size(); i++) {
        const lane_counters c = counters(i);
        t.chunks += c.chunks;
        t.chunks_dropped += c.chunks_dropped;
        t.packets_dropped += c.packets_dropped;
        t.waits += c.waits;
        t.in_use += c.in_use;
        t.n_chunks += c.n_chunks;
        t.bytes_copied += c.bytes_copied;
    }
    return {{"gpu_chunks", t.chunks},
            {"gpu_chunks_dropped", t.chunks_dropped},
            {"gpu_packets_dropped", t.packets_dropped},
            {"gpu_waits", t.waits},
            {"gpu_chunks_in_use", t.in_use},
            {"n_gpu_chunks", t.n_chunks},
            {"h2d_bytes", t.bytes_copied}};
}

staged_delivery::staged_delivery(std::shared_ptr<capture> cap, chunk_router router,
                                 std::vector<std::unique_ptr<lane_device>> devices)
    : cap_(std::move(cap)), lanes_(cap_->engine_ptr(), std::move(router), std::move(devices)) {}

staged_delivery::~staged_delivery() {
    lanes_.abort();
    try {
        cap_->stop();
    } catch (...) {
        // Destructors must not throw; the capture's error was reported by stop() before.
    }
}

void staged_delivery::start() {
    if (started_) return;
    started_ = true;
    lanes_.start();
    cap_->start();
}

void staged_delivery::stop() {
    cap_->stop();
    lanes_.finish_unstarted();
}

void staged_delivery::check_error() {
    cap_->check_error();
    lanes_.check_error();
}

}  // namespace casper400g_rx
