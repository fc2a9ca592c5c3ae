#include "casper400g_rx/cuda_gpudirect.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "casper400g_rx/cuda_fatbin.h"
#include "casper400g_rx/example_stream.h"
#include "casper400g_rx/hds.h"

namespace casper400g_rx {

namespace {

std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

void put16(std::uint8_t *p, unsigned v) {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}

std::size_t pool_chunks(const engine_config &cfg) {
    const std::size_t n = cfg.sized(1).n_chunks;  // the engine's pool rule
    if (n > gd::max_buffers)
        throw std::invalid_argument("gpudirect supports at most " +
                                    std::to_string(gd::max_buffers) + " chunks, got n_chunks=" +
                                    std::to_string(n));
    return n;
}

// The kernels' reasons are spead_reject's.
static_assert(gd::sr_grid == static_cast<unsigned>(spead_reject::grid) &&
                  gd::n_spead_reasons == n_spead_rejects && gd::sr_frame == 1 &&
                  gd::sr_unaligned == static_cast<unsigned>(spead_reject::unaligned),
              "gd::spead_reason follows spead_reject");
static_assert(gd::spead_items_max == spead_max_items && gd::spead_absent == spead_item_absent,
              "gd_spead.h follows spead.h");

const format &check_format(const format &f) {
    f.validate();
    if (f.spead) return f;  // gd_spead_desc checks the rest
    if (f.source != seq_source::payload)
        throw std::invalid_argument(
            "gpudirect needs the sequence number in the payload; seq='ipv4_id' (a 16-bit "
            "counter unwrapped packet by packet) is only supported on the CPU path");
    return f;
}

const gpudirect_config &check_config(const gpudirect_config &g, const engine_config &cfg) {
    if (g.batch == 0 || g.ring_packets == 0 || g.ring_packets % g.batch != 0 ||
        g.ring_packets / g.batch < 2)
        throw std::invalid_argument("ring_packets (" + std::to_string(g.ring_packets) +
                                    ") must be at least twice batch (" + std::to_string(g.batch) +
                                    ") and a multiple of it");
    if (g.blocks == 0 || g.blocks > 65535)
        throw std::invalid_argument("blocks must be 1..65535, got " + std::to_string(g.blocks));
    if (g.slots < 2) throw std::invalid_argument("slots must be >= 2, got " + std::to_string(g.slots));
    if (g.headroom > 4096)
        throw std::invalid_argument("headroom must be <= 4096, got " + std::to_string(g.headroom));
    if (cfg.max_chunks > gd::max_window)
        throw std::invalid_argument("gpudirect supports a window of at most " +
                                    std::to_string(gd::max_window) + " chunks, got max_chunks=" +
                                    std::to_string(cfg.max_chunks));
    if (cfg.packets_per_chunk > (std::size_t{1} << 31))
        throw std::invalid_argument("packets_per_chunk too large for gpudirect: " +
                                    std::to_string(cfg.packets_per_chunk));
    return g;
}

// Packet slots per chunk: a duplicate bit each.
std::size_t packet_slots(const gd::spead_desc &s, const engine_config &cfg) {
    return cfg.packets_per_chunk * (s.enabled ? s.parts : 1);
}

}  // namespace

namespace {

// Generated packets [0, x) that fall in chunks of GPU `r.gpu` (ppc packets per chunk).
std::uint64_t steered_below(std::uint64_t x, std::uint64_t ppc, gpu_route r) {
    const std::uint64_t period = ppc * r.gpus;
    return x / period * ppc + std::min(ppc, std::max(x % period, r.gpu * ppc) - r.gpu * ppc);
}

// Chunks c of [0, x) with c mod gpus == gpu.
std::uint64_t owned_below(std::uint64_t x, std::uint32_t gpus, std::uint32_t gpu) {
    return x / gpus + (x % gpus > gpu ? 1 : 0);
}

}  // namespace

gd::spead_desc gd_spead_desc(const format &fmt, std::size_t heaps_per_chunk) {
    gd::spead_desc d{};
    if (!fmt.spead) return d;
    fmt.validate();
    const spead_format &f = *fmt.spead;
    const split_layout l = split_layout::for_spead(fmt);  // throws for a max_packet too small
    // A packet slot per packet of every heap of a chunk, numbered in 32 bits.
    if (heaps_per_chunk == 0 || l.parts > (std::size_t{1} << 31) / heaps_per_chunk)
        throw std::invalid_argument(
            "gpudirect numbers the packets of a chunk's heaps in 31 bits: packets_per_chunk=" +
            std::to_string(heaps_per_chunk) + " heaps of " + std::to_string(l.parts) +
            " packets each are too many");
    d.enabled = 1;
    d.abits = f.heap_address_bits;
    d.index_item = f.index_item;
    d.index_step = f.index_step;
    for (std::size_t k = 0; k < f.n_items; k++) d.items[k] = f.items[k];
    d.n_items = static_cast<std::uint32_t>(f.n_items);
    d.max_packet = static_cast<std::uint32_t>(f.max_packet);
    d.heap = l.heap;
    d.first_part = l.first_part;
    d.later_part = l.later_part;
    d.parts = static_cast<std::uint32_t>(l.parts);
    d.heaps = static_cast<std::uint32_t>(heaps_per_chunk);
    return d;
}

std::uint64_t frame_feed::total() const {
    if (generate) {
        if (!schedule.empty()) return schedule.size();
        if (steer.gpus <= 1) return count;
        return steered_below(first + count, ppc, steer) - steered_below(first, ppc, steer);
    }
    return sizes.size() * repeat;
}

std::uint64_t frame_feed::seq_at(std::uint64_t i) const {
    if (!schedule.empty()) return schedule[i];
    if (steer.gpus <= 1) return first + i;
    // The r-th packet of this GPU's chunks counted from packet 0.
    const std::uint64_t r = steered_below(first, ppc, steer) + i;
    return r / ppc * ppc * steer.gpus + steer.gpu * ppc + r % ppc;
}

frame_feed steer_feed(const frame_feed &feed, const format &fmt, std::uint64_t ppc,
                      gpu_route route) {
    if (route.gpus == 0 || route.gpu >= route.gpus)
        throw std::invalid_argument("GPU " + std::to_string(route.gpu) + " of " +
                                    std::to_string(route.gpus) + " does not exist");
    if (ppc == 0) throw std::invalid_argument("packets_per_chunk must be > 0");
    frame_feed out = feed;
    out.ppc = ppc;
    if (route.gpus <= 1) return out;
    if (feed.generate) {
        if (feed.schedule.empty()) {
            if (ppc > ~std::uint64_t{0} / route.gpus)
                throw std::invalid_argument("packets_per_chunk " + std::to_string(ppc) +
                                            " x " + std::to_string(route.gpus) +
                                            " GPUs overflows a sequence number");
            out.steer = route;
            return out;
        }
        out.schedule.clear();
        for (std::uint64_t seq : feed.schedule)
            if ((seq / ppc) % route.gpus == route.gpu) out.schedule.push_back(seq);
        return out;
    }
    out.frames.clear();
    out.sizes.clear();
    decoder dec(fmt);
    for (std::size_t i = 0; i < feed.sizes.size(); i++) {
        const std::uint8_t *row = feed.frames.data() + i * feed.stride;
        const std::size_t size = std::min(feed.sizes[i], feed.stride);
        std::uint32_t to = 0;
        if (auto pkt = parse_frame(row, size, linktype::ethernet, fmt.udp_port))
            if (auto seq = dec.decode(*pkt)) to = static_cast<std::uint32_t>((*seq / ppc) % route.gpus);
        if (to != route.gpu) continue;
        out.frames.insert(out.frames.end(), row, row + feed.stride);
        out.sizes.push_back(feed.sizes[i]);
    }
    return out;
}

std::vector<std::uint64_t> unreached_chunks(const std::vector<gpu_span> &spans,
                                            std::optional<std::uint64_t> first_chunk) {
    const auto gpus = static_cast<std::uint32_t>(spans.size());
    std::vector<std::uint64_t> out(spans.size(), 0);
    bool any = false;
    std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
    for (std::uint32_t g = 0; g < gpus; g++) {
        if (!spans[g].started) continue;
        any = true;
        lo = std::min(lo, spans[g].lo * gpus + g);
        hi = std::max(hi, spans[g].hi * gpus + g);
    }
    if (!any) return out;
    if (first_chunk) lo = *first_chunk;
    if (hi < lo) return out;
    for (std::uint32_t g = 0; g < gpus; g++) {
        const std::uint64_t share =
            (hi == ~std::uint64_t{0} ? owned_below(hi, gpus, g) + (hi % gpus == g)
                                     : owned_below(hi + 1, gpus, g)) -
            owned_below(lo, gpus, g);
        const std::uint64_t walked = spans[g].started ? spans[g].hi - spans[g].lo + 1 : 0;
        out[g] = share > walked ? share - walked : 0;
    }
    return out;
}

std::size_t frame_feed::max_frame(std::size_t payload_size) const {
    if (generate) return payload_size + 42;
    std::size_t m = 0;
    for (std::size_t s : sizes) m = std::max(m, s);
    return m;
}

std::size_t build_example_frame(std::uint8_t *out, std::size_t payload_size, std::uint64_t seq,
                                std::uint16_t udp_port) {
    static const std::uint8_t macs[12] = {0x0c, 0x42, 0xa1, 0x00, 0x00, 0x14,
                                          0x02, 0x00, 0x0a, 0x00, 0x00, 0x0a};
    std::memcpy(out, macs, 12);
    put16(out + 12, 0x0800);
    std::uint8_t *ip = out + 14;
    ip[0] = 0x45;
    ip[1] = 0;
    put16(ip + 2, static_cast<unsigned>(20 + 8 + payload_size));
    put16(ip + 4, static_cast<unsigned>(seq & 0xffff));
    put16(ip + 6, 0x4000);  // don't fragment
    ip[8] = 64;
    ip[9] = 17;
    put16(ip + 10, 0);
    const std::uint8_t addrs[8] = {10, 0, 0, 10, 10, 0, 0, 20};
    std::memcpy(ip + 12, addrs, 8);
    std::uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += (ip[i] << 8) | ip[i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    put16(ip + 10, ~sum & 0xffff);
    std::uint8_t *udp = ip + 20;
    put16(udp, udp_port);
    put16(udp + 2, udp_port);
    put16(udp + 4, static_cast<unsigned>(8 + payload_size));
    put16(udp + 6, 0);
    fill_example_payload(udp + 8, payload_size, seq);
    return 42 + payload_size;
}

gpudirect_capture::gpudirect_capture(const format &fmt, const engine_config &cfg,
                                     std::shared_ptr<const cu::device> dev,
                                     const gpudirect_config &gcfg, frame_feed feed,
                                     gpu_route route)
    : fmt_(check_format(fmt)),
      cfg_(cfg),
      dev_(std::move(dev)),
      g_(check_config(gcfg, cfg)),
      feed_(std::move(feed)),
      stride_(round_up(feed_.max_frame(fmt.payload_size) + g_.headroom, 64)),
      regions_(g_.ring_packets / g_.batch),
      total_(feed_.total()),
      spead_(gd_spead_desc(fmt_, cfg.packets_per_chunk)),
      pool_(dev_, pool_chunks(cfg), cfg.packets_per_chunk, fmt.payload_size),
      ring_(dev_, g_.ring_packets * stride_),
      lens_(dev_, g_.ring_packets * sizeof(std::uint32_t)),
      bits_(dev_, pool_.size() * ((packet_slots(spead_, cfg) + 31) / 32) * 4),
      n_present_(dev_, pool_.size() * 4),
      state_(dev_, sizeof(gd::state)),
      win_(dev_, cfg.max_chunks * sizeof(gd::window_entry)),
      snap_(dev_, g_.slots * cfg.max_chunks * sizeof(gd::window_entry)),
      slot_state_(dev_, g_.slots * sizeof(gd::slot_state)),
      resolve_(dev_, g_.slots * pool_.size() * sizeof(gd::resolve_entry)),
      parsed_(dev_, g_.ring_packets * sizeof(gd::parsed)),
      ev_idx_(dev_, g_.batch * sizeof(std::uint32_t)),
      ev_count_(dev_, (g_.batch + gd::tile - 1) / gd::tile * sizeof(std::uint32_t)),
      heap_bytes_(dev_, spead_.enabled ? pool_.size() * cfg.packets_per_chunk * 8 : 0),
      items_(dev_, pool_.size() * cfg.packets_per_chunk * spead_.n_items * 8),
      item_tags_(dev_, pool_.size() * cfg.packets_per_chunk * spead_.n_items * 8),
      packet_items_(dev_, g_.ring_packets * spead_.n_items * 8),
      spead_placed_(dev_, spead_.enabled ? g_.ring_packets * 4 : 0),
      records_(dev_, g_.slots * (sizeof(gd::record) + pool_.size() * sizeof(gd::flush_entry))),
      free_ring_(dev_, pool_.size() * 4 + 64),
      gate_(dev_, 64),
      extras_(dev_, spead_.enabled
                        ? pool_.size() * cfg.packets_per_chunk * (1 + spead_.n_items) * 8
                        : 0),
      dma_(dev_),
      ctrl_(dev_),
      scatter_(dev_),
      t0_(dev_, 0),
      t1_(dev_, 0),
      route_(route),
      ready_(pool_.size()) {
    if (route_.gpus == 0 || route_.gpu >= route_.gpus)
        throw std::invalid_argument("GPU " + std::to_string(route_.gpu) + " of " +
                                    std::to_string(route_.gpus) + " does not exist");
    if (!feed_.generate) {
        for (std::size_t i = 0; i < feed_.sizes.size(); i++)
            if (feed_.sizes[i] > feed_.stride)
                throw std::invalid_argument("frame " + std::to_string(i) + " size " +
                                            std::to_string(feed_.sizes[i]) +
                                            " exceeds the row stride " +
                                            std::to_string(feed_.stride));
        if (feed_.frames.size() < feed_.sizes.size() * feed_.stride)
            throw std::invalid_argument("frames buffer shorter than sizes x stride");
    } else if (fmt_.spead) {
        throw std::invalid_argument(
            "gpudirect with a SPEAD format places the frames given (packets=, frames=True): "
            "the example stream it generates otherwise is not SPEAD");
    } else if (fmt_.payload_size % 8 != 0) {
        throw std::invalid_argument("example-stream payload size must be a multiple of 8, got " +
                                    std::to_string(fmt_.payload_size));
    }
    const void *image = cuda_kernels_image();
    if (image == nullptr)
        throw cu::error(
            "gpudirect needs the reorder kernels, and this build of casper400g_rx has none: it "
            "was built without nvcc (install nvidia-cuda-nvcc or a CUDA toolkit and rebuild)");
    const cu::driver &d = dev_->drv();
    dev_->make_current();
    dev_->check(d.cuModuleLoadData(&mod_, image), "cuModuleLoadData (reorder kernels)");
    dev_->check(d.cuModuleGetFunction(&k_parse_, mod_, "casper400g_gd_parse"),
                "cuModuleGetFunction");
    dev_->check(d.cuModuleGetFunction(&k_walk_, mod_, "casper400g_gd_walk"),
                "cuModuleGetFunction");
    walk_shmem_ = gd::walk_shared_bytes(static_cast<unsigned>(cfg.max_chunks),
                                        static_cast<unsigned>(pool_.size()));
    dev_->check(d.cuFuncSetAttribute(k_walk_, cu::func_attr_max_dynamic_shared_size_bytes,
                                     static_cast<int>(walk_shmem_)),
                "cuFuncSetAttribute (walk kernel shared memory)");
    dev_->check(d.cuModuleGetFunction(&k_scatter_, mod_,
                                      spead_.enabled ? "casper400g_gd_scatter_spead"
                                                     : "casper400g_gd_scatter"),
                "cuModuleGetFunction");
    dev_->check(d.cuModuleGetFunction(&k_gate_, mod_, "casper400g_gd_gate"),
                "cuModuleGetFunction");
    for (std::size_t r = 0; r < regions_; r++) {
        staging_.push_back(
            std::make_unique<cu::mapped_host_memory>(dev_, g_.batch * (stride_ + 4)));
        dma_ev_.emplace_back(dev_, cu::event_disable_timing);
    }
    for (std::size_t s = 0; s < g_.slots; s++) {
        ctrl_ev_.emplace_back(dev_, cu::event_disable_timing);
        scat_ev_.emplace_back(dev_, cu::event_blocking_sync | cu::event_disable_timing);
    }
    record_stride_ = sizeof(gd::record) + pool_.size() * sizeof(gd::flush_entry);

    gd::params &p = p_;
    p.ring = ring_.get();
    p.lens = lens_.get();
    p.ring_packets = static_cast<std::uint32_t>(g_.ring_packets);
    p.stride = static_cast<std::uint32_t>(stride_);
    p.headroom = static_cast<std::uint32_t>(g_.headroom);
    p.max_chunks = static_cast<std::uint32_t>(cfg.max_chunks);
    p.ppc = cfg.packets_per_chunk;
    p.n_buffers = static_cast<std::uint32_t>(pool_.size());
    p.bit_words = static_cast<std::uint32_t>((packet_slots(spead_, cfg) + 31) / 32);
    p.fmt.payload_size = static_cast<std::uint32_t>(fmt_.payload_size);
    p.fmt.seq_offset = static_cast<std::uint32_t>(fmt_.seq.offset);
    p.fmt.seq_width = fmt_.seq.width;
    p.fmt.seq_big_endian = fmt_.seq.big_endian;
    if (fmt_.stream_id) {
        p.fmt.has_stream_id = 1;
        p.fmt.sid_offset = static_cast<std::uint32_t>(fmt_.stream_id->offset);
        p.fmt.sid_width = fmt_.stream_id->width;
        p.fmt.sid_big_endian = fmt_.stream_id->big_endian;
        p.fmt.sid_value = fmt_.stream_id_value;
    }
    p.fmt.udp_port = fmt_.udp_port;
    p.data = pool_.data_base();
    p.chunk_bytes = pool_.chunk_bytes();
    p.present = pool_.present_base();
    p.bits = bits_.get();
    p.n_present = n_present_.get();
    p.present_host = pool_.present_host().dev();
    p.st = state_.get();
    p.win = win_.get();
    p.snap = snap_.get();
    p.slots = slot_state_.get();
    p.resolve = resolve_.get();
    p.records = records_.dev();
    p.parsed_ptr = parsed_.get();
    p.ev_idx = ev_idx_.get();
    p.ev_count = ev_count_.get();
    p.record_stride = record_stride_;
    p.free_ring = free_ring_.dev() + 64;
    p.free_tail = free_ring_.dev();
    p.has_first_chunk = cfg.first_chunk.has_value();
    p.first_chunk = cfg.first_chunk.value_or(0);
    p.gpus = route_.gpus;
    p.gpu = route_.gpu;
    if (p.has_first_chunk && route_.gpus > 1) {
        // This GPU's first chunk at or after the capture's first (local id).
        const std::uint64_t f = p.first_chunk;
        p.first_chunk = f <= route_.gpu ? 0 : (f - route_.gpu - 1) / route_.gpus + 1;
    }
    for (std::size_t i = 0; i < pool_.size(); i++) pool_.get(i)->lane = route_.gpu;
    p.spead = spead_;
    p.heap_bytes = heap_bytes_.get();
    p.items = items_.get();
    p.item_tags = item_tags_.get();
    p.extras_host = extras_.dev();
    p.packet_items = packet_items_.get();
    p.spead_placed = spead_placed_.get();
    if (fmt_.spead) {
        // The chunks' heap bytes and items as the copying engine's show them, in the
        // mapped memory the kernels settle them into.
        pool_.add_host_extras(
            std::vector<std::uint64_t>(fmt_.spead->items.begin(),
                                       fmt_.spead->items.begin() + fmt_.spead->n_items),
            reinterpret_cast<std::uint64_t *>(extras_.host()));
        std::memset(extras_.host(), 0, extras_.size());
        const std::size_t heaps = cfg.packets_per_chunk;
        for (std::size_t i = 0; i < pool_.size(); i++) {
            pool_.get(i)->heap_bytes_dev = heap_bytes_.get() + i * heaps * 8;
            if (spead_.n_items != 0)
                pool_.get(i)->items_dev = items_.get() + i * spead_.n_items * heaps * 8;
        }
    }

    // Zeroed state: window empty, counters 0; window positions unmapped (all ones:
    // buffer -1, chunk id ~0).
    dev_->check(d.cuMemsetD8Async(state_.get(), 0, sizeof(gd::state), ctrl_.get()), "cuMemset");
    dev_->check(d.cuMemsetD8Async(win_.get(), 0xff, win_.size(), ctrl_.get()), "cuMemset");
    dev_->check(d.cuMemsetD8Async(bits_.get(), 0, bits_.size(), ctrl_.get()), "cuMemset");
    // Item bids start below every packet's (arrival index + 1).
    dev_->check(d.cuMemsetD8Async(item_tags_.get(), 0, item_tags_.size(), ctrl_.get()),
                "cuMemset");
    dev_->check(d.cuMemsetD8Async(n_present_.get(), 0, n_present_.size(), ctrl_.get()),
                "cuMemset");
    dev_->check(d.cuStreamSynchronize(ctrl_.get()), "cuStreamSynchronize");
    for (std::size_t i = 0; i < pool_.size(); i++) post_free(static_cast<std::uint32_t>(i));
}

gpudirect_capture::~gpudirect_capture() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (mod_ != nullptr) {
        dev_->make_current();
        dev_->drv().cuCtxSynchronize();
        dev_->drv().cuModuleUnload(mod_);
    }
}

void gpudirect_capture::post_free(std::uint32_t buffer) {
    auto *entries = reinterpret_cast<std::uint32_t *>(free_ring_.host() + 64);
    entries[free_tail_ % pool_.size()] = buffer;
    free_tail_++;
    // The kernel reads the tail, then the entries: publish the entry first.
    std::atomic_thread_fence(std::memory_order_release);
    *reinterpret_cast<volatile std::uint64_t *>(free_ring_.host()) = free_tail_;
}

void gpudirect_capture::fill_region(std::size_t region, std::uint64_t pos, std::size_t n) {
    std::uint8_t *stage = staging_[region]->host();
    auto *lens = reinterpret_cast<std::uint32_t *>(stage + g_.batch * stride_);
    for (std::size_t k = 0; k < n; k++) {
        const std::uint64_t i = pos + k;
        std::uint8_t *frame = stage + k * stride_ + g_.headroom;
        if (feed_.generate) {
            const std::uint64_t seq = feed_.seq_at(i);
            lens[k] = static_cast<std::uint32_t>(
                build_example_frame(frame, fmt_.payload_size, seq, feed_.udp_port));
        } else {
            const std::size_t j = static_cast<std::size_t>(i % feed_.sizes.size());
            std::memcpy(frame, feed_.frames.data() + j * feed_.stride, feed_.sizes[j]);
            lens[k] = static_cast<std::uint32_t>(feed_.sizes[j]);
        }
    }
    // The NIC's DMA: frames and their byte counts into the arrival ring.
    const cu::driver &d = dev_->drv();
    const std::size_t first = region * g_.batch;
    dev_->check(d.cuMemcpyHtoDAsync(ring_.get() + first * stride_, stage, n * stride_, dma_.get()),
                "cuMemcpyHtoDAsync (arrival ring)");
    dev_->check(d.cuMemcpyHtoDAsync(lens_.get() + first * 4, lens, n * 4, dma_.get()),
                "cuMemcpyHtoDAsync (frame lengths)");
    dev_->check(d.cuEventRecord(dma_ev_[region].get(), dma_.get()), "cuEventRecord");
}

void gpudirect_capture::issue(std::uint64_t start, std::size_t n, std::size_t region,
                              bool scatter) {
    const cu::driver &d = dev_->drv();
    // The kernels index the ring from the launch's first slot without wrapping.
    if (start % g_.ring_packets + n > g_.ring_packets)
        throw std::logic_error("gpudirect: a launch may not wrap around the arrival ring");
    if (inflight_.size() >= g_.slots) complete_oldest();
    const std::size_t slot = launches_++ % g_.slots;
    dev_->check(d.cuStreamWaitEvent(ctrl_.get(), dma_ev_[region].get(), 0), "cuStreamWaitEvent");
    // The slot's previous launch must have finished its scatter (it reads slot state).
    dev_->check(d.cuStreamWaitEvent(ctrl_.get(), scat_ev_[slot].get(), 0), "cuStreamWaitEvent");
    std::uint64_t s = start;
    auto n32 = static_cast<std::uint32_t>(n);
    auto slot32 = static_cast<std::uint32_t>(slot);
    std::uint32_t finish = 0;
    void *pargs[] = {&p_, &s, &n32};
    const unsigned pblocks = static_cast<unsigned>(
        std::min<std::size_t>(g_.blocks, (n + gd::tile - 1) / gd::tile));
    dev_->check(d.cuLaunchKernel(k_parse_, std::max(pblocks, 1u), 1, 1, gd::tile, 1, 1, 0,
                                 ctrl_.get(), pargs, nullptr),
                "cuLaunchKernel (parse)");
    void *cargs[] = {&p_, &s, &n32, &slot32, &finish};
    dev_->check(d.cuLaunchKernel(k_walk_, 1, 1, 1, gd::walk_threads, 1, 1, walk_shmem_,
                                 ctrl_.get(), cargs, nullptr),
                "cuLaunchKernel (walk)");
    dev_->check(d.cuEventRecord(ctrl_ev_[slot].get(), ctrl_.get()), "cuEventRecord");
    if (!scatter) return;
    dev_->check(d.cuStreamWaitEvent(scatter_.get(), ctrl_ev_[slot].get(), 0), "cuStreamWaitEvent");
    std::uint64_t end = start + n;
    void *sargs[] = {&p_, &s, &slot32, &end};
    dev_->check(d.cuLaunchKernel(k_scatter_, g_.blocks, 1, 1, gd::scatter_threads, 1, 1, 0,
                                 scatter_.get(), sargs, nullptr),
                "cuLaunchKernel (scatter)");
    dev_->check(d.cuEventRecord(scat_ev_[slot].get(), scatter_.get()), "cuEventRecord");
    inflight_.push_back(launch{start, start + n, slot});
}

void gpudirect_capture::issue_finish() {
    const cu::driver &d = dev_->drv();
    if (inflight_.size() >= g_.slots) complete_oldest();
    const std::size_t slot = launches_++ % g_.slots;
    dev_->check(d.cuStreamWaitEvent(ctrl_.get(), scat_ev_[slot].get(), 0), "cuStreamWaitEvent");
    std::uint64_t s = consumed_;
    std::uint32_t n32 = 0, slot32 = static_cast<std::uint32_t>(slot), finish = 1;
    void *cargs[] = {&p_, &s, &n32, &slot32, &finish};
    dev_->check(d.cuLaunchKernel(k_walk_, 1, 1, 1, gd::walk_threads, 1, 1, walk_shmem_,
                                 ctrl_.get(), cargs, nullptr),
                "cuLaunchKernel (walk, finish)");
    dev_->check(d.cuEventRecord(ctrl_ev_[slot].get(), ctrl_.get()), "cuEventRecord");
    dev_->check(d.cuStreamWaitEvent(scatter_.get(), ctrl_ev_[slot].get(), 0), "cuStreamWaitEvent");
    std::uint64_t end = s;
    void *sargs[] = {&p_, &s, &slot32, &end};
    dev_->check(d.cuLaunchKernel(k_scatter_, 1, 1, 1, gd::scatter_threads, 1, 1, 0,
                                 scatter_.get(), sargs, nullptr),
                "cuLaunchKernel (scatter, finish)");
    dev_->check(d.cuEventRecord(scat_ev_[slot].get(), scatter_.get()), "cuEventRecord");
    inflight_.push_back(launch{s, s, slot});
}

void gpudirect_capture::complete_oldest() {
    const launch l = inflight_.front();
    inflight_.pop_front();
    dev_->check(dev_->drv().cuEventSynchronize(scat_ev_[l.slot].get()), "cuEventSynchronize");
    const auto *rec = reinterpret_cast<const volatile gd::record *>(records_.host() +
                                                                     l.slot * record_stride_);
    const auto *fl = reinterpret_cast<const volatile gd::flush_entry *>(rec + 1);
    const std::uint32_t nf = rec->n_flush;
    if (nf > 0) {
        // Flushed in id order; every chunk of the window is flushed once.
        std::lock_guard<std::mutex> lock(stats_mutex_);
        const std::uint64_t first = fl[0].chunk_id, last = fl[nf - 1].chunk_id;
        if (!span_.started) {
            span_.started = true;
            span_.lo = p_.has_first_chunk ? std::min<std::uint64_t>(p_.first_chunk, first) : first;
            span_.hi = last;
        }
        span_.lo = std::min<std::uint64_t>(span_.lo, first);
        span_.hi = std::max<std::uint64_t>(span_.hi, last);
    }
    bool pushed = false;
    for (std::uint32_t k = 0; k < nf; k++) {
        const std::uint32_t b = fl[k].buffer;
        const std::uint32_t np = fl[k].n_present;
        // SPEAD: a chunk of incomplete heaps still holds their bytes, and goes out.
        if (np == 0 && fl[k].partial == 0) {
            post_free(b);
            continue;
        }
        gpu_chunk *g = pool_.get(b);
        // The kernels' local id as the capture's: local * G + g.
        g->chunk_id = fl[k].chunk_id * route_.gpus + route_.gpu;
        g->n_present = np;
        // Its fill is complete: the event completes at once, and it orders the
        // consumer's stream after the kernels all the same.
        dev_->check(dev_->drv().cuEventRecord(g->ready, scatter_.get()), "cuEventRecord");
        ready_.push(g);
        pushed = true;
    }
    if (pushed && notify_) notify_();
    {
        std::lock_guard<std::mutex> lock(stats_mutex_);
        gd::counters t;
        std::memcpy(&t, const_cast<const gd::counters *>(&rec->totals), sizeof(t));
        totals_ = t;
    }
    const std::uint64_t taken = rec->free_head;
    device_free_head_ = std::max(device_free_head_, taken);
    if (!rec->skipped) {
        consumed_ = rec->consumed;
        if (rec->consumed < rec->end) stalled_ = true;
    }
}

void gpudirect_capture::service_releases(bool wait) {
    {
        std::lock_guard<std::mutex> lock(released_mutex_);
        pending_.insert(pending_.end(), released_.begin(), released_.end());
        released_.clear();
    }
    const cu::driver &d = dev_->drv();
    auto done = [&](gpu_chunk *c) {
        for (unsigned k = 0; k < c->n_done; k++) {
            const cu::result r =
                wait ? d.cuEventSynchronize(c->done[k]) : d.cuEventQuery(c->done[k]);
            if (r == cu::error_not_ready) return false;
            dev_->check(r, "cuEventQuery (consumer's release)");
        }
        return true;
    };
    auto it = std::stable_partition(pending_.begin(), pending_.end(),
                                    [&](gpu_chunk *c) { return !done(c); });
    for (auto j = it; j != pending_.end(); ++j) post_free(static_cast<std::uint32_t>((*j)->index));
    pending_.erase(it, pending_.end());
}

void gpudirect_capture::recover() {
    // Processing stopped where the window needed a chunk and none was free; the
    // launches queued after it did nothing. Make room, then re-issue from there.
    while (stalled_ && !stop_) {
        while (!inflight_.empty()) complete_oldest();
        stalls_++;
        // Chunks released since the kernels found the ring empty may already be in it.
        while (free_tail_ == device_free_head_ && !stop_) {
            if (cfg_.policy == slow_consumer_policy::drop_oldest) {
                if (gpu_chunk *g = ready_.try_pop()) {
                    dropped_++;
                    packets_dropped_ += g->n_present;
                    post_free(static_cast<std::uint32_t>(g->index));
                    break;
                }
            }
            waits_++;
            service_releases(false);
            if (free_tail_ == device_free_head_)
                std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        stalled_ = false;
        for (std::uint64_t s = consumed_; s < pos_;) {
            const std::size_t region = static_cast<std::size_t>((s / g_.batch) % regions_);
            const std::uint64_t region_end = (s / g_.batch + 1) * g_.batch;
            const std::uint64_t e = std::min(region_end, pos_);
            issue(s, static_cast<std::size_t>(e - s), region);
            s = e;
        }
        while (!inflight_.empty() && !stalled_) complete_oldest();
    }
}

void gpudirect_capture::main() {
    try {
        dev_->make_current();
        while (pos_ < total_ && !stop_) {
            // The region about to be overwritten must have been handled completely.
            while (consumed_ + g_.ring_packets < pos_ + g_.batch && !stop_) {
                if (stalled_) {
                    recover();
                } else if (!inflight_.empty()) {
                    complete_oldest();
                } else {
                    throw std::logic_error("gpudirect: arrival ring full with nothing in flight");
                }
            }
            if (stop_) break;
            const std::size_t region = static_cast<std::size_t>((pos_ / g_.batch) % regions_);
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(g_.batch, total_ - pos_));
            fill_region(region, pos_, n);
            const std::uint64_t start = pos_;
            pos_ += n;
            issue(start, n, region);
            service_releases(false);
            while (!inflight_.empty() &&
                   dev_->drv().cuEventQuery(scat_ev_[inflight_.front().slot].get()) == cu::success)
                complete_oldest();
            if (stalled_) recover();
        }
        while (!stop_ && (!inflight_.empty() || stalled_)) {
            if (stalled_) recover();
            else complete_oldest();
        }
        while (!inflight_.empty()) complete_oldest();
        if (!stop_ || consumed_ == pos_) {
            issue_finish();
            while (!inflight_.empty()) complete_oldest();
            completed_ = true;
        }
    } catch (...) {
        fail(std::current_exception());
    }
    running_ = false;
    ready_.finish();
    if (notify_) notify_();
}

void gpudirect_capture::start() {
    if (started_) return;
    started_ = true;
    running_ = true;
    thread_ = std::thread(&gpudirect_capture::main, this);
}

void gpudirect_capture::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (!started_) ready_.finish();
}

void gpudirect_capture::fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = e;
}

void gpudirect_capture::check_error() {
    std::exception_ptr e;
    {
        std::lock_guard<std::mutex> lock(error_mutex_);
        e = error_;
        error_ = nullptr;
    }
    if (e) std::rethrow_exception(e);
}

gpu_chunk *gpudirect_capture::try_next() {
    gpu_chunk *c = ready_.try_pop();
    if (c != nullptr) gpu_chunks_in_use_++;
    return c;
}

gpu_span gpudirect_capture::span() const {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    return span_;
}

gpu_chunk *gpudirect_capture::next(std::chrono::nanoseconds timeout,
                                   gpu_chunk_queue::status &why) {
    gpu_chunk *c = ready_.pop_for(timeout, why);
    if (c != nullptr) gpu_chunks_in_use_++;
    return c;
}

void gpudirect_capture::release(gpu_chunk *c, const std::vector<cu::stream> &after) {
    record_release(*dev_, c, after);
    gpu_chunks_in_use_--;
    std::lock_guard<std::mutex> lock(released_mutex_);
    released_.push_back(c);
}

std::map<std::string, std::uint64_t> gpudirect_capture::stats() const {
    gd::counters t;
    {
        std::lock_guard<std::mutex> lock(stats_mutex_);
        t = totals_;
    }
    std::map<std::string, std::uint64_t> out{{"received", t.received},
            {"packets", t.packets},
            {"bytes", t.bytes},
            {"lost", t.lost},
            {"late", t.late},
            {"duplicate", t.duplicate},
            {"rejected", t.rejected},
            {"other_gpu", t.other_gpu},
            {"chunks", t.chunks},
            {"chunks_dropped", dropped_.load()},
            {"packets_dropped", packets_dropped_.load()},
            {"discarded", 0},
            {"waits", waits_.load()},
            {"stalls", stalls_.load()},
            {"gpu_chunks_in_use", gpu_chunks_in_use_.load()},
            {"n_gpu_chunks", pool_.size()},
            {"chunks_in_use", gpu_chunks_in_use_.load()},
            {"n_chunks", pool_.size()}};
    if (spead_.enabled) {
        out["heaps_partial"] = t.heaps_partial;
        for (std::size_t r = 0; r < gd::n_spead_reasons; r++)
            out[std::string(gd_rejected_by_prefix) +
                spead_reject_name(static_cast<spead_reject>(r + 1))] = t.rejected_by[r];
    }
    return out;
}

double gpudirect_capture::time_ring_pass(bool control_only) {
    if (started_) throw std::logic_error("time_ring_pass needs a capture that was not started");
    started_ = true;
    const cu::driver &d = dev_->drv();
    dev_->make_current();
    const std::uint64_t n_total = std::min<std::uint64_t>(total_, g_.ring_packets);
    for (std::uint64_t pos = 0; pos < n_total; pos += g_.batch)
        fill_region(static_cast<std::size_t>(pos / g_.batch), pos,
                    static_cast<std::size_t>(std::min<std::uint64_t>(g_.batch, n_total - pos)));
    dev_->check(d.cuStreamSynchronize(dma_.get()), "cuStreamSynchronize");
    if (g_.slots < (n_total + g_.batch - 1) / g_.batch + 1)
        throw std::invalid_argument("time_ring_pass needs slots >= launches + 1");
    // Queue everything behind a gate so that the host's launch rate is not timed.
    *reinterpret_cast<volatile std::uint32_t *>(gate_.host()) = 0;
    cu::deviceptr flag = gate_.dev();
    void *gargs[] = {&flag};
    dev_->check(d.cuLaunchKernel(k_gate_, 1, 1, 1, 1, 1, 1, 0, ctrl_.get(), gargs, nullptr),
                "cuLaunchKernel (gate)");
    dev_->check(d.cuEventRecord(t0_.get(), ctrl_.get()), "cuEventRecord");
    // The gate opens after 16 batches are queued: a full launch queue behind a closed
    // gate would block the host forever; from then on the host's launch rate counts.
    std::size_t queued = 0;
    for (std::uint64_t pos = 0; pos < n_total; pos += g_.batch) {
        issue(pos, static_cast<std::size_t>(std::min<std::uint64_t>(g_.batch, n_total - pos)),
              static_cast<std::size_t>(pos / g_.batch), !control_only);
        if (++queued == 16) *reinterpret_cast<volatile std::uint32_t *>(gate_.host()) = 1;
    }
    dev_->check(d.cuEventRecord(t1_.get(), control_only ? ctrl_.get() : scatter_.get()),
                "cuEventRecord");
    *reinterpret_cast<volatile std::uint32_t *>(gate_.host()) = 1;
    dev_->check(d.cuEventSynchronize(t1_.get()), "cuEventSynchronize");
    float ms = 0;
    dev_->check(d.cuEventElapsedTime(&ms, t0_.get(), t1_.get()), "cuEventElapsedTime");
    pos_ = n_total;
    if (control_only) {
        // Nothing was scattered or settled: the capture is spent.
        inflight_.clear();
        dev_->check(d.cuCtxSynchronize(), "cuCtxSynchronize");
        ready_.finish();
        return ms / 1e3;
    }
    while (!inflight_.empty()) complete_oldest();
    if (stalled_)
        throw std::runtime_error("time_ring_pass: the GPU chunk pool ran out (use more chunks)");
    ready_.finish();
    return ms / 1e3;
}

gpudirect_multi::gpudirect_multi(const format &fmt, const engine_config &cfg,
                                 const std::vector<std::shared_ptr<const cu::device>> &devs,
                                 const gpudirect_config &gcfg, std::vector<frame_feed> feeds)
    : first_chunk_(cfg.first_chunk), ppc_(cfg.packets_per_chunk) {
    if (devs.size() < 2)
        throw std::invalid_argument("gpudirect into several GPUs needs at least 2, got " +
                                    std::to_string(devs.size()));
    if (feeds.size() != devs.size())
        throw std::invalid_argument(std::to_string(feeds.size()) + " frame feeds for " +
                                    std::to_string(devs.size()) + " GPUs");
    for (std::size_t i = 0; i < devs.size(); i++)
        for (std::size_t j = 0; j < i; j++)
            if (devs[i]->ordinal() == devs[j]->ordinal())
                throw std::invalid_argument("cuda:" + std::to_string(devs[i]->ordinal()) +
                                            " is given twice");
    const auto gpus = static_cast<std::uint32_t>(devs.size());
    for (std::uint32_t g = 0; g < gpus; g++) {
        engines_.push_back(std::make_unique<gpudirect_capture>(
            fmt, cfg, devs[g], gcfg, std::move(feeds[g]), gpu_route{gpus, g}));
        engines_.back()->on_ready([this] {
            {
                std::lock_guard<std::mutex> lock(wake_mutex_);
                wakes_++;
            }
            wake_.notify_all();
        });
    }
    held_.assign(engines_.size(), nullptr);
}

gpudirect_multi::~gpudirect_multi() {
    for (auto &e : engines_) e->stop();
}

void gpudirect_multi::start() {
    for (auto &e : engines_) e->start();
}

void gpudirect_multi::stop() {
    for (auto &e : engines_) e->stop();
}

void gpudirect_multi::check_error() {
    for (auto &e : engines_) e->check_error();
}

bool gpudirect_multi::running() const {
    for (const auto &e : engines_)
        if (e->running()) return true;
    return false;
}

bool gpudirect_multi::finished() const {
    for (const auto &e : engines_)
        if (!e->finished()) return false;
    return n_held_.load() == 0;
}

gpu_chunk *gpudirect_multi::next(std::chrono::nanoseconds timeout,
                                 gpu_chunk_queue::status &why) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::lock_guard<std::mutex> one(next_mutex_);
    for (;;) {
        std::uint64_t seen;
        {
            std::lock_guard<std::mutex> lock(wake_mutex_);
            seen = wakes_;
        }
        // Each GPU hands its chunks over in order; of the GPUs' next ones, the lowest id.
        std::size_t pick = held_.size();
        bool all_done = true;
        for (std::size_t g = 0; g < engines_.size(); g++) {
            if (held_[g] == nullptr && (held_[g] = engines_[g]->try_next()) != nullptr) n_held_++;
            if (held_[g] == nullptr) {
                if (!engines_[g]->finished()) all_done = false;
                continue;
            }
            all_done = false;
            if (pick == held_.size() || held_[g]->chunk_id < held_[pick]->chunk_id) pick = g;
        }
        if (pick < held_.size()) {
            gpu_chunk *c = held_[pick];
            held_[pick] = nullptr;
            n_held_--;
            why = gpu_chunk_queue::status::ok;
            return c;
        }
        if (all_done) {
            why = gpu_chunk_queue::status::finished;
            return nullptr;
        }
        std::unique_lock<std::mutex> lock(wake_mutex_);
        if (!wake_.wait_until(lock, deadline, [&] { return wakes_ != seen; })) {
            why = gpu_chunk_queue::status::timeout;
            return nullptr;
        }
    }
}

void gpudirect_multi::release(gpu_chunk *c, const std::vector<cu::stream> &after) {
    engines_.at(c->lane)->release(c, after);
}

std::vector<std::uint64_t> gpudirect_multi::unreached() const {
    // Only once every GPU has handled its stream to the end: before, the extent grows.
    for (const auto &e : engines_)
        if (!e->completed()) return std::vector<std::uint64_t>(engines_.size(), 0);
    std::vector<gpu_span> spans;
    for (const auto &e : engines_) spans.push_back(e->span());
    return unreached_chunks(spans, first_chunk_);
}

std::map<std::string, std::uint64_t> gpudirect_multi::device_stats(std::size_t i) const {
    auto s = engines_.at(i)->stats();
    s["lost"] += unreached().at(i) * ppc_;
    return s;
}

std::map<std::string, std::uint64_t> gpudirect_multi::stats() const {
    std::map<std::string, std::uint64_t> total;
    const std::vector<std::uint64_t> extra = unreached();
    for (std::size_t g = 0; g < engines_.size(); g++) {
        for (const auto &[k, v] : engines_[g]->stats()) total[k] += v;
        total["lost"] += extra[g] * ppc_;
    }
    return total;
}

}  // namespace casper400g_rx
