// Header-data split placement: every posted receive scatters a frame into two
// pieces, the headers (plus the payload bytes that hold the sequence fields) into
// a small host ring, and the rest of the payload straight into the chunk slot the
// packet is predicted to fill. In-order traffic is then placed without copying
// the payload; a packet that lands in someone else's slot is moved by copy.
//
// The NIC (ibv_source) and its emulation (nic_emulator_source) drive this same
// code: post() hands out receive targets, complete() takes completions in the
// order the receive queue consumed them.
//
// Invariants that make the copies safe:
// * a slot that holds placed data is never posted again (the NIC would overwrite it);
// * a packet is never copied into a slot that is still posted: it waits in a bounce
//   buffer until that receive completes;
// * a chunk leaves for the consumer only when no posted receive points into it, and
//   its lost packets are counted then (after any waiting packet went in).
//
// Predictions follow the stream: two packets in a row at the same offset from their
// predictions move the lane's later receives forward (packets lost), or make the next
// receives scratch ones that absorb the extra packets (a delayed packet arrived), so a
// gap or a delay costs about one queue depth of copies, not the rest of the stream.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "casper400g_rx/engine.h"

namespace casper400g_rx {

// Where the split falls for a format: an untagged Ethernet + IPv4 (no options) + UDP
// header, followed by the payload prefix holding the sequence and stream-id fields,
// so that placement never reads chunk memory (which may be GPU memory).
struct split_layout {
    static constexpr std::size_t headers = 14 + 20 + 8;
    std::size_t prefix = 8;     // payload bytes scattered with the headers
    std::size_t entry = 64;     // header ring stride (cache-line multiple)
    std::size_t payload = 8192;

    std::size_t header_len() const noexcept { return headers + prefix; }
    std::size_t frame_len() const noexcept { return headers + payload; }
    static split_layout for_format(const format &fmt);
};

// Checks the header-ring copy of one frame against the format: untagged IPv4 without
// options or fragmentation, UDP, lengths consistent with `frame_len` (the byte count
// the NIC reported) and the payload size, the destination port when the format sets
// one. Returns the IPv4 Identification, or -1 when the frame must be rejected.
std::int32_t check_split_headers(const std::uint8_t *hdr, std::size_t frame_len,
                                 const format &fmt) noexcept;

// One posted receive: SGE 0 = header, SGE 1 = payload (past the prefix).
struct recv_target {
    std::uint64_t wr_id = 0;
    std::uint8_t *header = nullptr;
    std::uint32_t header_len = 0;
    std::uint8_t *payload = nullptr;
    std::uint32_t payload_len = 0;
    bool scratch = false;  // payload goes to the lane's scratch ring, not a chunk
};

struct recv_completion {
    std::uint64_t wr_id = 0;
    std::uint32_t byte_len = 0;  // whole frame as the NIC counted it
    bool ok = true;              // false: the NIC flagged an error (counted `rejected`)
};

struct split_counters {
    std::uint64_t in_place = 0;  // payload landed in its own slot: no copy
    std::uint64_t fixup = 0;     // copied from where it landed into its own slot
    std::uint64_t bounced = 0;   // waited in a bounce buffer for its slot's receive to finish
    std::uint64_t resyncs = 0;   // predictions corrected (forward after a gap, back after a delay)
    std::uint64_t posted = 0;    // receives handed to the NIC
};

class hds_engine : public engine {
public:
    // `lanes` receive queues share one sequence space; lane q is predicted to carry
    // the sequence numbers q, q + lanes, q + 2 lanes, ... (one lane: every packet).
    // `depth` receives may be posted per lane.
    hds_engine(const format &fmt, const engine_config &cfg, std::size_t lanes, std::size_t depth);

    std::size_t lanes() const noexcept { return lanes_.size(); }
    std::size_t depth() const noexcept { return depth_; }
    const split_layout &layout() const noexcept { return layout_; }
    // Chunks beyond the reorder window that posted receives may point into.
    std::size_t lookahead() const noexcept { return wsize_ - cfg_.max_chunks; }
    // The lane's header ring (depth entries of layout().entry bytes), for registration.
    std::uint8_t *header_ring(std::size_t lane) noexcept { return lanes_[lane].headers.get(); }
    std::size_t header_ring_bytes() const noexcept { return depth_ * layout_.entry; }
    // Receives that absorb extra packets after a stream fell behind its predictions
    // point here (registered like the header ring).
    static constexpr std::size_t scratch_slots = 64;
    std::uint8_t *scratch_ring(std::size_t lane) noexcept { return lanes_[lane].scratch.get(); }
    std::size_t scratch_bytes() const noexcept { return scratch_slots * layout_.payload; }

    // Up to `max` new receive targets for `lane`; fewer when the lane's queue is full,
    // the window cannot hold the predicted slots yet, or no free chunk is left.
    std::size_t post(std::size_t lane, recv_target *out, std::size_t max);
    // Completions of `lane`, in the order its receives were posted.
    void complete(std::size_t lane, const recv_completion *c, std::size_t n);
    // The lane's queue is gone (destroyed or reset): its posted receives will never
    // complete, so their slots are free again.
    void cancel(std::size_t lane);
    std::size_t outstanding(std::size_t lane) const;

    void finish() override;
    split_counters split_stats() const noexcept;

private:
    struct desc {
        std::uint64_t seq = 0;
        chunk *c = nullptr;    // nullptr: a scratch receive, `slot` indexes the scratch ring
        std::size_t slot = 0;
        std::uint64_t shift = 0;  // the lane's accumulated resync when posted
    };
    struct aligned_free {
        void operator()(std::uint8_t *p) const noexcept;
    };
    using buffer = std::unique_ptr<std::uint8_t[], aligned_free>;
    struct lane_state {
        std::vector<desc> ring;
        buffer headers;
        buffer scratch;
        std::uint64_t scratch_due = 0;  // scratch receives to post before the next slot
        std::uint64_t scratch_posted = 0;
        std::uint64_t scratch_done = 0;
        std::uint64_t posted = 0;
        std::uint64_t completed = 0;
        std::uint64_t next = 0;   // next predicted sequence number
        std::uint64_t shift = 0;  // sum of forward resyncs
        std::int64_t candidate = 0;  // an offset seen once, applied when the next packet agrees
        bool stalled = false;     // counted one `waits` for the current lack of chunks
    };

    static std::size_t window_size(const engine_config &cfg, std::size_t lanes, std::size_t depth);
    static engine_config sized(const engine_config &cfg, std::size_t lanes, std::size_t depth);
    std::size_t gslot(const chunk *c, std::size_t slot) const noexcept {
        return c->index * cfg_.packets_per_chunk + slot;
    }
    chunk *open_chunk(std::uint64_t id, bool may_wait);
    chunk *try_acquire();
    void start(std::uint64_t seq);
    void advance(std::uint64_t new_head);
    void flush(std::uint64_t id);
    void retire(chunk *c, bool discard);
    void drain_retired();
    void resync(lane_state &l, const desc &d, std::uint64_t seq);
    void place(std::uint64_t seq, const std::uint8_t *prefix, const desc &d,
               const std::uint8_t *landed);
    const std::uint8_t *landing(const lane_state &l, const desc &d) const noexcept;
    void retire_desc(lane_state &l, const desc &d);
    void mark_present(chunk *c, std::size_t slot);
    void fill_pending(const desc &d);
    void cancel_locked(std::size_t lane);
    void publish_split() noexcept;

    split_layout layout_;
    std::size_t depth_;
    std::size_t wsize_;  // window ring: max_chunks + lookahead
    std::vector<lane_state> lanes_;
    std::vector<chunk *> win_;                  // by chunk_id % wsize_
    std::vector<std::uint8_t> reserved_;        // per pool slot: a posted receive points here
    std::vector<std::int32_t> pending_;         // per pool slot: bounce buffer waiting, or -1
    std::vector<std::uint32_t> chunk_reserved_;  // per pool chunk
    std::vector<std::uint32_t> chunk_pending_;
    std::vector<std::uint8_t> chunk_discard_;
    std::vector<chunk *> retired_;  // left the window, in order, waiting for their receives
    std::size_t retired_head_ = 0;
    std::size_t retired_count_ = 0;
    buffer bounce_;
    std::vector<std::int32_t> bounce_free_;
    split_counters s_;
    std::atomic<std::uint64_t> pub_split_[sizeof(split_counters) / sizeof(std::uint64_t)] = {};
};

}  // namespace casper400g_rx
