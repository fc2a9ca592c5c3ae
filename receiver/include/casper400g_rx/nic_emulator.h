// NIC-less emulation of the ibverbs receive path: one thread per receive queue
// takes the receives the header-split engine posts and writes frames into them
// exactly as the NIC's DMA would (headers + payload prefix into SGE 0, the rest
// of the payload into SGE 1), then reports completions in arrival order. At a set rate
// a queue thread may poll its queue at intervals (moderated interrupts) and lose its
// core at given packets, so that tests can replay what breaks a lane on a busy host.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "casper400g_rx/example_stream.h"
#include "casper400g_rx/hds.h"
#include "casper400g_rx/source.h"

namespace casper400g_rx {

struct emulator_config {
    std::size_t payload_size = 8192;
    std::uint64_t first = 0;
    std::uint64_t count = 0;
    std::vector<std::uint64_t> schedule;  // arrival order; replaces first/count when set
    std::vector<std::uint64_t> bad;       // schedule positions sent as runt frames
    std::uint16_t udp_port = 10000;
    bool fill = true;  // write every payload word (false: only the prefix, as a benchmark)
    // One thread serves every queue in the schedule's order, so that arrival order
    // across queues is exactly the schedule (else one thread per queue, racing as on a NIC).
    bool serial = false;
    // Total payload rate over all queues (each queue its share): packets arrive on
    // schedule and one that finds its queue without a posted receive is dropped at
    // once, as on a NIC. 0: each packet waits for a receive (lossless, as fast as
    // the receiver goes). Not with `serial`.
    double rate_gbps = 0.0;
    std::vector<int> cpus;  // CPU per queue thread, or empty
    // At a set rate: each queue thread looks at its queue once every `poll_us` (as a
    // receive thread woken by moderated interrupts does), 0 = busy polling.
    std::uint32_t poll_us = 0;
    // At a set rate: queue thread `queue` loses its core for `us` microseconds when it
    // reaches its `at`-th packet (as when the kernel takes the core), to test recovery.
    struct stall {
        std::size_t queue = 0;
        std::uint64_t at = 0;
        std::uint64_t us = 0;
    };
    std::vector<stall> stalls;
    // Given UDP payloads instead of the example stream (SPEAD formats): row i of
    // `packets` (`stride` bytes a row, its first sizes[i] sent), in this order, to queue
    // queue_of[i] (empty: all to queue 0, which must then be the only one). Each is
    // scattered over the receive's entries as the NIC does; one longer than they hold
    // completes with an error, as on a NIC.
    std::vector<std::uint8_t> packets;
    std::size_t stride = 0;
    std::vector<std::size_t> sizes;
    std::vector<std::uint32_t> queue_of;
};

// The 42-byte Ethernet/IPv4/UDP header of an example-stream frame (valid IPv4 header
// checksum, Identification = low 16 bits of seq). Only the Identification and the
// checksum change from frame to frame: a NIC's DMA copies the bytes the sender built,
// so the emulation builds them once and patches those two words per frame (the
// checksum from the sum of the fixed words).
class frame_template {
public:
    static constexpr std::size_t size = 14 + 20 + 8;
    frame_template(std::size_t payload_size, std::uint16_t udp_port) noexcept;
    void write(std::uint8_t *out, std::uint64_t seq) const noexcept {
        std::memcpy(out, bytes_, size);
        write_varying(out, seq);
    }
    // Only the Identification and the checksum, into a header that holds this
    // template's bytes already.
    void write_varying(std::uint8_t *out, std::uint64_t seq) const noexcept {
        const auto id = static_cast<std::uint16_t>(seq);
        std::uint32_t sum = fixed_sum_ + id;
        sum = (sum & 0xffff) + (sum >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        const auto check = static_cast<std::uint16_t>(~sum);
        out[14 + 4] = static_cast<std::uint8_t>(id >> 8);
        out[14 + 5] = static_cast<std::uint8_t>(id);
        out[14 + 10] = static_cast<std::uint8_t>(check >> 8);
        out[14 + 11] = static_cast<std::uint8_t>(check);
    }

private:
    std::uint8_t bytes_[size];
    std::uint32_t fixed_sum_;  // the IPv4 header's 16-bit words, Identification 0, unfolded
};

// The header of frame_template into `out` (one frame; the emulation keeps a template).
void write_frame_header(std::uint8_t *out, std::size_t payload_size, std::uint16_t udp_port,
                        std::uint64_t seq) noexcept;

class nic_emulator_source : public source {
public:
    // Packets are steered to queue `seq % lanes`, as flow rules on round-robin ports would.
    nic_emulator_source(const emulator_config &cfg, std::size_t lanes);
    std::size_t n_threads() const override { return cfg_.serial ? 1 : lanes_.size(); }
    int cpu(std::size_t i) const override { return cfg_.cpus.empty() ? -1 : cfg_.cpus[i]; }
    void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) override;
    // Packets that found no posted receive (for 200 ms or the stall timeout, unpaced; at
    // once at a set rate) and were dropped, as a NIC would.
    std::uint64_t nic_drops() const noexcept { return nic_drops_.load(); }

private:
    void run_serial(hds_engine &eng, const std::atomic<bool> &stop);
    void run_paced(std::size_t lane, hds_engine &eng, const std::atomic<bool> &stop);
    // A queue's packets in arrival order: listed (a schedule, given packets, runts among
    // them), or the example stream's `count` as first, first + step, ... (tens of
    // millions of packets in a benchmark: not listed).
    struct lane_input {
        std::vector<std::uint64_t> seqs;  // listed: in arrival order
        std::vector<std::uint8_t> bad;    // listed: per packet, send a runt
        std::uint64_t first = 0, step = 0, n = 0;  // not listed: step > 0
        std::size_t size() const noexcept { return step != 0 ? n : seqs.size(); }
        std::uint64_t seq(std::size_t k) const noexcept {
            return step != 0 ? first + k * step : seqs[k];
        }
        bool is_bad(std::size_t k) const noexcept { return step == 0 && bad[k] != 0; }
    };
    // Which entries of a queue's header ring hold an example-stream frame header already.
    class header_stamps;
    header_stamps stamps_for(hds_engine &eng, std::size_t lane) const;
    void write_frame(const recv_target &t, std::uint64_t seq, std::size_t prefix,
                     std::vector<std::uint8_t> &staging, header_stamps &stamps) const noexcept;
    // Writes packet `seq` (a row of the given packets, or the example stream's) into a
    // receive; `out` its completion (written in place: a returned one was copied through
    // memory as two overlapping words, a stalled forward per packet).
    void emit(const recv_target &t, std::uint64_t seq, bool bad, std::size_t prefix,
              std::uint32_t frame_len, std::vector<std::uint8_t> &staging, header_stamps &stamps,
              recv_completion &out) const noexcept;

    emulator_config cfg_;
    // Payload words go with the widest streaming store the CPU has: the lane thread plays
    // the NIC's DMA too, and every cycle spent writing is one its placement lacks.
    word_store store_ = widest_word_store();
    frame_template header_;
    std::vector<lane_input> lanes_;
    lane_input all_;  // the whole schedule, for the serial mode
    std::atomic<std::uint64_t> nic_drops_{0};
};

}  // namespace casper400g_rx
