#include "casper400g_rx/nic_emulator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "casper400g_rx/divider.h"
#include "casper400g_rx/example_stream.h"

namespace casper400g_rx {

namespace {

void put16(std::uint8_t *p, std::uint16_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}

// A queue without posted receives: a NIC drops the packet at once (rx_out_of_buffer).
// The emulation first waits a while, so that a consumer that is merely slow costs
// nothing, and drops only when no receive appears: chunks pinned by other queues'
// receives can starve a queue for good, and the NIC does not wait either. It waits 200 ms,
// or the engine's stall timeout when that is longer (as long as the engine itself would
// wait for a queue: a replay that waits for a lagging queue loses nothing).
class starvation {
public:
    explicit starvation(std::uint32_t stall_timeout_ms)
        : patience_(std::max<std::int64_t>(200, stall_timeout_ms)) {}
    // Called while no receive is posted: true when the packet is to be dropped. Once
    // it has given up, it keeps dropping until a receive is posted again.
    bool give_up() {
        if (dropping_) return true;
        const auto now = std::chrono::steady_clock::now();
        if (!waiting_) {
            waiting_ = true;
            since_ = now;
        }
        if (now - since_ >= std::chrono::milliseconds(patience_)) {
            dropping_ = true;
            return true;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        return false;
    }
    void reset() noexcept { waiting_ = dropping_ = false; }

private:
    std::int64_t patience_;
    bool waiting_ = false;
    bool dropping_ = false;
    std::chrono::steady_clock::time_point since_{};
};

}  // namespace

frame_template::frame_template(std::size_t payload_size, std::uint16_t udp_port) noexcept {
    static constexpr std::uint8_t dst_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
    static constexpr std::uint8_t src_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
    std::uint8_t *out = bytes_;
    std::memcpy(out, dst_mac, 6);
    std::memcpy(out + 6, src_mac, 6);
    put16(out + 12, 0x0800);
    std::uint8_t *ip = out + 14;
    ip[0] = 0x45;
    ip[1] = 0;
    put16(ip + 2, static_cast<std::uint16_t>(20 + 8 + payload_size));
    put16(ip + 4, 0);  // Identification: per frame
    put16(ip + 6, 0x4000);  // don't fragment
    ip[8] = 64;
    ip[9] = 17;
    put16(ip + 10, 0);  // checksum: per frame
    const std::uint8_t src_ip[4] = {10, 0, 0, 1};
    const std::uint8_t dst_ip[4] = {10, 0, 0, 2};
    std::memcpy(ip + 12, src_ip, 4);
    std::memcpy(ip + 16, dst_ip, 4);
    fixed_sum_ = 0;
    for (int i = 0; i < 20; i += 2) fixed_sum_ += static_cast<std::uint32_t>((ip[i] << 8) | ip[i + 1]);
    std::uint8_t *udp = ip + 20;
    put16(udp, 4000);
    put16(udp + 2, udp_port);
    put16(udp + 4, static_cast<std::uint16_t>(8 + payload_size));
    put16(udp + 6, 0);  // no UDP checksum (allowed for IPv4)
}

void write_frame_header(std::uint8_t *out, std::size_t payload_size, std::uint16_t udp_port,
                        std::uint64_t seq) noexcept {
    frame_template(payload_size, udp_port).write(out, seq);
}

nic_emulator_source::nic_emulator_source(const emulator_config &cfg, std::size_t lanes)
    : cfg_(cfg), header_(cfg.payload_size, cfg.udp_port), lanes_(lanes) {
    if (lanes == 0) throw std::invalid_argument("queues must be > 0, got 0");
    if (!(cfg_.rate_gbps >= 0))
        throw std::invalid_argument("nic_rate_gbps must be >= 0, got " +
                                    std::to_string(cfg_.rate_gbps));
    if (cfg_.rate_gbps > 0 && cfg_.serial)
        throw std::invalid_argument("a set NIC rate needs one thread per queue (emulate='ibv'), "
                                    "not emulate='ibv-serial'");
    for (const auto &st : cfg_.stalls)
        if (st.queue >= lanes)
            throw std::invalid_argument("stall of queue " + std::to_string(st.queue) +
                                        ": the emulation has " + std::to_string(lanes) +
                                        " queues");
    if ((cfg_.poll_us || !cfg_.stalls.empty()) && cfg_.rate_gbps <= 0)
        throw std::invalid_argument("poll_us and stalls need a set NIC rate (rate_gbps > 0)");
    if (!cfg_.cpus.empty() && cfg_.cpus.size() != (cfg_.serial ? 1 : lanes))
        throw std::invalid_argument("cpus must name one CPU per queue thread (" +
                                    std::to_string(cfg_.serial ? 1 : lanes) + "), got " +
                                    std::to_string(cfg_.cpus.size()));
    const bool given = !cfg_.sizes.empty();
    if (given) {
        if (!cfg_.schedule.empty() || cfg_.count != 0)
            throw std::invalid_argument("given packets are sent as they are: no schedule or count");
        if (cfg_.packets.size() < cfg_.sizes.size() * cfg_.stride)
            throw std::invalid_argument("packets buffer shorter than sizes x stride");
        for (std::size_t i = 0; i < cfg_.sizes.size(); i++)
            if (cfg_.sizes[i] > cfg_.stride || cfg_.sizes[i] > 65507)
                throw std::invalid_argument("packet " + std::to_string(i) + " size " +
                                            std::to_string(cfg_.sizes[i]) +
                                            " exceeds its row (" + std::to_string(cfg_.stride) +
                                            " bytes) or a UDP payload's 65507");
        if (cfg_.queue_of.empty() && lanes > 1)
            throw std::invalid_argument("given packets over " + std::to_string(lanes) +
                                        " queues need queue_of (a queue per packet)");
        if (!cfg_.queue_of.empty() && cfg_.queue_of.size() != cfg_.sizes.size())
            throw std::invalid_argument("queue_of names " + std::to_string(cfg_.queue_of.size()) +
                                        " queues for " + std::to_string(cfg_.sizes.size()) +
                                        " packets");
        for (const std::uint32_t q : cfg_.queue_of)
            if (q >= lanes)
                throw std::invalid_argument("queue_of names queue " + std::to_string(q) +
                                            " of " + std::to_string(lanes));
    } else if (cfg_.payload_size < 8 || cfg_.payload_size % 8 != 0) {
        throw std::invalid_argument("example-stream payload size must be a multiple of 8, got " +
                                    std::to_string(cfg_.payload_size));
    }
    const bool scheduled = !cfg_.schedule.empty();
    const std::uint64_t n = given ? cfg_.sizes.size() : scheduled ? cfg_.schedule.size() : cfg_.count;
    if (!given && !scheduled && cfg_.bad.empty() && n <= UINT64_MAX - cfg_.first) {
        // The example stream's count, without runts or a wrap of the sequence space:
        // each queue's packets are every lanes-th from its first.
        if (cfg_.serial) {
            all_.first = cfg_.first;
            all_.step = 1;
            all_.n = n;
            return;
        }
        for (std::size_t q = 0; q < lanes; q++) {
            lane_input &l = lanes_[q];
            const std::uint64_t i0 = (q + lanes - cfg_.first % lanes) % lanes;
            l.first = cfg_.first + i0;
            l.step = lanes;
            l.n = i0 < n ? (n - 1 - i0) / lanes + 1 : 0;
        }
        return;
    }
    std::vector<std::uint8_t> is_bad(n, 0);
    for (const std::uint64_t b : cfg_.bad) {
        if (b >= n)
            throw std::invalid_argument("bad packet position " + std::to_string(b) +
                                        " is beyond the " + std::to_string(n) + " packets sent");
        is_bad[b] = 1;
    }
    // Tens of millions of packets for a benchmark: room made once, not by regrowth.
    if (cfg_.serial) {
        all_.seqs.reserve(n);
        all_.bad.reserve(n);
    } else {
        for (lane_input &l : lanes_) {
            l.seqs.reserve(n / lanes + 1);
            l.bad.reserve(n / lanes + 1);
        }
    }
    for (std::uint64_t i = 0; i < n; i++) {
        const std::uint64_t seq = given ? i : scheduled ? cfg_.schedule[i] : cfg_.first + i;
        const std::size_t lane = given ? (cfg_.queue_of.empty() ? 0 : cfg_.queue_of[i]) : seq % lanes;
        lane_input &l = cfg_.serial ? all_ : lanes_[lane];
        l.seqs.push_back(seq);
        l.bad.push_back(is_bad[i]);
    }
}

// Which entries of a queue's header ring hold the example stream's frame header (written
// by this queue's thread since it started): a frame into one of them writes only the
// words that differ from frame to frame (Identification, checksum, payload prefix); the
// rest are the same bytes. The NIC's DMA writes them all, but not on the lane's core,
// which the emulation shares. Entries outside the ring are written whole.
class nic_emulator_source::header_stamps {
public:
    header_stamps() = default;
    header_stamps(const std::uint8_t *ring, std::size_t entries, std::size_t entry)
        : ring_(ring), entry_(entry), done_(entries, 0) {}
    // True when `h` holds the header already; else it is marked as about to.
    bool stamped(const std::uint8_t *h) noexcept {
        const auto at = static_cast<std::uintptr_t>(h - ring_);
        if (ring_ == nullptr || h < ring_ || entry_.rem(at) != 0 || entry_.quot(at) >= done_.size())
            return false;
        std::uint8_t &d = done_[entry_.quot(at)];
        if (d != 0) return true;
        d = 1;
        return false;
    }

private:
    const std::uint8_t *ring_ = nullptr;
    divider entry_{1};  // a cache-line multiple, usually one line: no division per frame
    std::vector<std::uint8_t> done_;
};

nic_emulator_source::header_stamps nic_emulator_source::stamps_for(hds_engine &eng,
                                                                   std::size_t lane) const {
    // Given packets' headers differ from frame to frame: always written whole.
    if (!cfg_.sizes.empty()) return header_stamps();
    return header_stamps(eng.header_ring(lane), eng.depth(), eng.layout().entry);
}

void nic_emulator_source::write_frame(const recv_target &t, std::uint64_t seq, std::size_t prefix,
                                      std::vector<std::uint8_t> &staging,
                                      header_stamps &stamps) const noexcept {
    const std::size_t size = cfg_.payload_size;
    if (stamps.stamped(t.header))
        header_.write_varying(t.header, seq);
    else
        header_.write(t.header, seq);
    std::uint8_t *pre = t.header + split_layout::headers;
    if (prefix == 8) {
        // The usual prefix, the sequence word (word 0 of the example payload).
        const std::uint64_t be = __builtin_bswap64(seq);
        std::memcpy(pre, &be, 8);
        if (cfg_.fill) write_example_words(t.payload, seq, 1, size / 8, store_);
    } else if (prefix % 8 == 0) {
        // The split falls on a word boundary: write each word where the DMA puts it (the
        // lane reads the prefix at once, so plain stores).
        write_example_words(pre, seq, 0, prefix / 8, word_store::cached);
        if (cfg_.fill) write_example_words(t.payload, seq, prefix / 8, size / 8, store_);
    } else {
        fill_example_payload(staging.data(), size, seq, true);
        std::memcpy(pre, staging.data(), prefix);
        // Without `fill`, only the rest of the words the prefix cuts through.
        const std::size_t rest = cfg_.fill ? size - prefix : (8 - prefix % 8) % 8;
        std::memcpy(t.payload, staging.data() + prefix, rest);
    }
}

void nic_emulator_source::emit(const recv_target &t, std::uint64_t seq, bool bad,
                               std::size_t prefix, std::uint32_t frame_len,
                               std::vector<std::uint8_t> &staging, header_stamps &stamps,
                               recv_completion &out) const noexcept {
    out.wr_id = t.wr_id;
    if (cfg_.sizes.empty()) {
        write_frame(t, seq, prefix, staging, stamps);
        // A runt is 8 bytes short of the format's frame: the split check rejects it.
        out.byte_len = bad ? frame_len - 8 : frame_len;
        out.ok = true;
        return;
    }
    const std::size_t n = cfg_.sizes[seq];
    const std::uint8_t *src = cfg_.packets.data() + seq * cfg_.stride;
    constexpr std::size_t h = split_layout::headers;
    write_frame_header(t.header, n, cfg_.udp_port, seq);
    // Entry by entry, as the NIC's DMA scatters a frame.
    const std::size_t a = std::min<std::size_t>(n, t.header_len - h);
    const std::size_t b = std::min<std::size_t>(n - a, t.payload_len);
    const std::size_t c = std::min<std::size_t>(n - a - b, t.tail_len);
    std::memcpy(t.header + h, src, a);
    if (b != 0) std::memcpy(t.payload, src + a, b);
    if (c != 0) std::memcpy(t.tail, src + a + b, c);
    // Longer than the receive's entries: the NIC completes it with a length error.
    out.byte_len = static_cast<std::uint32_t>(h + n);
    out.ok = a + b + c == n && !bad;
}

void nic_emulator_source::run(std::size_t i, engine &eng_base, const std::atomic<bool> &stop) {
    auto *eng = dynamic_cast<hds_engine *>(&eng_base);
    if (eng == nullptr) throw std::logic_error("the NIC emulation needs the header-split engine");
    if (eng->lanes() != lanes_.size())
        throw std::logic_error("NIC emulation has " + std::to_string(lanes_.size()) +
                               " queues, the engine " + std::to_string(eng->lanes()));
    if (cfg_.serial) {
        run_serial(*eng, stop);
        return;
    }
    if (cfg_.rate_gbps > 0) {
        run_paced(i, *eng, stop);
        return;
    }
    const lane_input &in = lanes_[i];
    const std::size_t depth = eng->depth();
    const std::size_t prefix = eng->layout().prefix;
    const std::uint32_t frame_len = static_cast<std::uint32_t>(eng->layout().frame_len());
    std::vector<recv_target> ring(depth);  // the receive queue, as the NIC sees it
    std::vector<std::uint8_t> staging(cfg_.payload_size);
    header_stamps stamps = stamps_for(*eng, i);
    std::size_t head = 0, count = 0;
    recv_completion comps[batch_size];
    std::size_t next = 0;
    const std::size_t total = in.size();
    // The example stream counted, its prefix the sequence word and nothing else written
    // (bench_pps): the usual benchmark's frames.
    const bool quick = cfg_.sizes.empty() && in.step != 0 && prefix == 8 && !cfg_.fill;
    starvation wait(eng->config().stall_timeout_ms);
    // Ring positions wrap by a compare, not a division (per packet).
    auto wrap = [depth](std::size_t k) { return k >= depth ? k - depth : k; };
    while (next < total) {
        if (stop.load(std::memory_order_relaxed)) break;
        // Posted straight into the ring: up to its end, then from its start.
        const std::size_t k = wrap(head + count);
        const std::size_t room = std::min(depth - count, depth - k);
        const std::size_t got = eng->post(i, ring.data() + k, room);
        count += got;
        if (got == room && count < depth) count += eng->post(i, ring.data(), depth - count);
        if (count == 0) {
            if (wait.give_up()) {
                nic_drops_.fetch_add(1, std::memory_order_relaxed);
                next++;
            }
            continue;
        }
        wait.reset();
        const std::size_t n = std::min({batch_size, count, total - next});
        if (quick) {
            // The benchmark's frames: what emit() does for them, inline.
            for (std::size_t j = 0; j < n; j++, next++) {
                const recv_target &t = ring[head];
                const std::uint64_t seq = in.first + next * in.step;
                if (stamps.stamped(t.header))
                    header_.write_varying(t.header, seq);
                else
                    header_.write(t.header, seq);
                const std::uint64_t be = __builtin_bswap64(seq);
                std::memcpy(t.header + split_layout::headers, &be, 8);
                comps[j].wr_id = t.wr_id;
                comps[j].byte_len = frame_len;
                comps[j].ok = true;
                head = wrap(head + 1);
            }
            count -= n;
        } else {
            for (std::size_t j = 0; j < n; j++) {
                emit(ring[head], in.seq(next), in.is_bad(next), prefix, frame_len, staging,
                     stamps, comps[j]);
                head = wrap(head + 1);
                count--;
                next++;
            }
        }
        // The NIC writes the data before the completion entry that announces it.
        order_streaming_stores();
        eng->complete(i, comps, n);
    }
    // Tearing the queue down: receives still posted will never be written.
    eng->cancel(i);
}

void nic_emulator_source::run_serial(hds_engine &eng, const std::atomic<bool> &stop) {
    const std::size_t n_lanes = lanes_.size();
    const std::size_t depth = eng.depth();
    const std::size_t prefix = eng.layout().prefix;
    const std::uint32_t frame_len = static_cast<std::uint32_t>(eng.layout().frame_len());
    struct lane_queue {
        std::vector<recv_target> ring;
        std::size_t head = 0, count = 0;
    };
    std::vector<lane_queue> q(n_lanes);
    for (auto &l : q) l.ring.resize(depth);
    std::vector<header_stamps> stamps;
    for (std::size_t lane = 0; lane < n_lanes; lane++) stamps.push_back(stamps_for(eng, lane));
    std::vector<recv_target> fresh(depth);
    std::vector<std::uint8_t> staging(cfg_.payload_size);
    recv_completion comps[batch_size];
    std::size_t n_comps = 0, comp_lane = 0;
    starvation wait(eng.config().stall_timeout_ms);
    auto flush = [&] {
        order_streaming_stores();
        if (n_comps) eng.complete(comp_lane, comps, n_comps);
        n_comps = 0;
    };
    auto refill = [&](std::size_t lane) {
        lane_queue &l = q[lane];
        const std::size_t got = eng.post(lane, fresh.data(), depth - l.count);
        for (std::size_t j = 0; j < got; j++) l.ring[(l.head + l.count + j) % depth] = fresh[j];
        l.count += got;
    };
    for (std::size_t next = 0; next < all_.size();) {
        if (stop.load(std::memory_order_relaxed)) break;
        const std::uint64_t seq = all_.seq(next);
        const std::size_t lane = cfg_.sizes.empty()        ? seq % n_lanes
                                 : cfg_.queue_of.empty() ? 0
                                                         : cfg_.queue_of[seq];
        if (lane != comp_lane || n_comps == batch_size) flush();
        comp_lane = lane;
        lane_queue &l = q[lane];
        if (l.count < depth / 2 + 1) {
            // Keep the queue topped up as a driver would; completions first, so that
            // the engine posts against what has arrived.
            flush();
            refill(lane);
            if (l.count == 0) {
                if (wait.give_up()) {
                    nic_drops_.fetch_add(1, std::memory_order_relaxed);
                    next++;
                }
                continue;
            }
        }
        wait.reset();
        const recv_target &t = l.ring[l.head];
        emit(t, seq, all_.is_bad(next), prefix, frame_len, staging, stamps[lane], comps[n_comps++]);
        l.head = (l.head + 1) % depth;
        l.count--;
        next++;
    }
    flush();
    for (std::size_t lane = 0; lane < n_lanes; lane++) eng.cancel(lane);
}

// One queue at its share of the set rate. Packet j of the queue arrives at t0 + j/rate;
// each pass of the poll loop, the packets that have arrived since the last pass take
// the receives that were posted then, and those beyond them are dropped, as a NIC
// drops a packet that finds its queue empty (rx_out_of_buffer): a thread that falls
// behind (a slow engine, no free chunk, the GPU copy holding chunks) loses packets
// rather than slowing the stream down.
void nic_emulator_source::run_paced(std::size_t i, hds_engine &eng, const std::atomic<bool> &stop) {
    using clock = std::chrono::steady_clock;
    const lane_input &in = lanes_[i];
    const std::size_t depth = eng.depth();
    const std::size_t prefix = eng.layout().prefix;
    const std::uint32_t frame_len = static_cast<std::uint32_t>(eng.layout().frame_len());
    double bytes = static_cast<double>(cfg_.payload_size);
    if (!cfg_.sizes.empty()) {
        bytes = 0;
        for (const std::size_t s : cfg_.sizes) bytes += static_cast<double>(s);
        bytes /= static_cast<double>(cfg_.sizes.size());
    }
    const double ns_per_packet = bytes * 8.0 * lanes_.size() / cfg_.rate_gbps;
    std::vector<recv_target> ring(depth);
    std::vector<std::uint8_t> staging(cfg_.payload_size);
    std::size_t head = 0, count = 0;
    auto wrap = [depth](std::size_t k) { return k >= depth ? k - depth : k; };
    // Receives posted straight into the ring (up to its end, then from its start): how
    // many.
    auto post = [&] {
        const std::size_t k = wrap(head + count);
        const std::size_t room = std::min(depth - count, depth - k);
        std::size_t got = eng.post(i, ring.data() + k, room);
        if (got == room && count + got < depth) got += eng.post(i, ring.data(), depth - count - got);
        count += got;
        return got;
    };
    recv_completion comps[batch_size];
    std::size_t next = 0;
    const std::size_t total = in.size();
    header_stamps stamps = stamps_for(eng, i);
    // The receives are posted before the stream starts, as a driver does when it
    // brings the queue up.
    post();
    std::vector<emulator_config::stall> stalls;
    for (const auto &st : cfg_.stalls)
        if (st.queue == i) stalls.push_back(st);
    std::sort(stalls.begin(), stalls.end(),
              [](const auto &a, const auto &b) { return a.at > b.at; });  // next one last
    const auto poll = std::chrono::microseconds(cfg_.poll_us);
    const auto t0 = clock::now();
    auto next_poll = t0;
    while (next < total) {
        if (stop.load(std::memory_order_relaxed)) break;
        if (!stalls.empty() && next >= stalls.back().at) {
            std::this_thread::sleep_for(std::chrono::microseconds(stalls.back().us));
            stalls.pop_back();
        }
        if (cfg_.poll_us) {
            std::this_thread::sleep_until(next_poll);
            next_poll = std::max(next_poll, clock::now()) + poll;
        }
        const double ns = std::chrono::duration<double, std::nano>(clock::now() - t0).count();
        const std::size_t due =
            std::min<std::size_t>(total, static_cast<std::size_t>(ns / ns_per_packet) + 1);
        if (due <= next) {
            // Ahead of the stream: busy-poll as the receive thread of a NIC queue does,
            // keeping the queue topped up meanwhile.
            const std::size_t got = count < depth ? post() : 0;
            if (got == 0) std::this_thread::yield();
            continue;
        }
        const std::size_t arrived = due - next;
        const std::size_t taken = std::min(arrived, count);
        for (std::size_t done = 0; done < taken;) {
            const std::size_t n = std::min(batch_size, taken - done);
            for (std::size_t j = 0; j < n; j++) {
                const recv_target &t = ring[head];
                emit(t, in.seq(next), in.is_bad(next), prefix, frame_len, staging, stamps, comps[j]);
                head = wrap(head + 1);
                next++;
            }
            count -= n;
            done += n;
            order_streaming_stores();
            eng.complete(i, comps, n);
        }
        if (arrived > taken) {
            nic_drops_.fetch_add(arrived - taken, std::memory_order_relaxed);
            next += arrived - taken;
        }
        post();
    }
    eng.cancel(i);
}

}  // namespace casper400g_rx
