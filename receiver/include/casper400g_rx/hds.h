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
//
// Several lanes (receive queues) share one chunk stream without a lock per batch, each
// with its own window of max_chunks chunks that only its own packets move (as the
// copying engine's queues): each lane posts into and completes from the chunks it holds
// on its own thread, and a chunk leaves once every lane has moved past it. Slots are
// disjoint by prediction (lane q owns the slots of its residue); a slot's state (posted /
// bounce waiting / being filled by copy) is one atomic byte, so a fix-up copy by another
// lane and the slot's own receive never collide; presence is taken by atomic exchange;
// counters belong to the lane. The engine's mutex is taken per chunk, not per packet: to
// open a chunk or move a lane's hold to the next one, to move the window, and to hand
// chunks on; a mispredicted packet takes it only to find its chunk, and is copied after
// it is released. Each lane counts the receives it has posted into each pool chunk; a
// chunk that left the window goes to the consumer once no lane counts any. A lane never
// waits (for the window, or for a free chunk) while one of its receives is counted: the
// packet it holds is first moved out of its receive ("parked"). A lane that has
// completed nothing for `stall_timeout_ms` (a queue without traffic) and holds the
// stream back -- its window behind the others', or its receives pinning a chunk that
// left the window -- is passed over, counted `queue_stalls`: the window moves on without
// it (it rejoins at its next packet; older ones count late), and its receives are
// orphaned (their slots stay unusable until they complete; what lands there is placed
// by copy). A lane that keeps completing but lags so far that another waits for it
// longer than a fifth of the stall timeout is moved forward between its calls (its older
// packets count late), counted `queue_skips`. These rules, and how far one packet may
// move a lane's window (out of window beyond; a run of such packets resyncs the window),
// are the window policy of window.h, the copying engine's too: a lane is a queue there.
//
// Live sources (`skip_lagging`: a NIC, the emulated NIC at a rate) never stop receiving
// for lack of a chunk, so that predictions stay in step with the stream and a chunk is
// either filled from its start or given up whole: a lane that cannot get a chunk for its
// next predictions posts them to its scratch ring instead, up to the next chunk boundary;
// a chunk that has no buffer when such a packet arrives is given up (its slots count
// lost, its packets `no_free_chunk`, the chunk `chunks_given_up`: a consumer too slow,
// which `late` -- a packet after its chunk was handed on -- must not hide). After its receive queue ran dry (the NIC may have dropped
// what then arrived), a lane posts a probe of a few receives until the NIC leaves some
// of them unconsumed, doubling it each time the NIC took it all (a lane that handles a
// probe more slowly than the NIC fills it would otherwise never catch up); a packet
// ahead of its prediction meanwhile moves the predictions at once, and the packets that land in the receives posted before are counted `discarded`
// rather than copied: a gap never costs a queue depth of fix-up copies, which a lane at
// line rate cannot afford (each takes longer than a packet's arrival interval) and
// which made it fall further behind until the capture collapsed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "casper400g_rx/divider.h"
#include "casper400g_rx/engine.h"

namespace casper400g_rx {

// Where the split falls for a format: an untagged Ethernet + IPv4 (no options) + UDP
// header, followed by the payload prefix holding the sequence and stream-id fields,
// so that placement never reads chunk memory (which may be GPU memory).
//
// SPEAD formats: a receive is one packet of a heap, the split falls where the heap's
// payload starts, and the packets are predicted as spead2's sender and the example
// design cut heaps: a heap's first packet carries the four per-packet items, the named
// ones (and the index item when it is another), and one addressed item pointer; later
// packets carry the four alone (all of the first's when the index is a named item,
// which then has to be in every packet); each packet is filled to max_packet bytes.
// Packet k of a heap lands at its heap offset inside the heap's slot. A third scatter
// entry (`tail`, in the header ring) takes whatever a packet has beyond its prediction,
// so that a packet whose header length differs arrives whole and is placed by copy.
struct split_layout {
    static constexpr std::size_t headers = 14 + 20 + 8;
    std::size_t prefix = 8;     // payload bytes scattered with the headers (SPEAD: the
                                // longer of the two predicted SPEAD headers)
    std::size_t entry = 64;     // header ring stride (cache-line multiple)
    std::size_t payload = 8192; // bytes per slot (SPEAD: the largest packet's heap bytes)
    bool spead = false;
    std::size_t heap = 0;          // heap bytes (SPEAD)
    std::size_t parts = 1;         // packets per heap
    std::size_t first_header = 0;  // SPEAD header bytes of a heap's first packet
    std::size_t later_header = 0;  // ... of its later packets
    std::size_t first_part = 0;    // heap bytes of the first packet
    std::size_t later_part = 0;    // ... of each later one (the last: what is left)
    std::size_t tail = 0;          // bytes of the third scatter entry (0: none)
    std::size_t tail_at = 0;       // where it starts in a header ring entry

    std::size_t header_len() const noexcept { return headers + prefix; }
    std::size_t frame_len() const noexcept { return headers + payload; }
    // Packet k of a heap (SPEAD): its heap offset, heap bytes and SPEAD header bytes.
    std::size_t part_offset(std::size_t k) const noexcept {
        return k == 0 ? 0 : first_part + (k - 1) * later_part;
    }
    std::size_t part_len(std::size_t k) const noexcept {
        const std::size_t o = part_offset(k);
        const std::size_t n = k == 0 ? first_part : later_part;
        return heap - o < n ? heap - o : n;
    }
    std::size_t part_header(std::size_t k) const noexcept {
        return k == 0 ? first_header : later_header;
    }
    // The packet of a heap that carries [offset, offset + length), or parts when no
    // predicted packet does.
    std::size_t part_of(std::uint64_t offset, std::uint64_t length) const noexcept;
    static split_layout for_format(const format &fmt);
    static split_layout for_spead(const format &fmt);  // hds_spead.cpp
};

// Checks the header-ring copy of one frame against the format: untagged IPv4 without
// options or fragmentation, UDP, lengths consistent with `frame_len` (the byte count
// the NIC reported) and the payload size, the destination port when the format sets
// one. Returns the IPv4 Identification, or -1 when the frame must be rejected.
std::int32_t check_split_headers(const std::uint8_t *hdr, std::size_t frame_len,
                                 const format &fmt) noexcept;

// The same checks with the format's expectations built once: the tested bytes (offsets
// 12..41) as three words, each compared under a mask, instead of a test per field (per
// packet on the split path). check_split_headers is one of these.
class split_header_check {
public:
    explicit split_header_check(const format &fmt) noexcept;
    std::int32_t operator()(const std::uint8_t *hdr, std::size_t frame_len) const noexcept {
        if (frame_len != frame_len_) return -1;
        std::uint64_t w[n_words];
        std::uint64_t bad = 0;
        for (std::size_t i = 0; i < n_words; i++) {
            std::memcpy(&w[i], hdr + at[i], 8);
            bad |= (w[i] ^ want_[i]) & mask_[i];
        }
        if (bad != 0) return -1;
        return (hdr[18] << 8) | hdr[19];  // the IPv4 Identification
    }

private:
    static constexpr std::size_t n_words = 3;
    static constexpr std::size_t at[n_words] = {12, 20, 34};
    std::size_t frame_len_;
    std::uint64_t want_[n_words];
    std::uint64_t mask_[n_words];
};

// One posted receive: SGE 0 = header, SGE 1 = payload (past the prefix), and for SPEAD
// formats SGE 2 = the packet's bytes beyond the prediction (in the header ring).
struct recv_target {
    std::uint64_t wr_id = 0;
    std::uint8_t *header = nullptr;
    std::uint32_t header_len = 0;
    std::uint8_t *payload = nullptr;
    std::uint32_t payload_len = 0;
    bool scratch = false;  // payload goes to the lane's scratch ring, not a chunk
    std::uint8_t *tail = nullptr;
    std::uint32_t tail_len = 0;  // 0: no third entry
};

// SPEAD formats: checks the header-ring copy of one frame as check_split_headers does,
// for UDP payloads of any size up to max_packet. Returns the UDP payload's size, or -1.
std::int64_t check_spead_split_headers(const std::uint8_t *hdr, std::size_t frame_len,
                                       const format &fmt) noexcept;

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
    std::uint64_t ran_dry = 0;   // times a lane found every receive completed (live sources)
};

class hds_engine : public engine {
public:
    // `lanes` receive queues share one sequence space; lane q is predicted to carry
    // the sequence numbers q, q + lanes, q + 2 lanes, ... (one lane: every packet).
    // `depth` receives may be posted per lane.
    hds_engine(const format &fmt, const engine_config &cfg, std::size_t lanes, std::size_t depth);
    ~hds_engine() override;

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
    // As many as the queue's depth: a live lane without a chunk keeps its queue full of
    // them, so that it loses nothing more than a lane with one.
    std::size_t scratch_slots() const noexcept { return depth_ < 64 ? 64 : depth_; }
    std::uint8_t *scratch_ring(std::size_t lane) noexcept { return lanes_[lane].scratch.get(); }
    std::size_t scratch_bytes() const noexcept { return scratch_slots() * layout_.payload; }
    // Extra packets after a delay that scratch receives absorb, at most.
    static constexpr std::size_t max_absorb = 64;

    // Up to `max` new receive targets for `lane`; fewer when the lane's queue is full,
    // the window cannot hold the predicted slots yet, or no free chunk is left.
    // One thread per lane calls post/complete/cancel; lanes run concurrently.
    std::size_t post(std::size_t lane, recv_target *out, std::size_t max);
    // Completions of `lane`, in the order its receives were posted.
    void complete(std::size_t lane, const recv_completion *c, std::size_t n);
    // The lane's queue is gone (destroyed or reset): its posted receives will never
    // complete, so their slots are free again.
    void cancel(std::size_t lane);
    std::size_t outstanding(std::size_t lane) const;

    // Lanes are fixed when the engine is made; their queues end with cancel().
    void set_queues(std::size_t n) override;
    void queue_done(std::size_t q) override;
    void finish() override;
    counters stats() const noexcept override;
    std::vector<std::uint64_t> queue_received() const override;
    split_counters split_stats() const noexcept;

private:
    struct desc {
        std::uint64_t seq = 0;
        chunk *c = nullptr;    // nullptr: a scratch receive, `slot` indexes the scratch ring
        std::size_t slot = 0;
        std::uint64_t shift = 0;  // the lane's accumulated resync when posted
        bool orphan = false;      // its chunk was handed on past this (stalled) lane
        bool predicted = false;   // a scratch receive standing for the prediction `seq`
        bool no_chunk = false;    // ... because no chunk could be had for it (live sources)
    };
    // A mispredicted packet on its way through the locked path.
    struct slow_packet {
        const std::uint8_t *prefix = nullptr;  // header-ring copy of the payload prefix
        const std::uint8_t *landed = nullptr;  // where the payload was written
        bool retired = false;  // its receive was released (the payload parked first)
        // A fix-up copy to make once the mutex is released (the slot is claimed).
        std::uint8_t *dst = nullptr;
        std::size_t g = 0;
        std::uint64_t id = 0;
        // SPEAD: its heap bytes and named items (spead_item_absent where not carried).
        std::size_t len = 0;
        const std::uint64_t *items = nullptr;
    };
    struct aligned_free {
        void operator()(std::uint8_t *p) const noexcept;
    };
    using buffer = std::unique_ptr<std::uint8_t[], aligned_free>;
    static constexpr std::size_t n_split = sizeof(split_counters) / sizeof(std::uint64_t);
    // After its queue ran dry a lane posts at most this many receives until the NIC
    // leaves some of them unconsumed (it has caught up with the stream); twice as many
    // each time the NIC took them all again, up to the queue's depth: a lane that takes
    // longer to handle a probe than the NIC takes to fill it would otherwise never catch
    // up (each probe off by the drops of the last, its packets discarded).
    static constexpr std::size_t probe_batch = 64;
    // What one lane's thread owns. Its record (head, attached, skip_to) and activity
    // (`busy`, `gen`, the time of its last completion) are the window policy's (queue
    // `q`): the lane sets `busy` and then checks `gen`; the window bumps `gen` and then
    // checks `busy`, and edits an idle lane's receives (orphaning them) only when it is
    // not inside a call.
    struct alignas(64) lane_state {
        std::size_t q = 0;        // its queue in the window policy
        std::vector<desc> ring;
        buffer headers;
        buffer scratch;
        std::uint64_t scratch_due = 0;  // scratch receives to post before the next slot
        std::uint64_t scratch_posted = 0;
        std::uint64_t scratch_done = 0;
        std::uint64_t scratch_below = 0;  // live: predictions in chunks below go to scratch
        bool scratch_no_chunk = false;    // ... because no chunk could be had for them
        bool probing = false;     // live: the queue ran dry; a few receives at a time
        std::size_t probe = 0;    // ... this many, doubled each time the NIC takes them all
        std::uint64_t probe_seen = 0;  // `completed` when the probe was last sized
        std::uint64_t gap_posted = 0;  // live: receives posted before a gap was seen
        buffer park;              // a packet that waits, moved out of its receive
        buffer stage;             // SPEAD: a mispredicted packet put together whole
        std::uint64_t posted = 0;
        std::uint64_t completed = 0;
        std::uint64_t post_base = 0;  // posts go to chunks post_base .. post_base + lookahead
        std::uint64_t next = 0;   // next predicted sequence number
        std::uint64_t shift = 0;  // sum of forward resyncs
        std::int64_t candidate = 0;  // an offset seen once, applied when the next packet agrees
        bool stalled = false;     // counted one `waits` for the current lack of chunks
        std::int64_t span_wait_ns = 0;  // since when it cannot post for the slowest lane
        chunk *hold = nullptr;    // the chunk this lane posts into (counted in `res`)
        std::uint64_t hold_id = 0;
        std::uint64_t top = 0;    // newest chunk id placed in place
        bool placed_any = false;
        bool drain_due = false;   // a count in `res` reached zero on a chunk that left the window
        // Per pool chunk: this lane's receives pointing into it, plus one for `hold`.
        // In a page of its own: every post and completion updates it with a locked
        // instruction, and a line shared with another lane's counts would bounce.
        buffer res_store;
        std::atomic<std::uint32_t> *res = nullptr;
        std::uint64_t seen_gen = 0;
        window_policy::run run;   // its out-of-window packets in a row
        std::uint64_t own = window_policy::none;  // newest chunk it placed into
        counters c;
        split_counters s;
        published pub{};
        std::atomic<std::uint64_t> pub_split[n_split] = {};
    };
    // Slot states (one atomic byte per pool slot).
    static constexpr std::uint8_t slot_posted = 1;   // a posted receive points here
    static constexpr std::uint8_t slot_pending = 2;  // a bounce buffer waits for that receive
    static constexpr std::uint8_t slot_claimed = 4;  // a fix-up copy is writing it

    std::size_t gslot(const chunk *c, std::size_t slot) const noexcept {
        return c->index * ppc_ + slot;
    }
    // A slot's place in its chunk and its bytes: a packet for fixed-size formats, a
    // packet of a heap for SPEAD (hds_spead.cpp).
    std::size_t slot_offset(std::size_t slot) const noexcept {
        if (!layout_.spead) return slot * layout_.payload;
        return slot / layout_.parts * layout_.heap + layout_.part_offset(slot % layout_.parts);
    }
    std::size_t slot_len(std::size_t slot) const noexcept {
        return layout_.spead ? layout_.part_len(slot % layout_.parts) : layout_.payload;
    }
    // Payload bytes that travel with the headers (none of a SPEAD heap's do).
    std::size_t pre() const noexcept { return layout_.spead ? 0 : layout_.prefix; }
    // Per slot: placed. The chunk's own flags for fixed-size formats; per packet of a heap
    // for SPEAD, turned into the chunk's per-heap flags and byte counts when it leaves.
    std::uint8_t *present_of(const chunk *c) const noexcept {
        return layout_.spead ? part_present_.get() + c->index * ppc_ : c->present;
    }
    // The packet of its heap a receive was posted for (SPEAD).
    std::size_t part_posted(const desc &d) const noexcept;
    // Fills a receive target's SPEAD fields for slot (or scratch prediction) `k`.
    void spead_target(recv_target &t, const lane_state &l, std::size_t ring_k,
                      std::size_t part) const noexcept;
    // Parses a completed SPEAD receive: the packet's items, and its slot's sequence number
    // (heap index * parts + packet). `whole` is set when the packet's payload is not
    // where it was posted (the header length differed): it was put together in the
    // lane's staging buffer, out.payload points there.
    spead_reject read_spead(lane_state &l, const desc &d, const std::uint8_t *hdr,
                            std::uint32_t byte_len, bool ok, spead_packet &out,
                            std::uint64_t &seq, bool &whole) noexcept;
    void count_spead_reject(lane_state &l, spead_reject why) noexcept;
    void put_items(chunk *c, std::size_t slot, const std::uint64_t *items) noexcept;
    // A SPEAD chunk leaving: per heap its bytes covered, `present` when whole; returns
    // the partial heaps.
    std::size_t close_spead_chunk(chunk *c) noexcept;
    void enter(lane_state &l);
    void leave(lane_state &l, bool publish_counters = true) noexcept;
    bool post_slow(lane_state &l, std::size_t lane);
    void release_hold_locked(lane_state &l);
    chunk *open_chunk(std::uint64_t id);
    chunk *window_chunk(std::uint64_t id) const noexcept;
    chunk *wait_for_chunk(lane_state &l, std::uint64_t id, std::unique_lock<std::mutex> &lock);
    // Chunks of pool part `part` the engine holds itself: open, or retired but pinned.
    std::size_t held_of_part(std::size_t part) const noexcept;
    void park(lane_state &l, const desc &d, slow_packet &sp, std::unique_lock<std::mutex> &lock);
    void give_up_chunk(lane_state &l, std::uint64_t id);
    void note_given_up(std::uint64_t id);  // counts `chunks_given_up` once per chunk
    // A packet behind the lane's window: `no_free_chunk` when its chunk was given up,
    // else `late`.
    void count_behind(lane_state &l, std::uint64_t id) noexcept;
    void finish_copy(lane_state &l, const slow_packet &sp) noexcept;
    void start(std::uint64_t seq);
    // The lane's window (the policy's record of it).
    std::uint64_t head_of(const lane_state &l) const noexcept { return window_.rec(l.q).head; }
    bool attached(const lane_state &l) const noexcept { return window_.rec(l.q).attached; }
    // The newest chunk the lane placed (or is placing) into (window.h: its backlog is
    // late, not out of window, after the others moved it forward).
    static std::uint64_t own_of(const lane_state &l) noexcept { return l.own; }
    void move_lane_head(lane_state &l, std::uint64_t new_head);
    void advance(std::uint64_t new_head);
    void follow_window();  // moves the window's head to the policy's limit
    void check_lagging_locked();
    bool wait_for_window(lane_state &l, std::unique_lock<std::mutex> &lock);
    void rejoin_locked(lane_state &l);
    void apply_skip_locked(lane_state &l);
    void lock_parked(lane_state &l, std::unique_lock<std::mutex> &lock);
    // An out-of-window packet: counted (false), or a long enough run moved the window to
    // it (true: place it now).
    bool out_of_window_locked(lane_state &l, std::uint64_t seq);
    void flush(std::uint64_t id);
    void retire(chunk *c, bool discard);
    void drain_retired();
    bool pass_stalled_locked(chunk *c);
    void drop_orphan_pending_locked(chunk *c);
    std::uint32_t reservations(const chunk *c) const noexcept;
    void resync(lane_state &l, const desc &d, std::uint64_t seq);
    // One completed receive of a SPEAD format (hds_spead.cpp): complete()'s loop body.
    void complete_spead(lane_state &l, const desc &d, const std::uint8_t *hdr,
                        const recv_completion &rc, std::unique_lock<std::mutex> &lock);
    void complete_locked(lane_state &l, const desc &d, const std::uint8_t *hdr,
                         std::uint32_t byte_len, bool ok, slow_packet &sp,
                         std::unique_lock<std::mutex> &lock);
    void place_locked(lane_state &l, std::uint64_t seq, const desc &d, slow_packet &sp,
                      std::unique_lock<std::mutex> &lock);
    const std::uint8_t *landing(const lane_state &l, const desc &d) const noexcept;
    // With `uncounted`, the receive's count in `res` is added there for the caller to
    // release (complete() does so once per run of receives into one chunk).
    void retire_desc(lane_state &l, const desc &d, std::unique_lock<std::mutex> &lock,
                     std::uint32_t *uncounted = nullptr);
    void placed(lane_state &l, std::uint64_t id, std::size_t bytes) noexcept;
    void fill_pending_locked(lane_state &l, chunk *c, std::size_t slot);
    void cancel_locked(lane_state &l, std::unique_lock<std::mutex> &lock);

    split_layout layout_;
    split_header_check header_check_;
    std::size_t ppc_;  // slots per chunk: packets_per_chunk, times parts for SPEAD
    buffer part_present_;  // SPEAD: per pool slot
    std::vector<std::uint64_t> bounce_items_;  // SPEAD: named items per bounce buffer
    std::size_t depth_;
    std::size_t wsize_;  // window ring: max_chunks + lookahead
    // How far (chunk ids) a lane's packets may run ahead of the slowest lane before it
    // waits for that lane: the pool's span for a replay; for a live source one window
    // (max_chunks + lookahead), beyond which the lanes' chunks run short because one lags.
    std::size_t span_;
    std::vector<lane_state> lanes_;
    std::vector<chunk *> win_;  // open chunks by chunk_id % pool size (under mutex_)
    std::uint64_t no_open_below_ = 0;  // live: chunks given up for lack of a free chunk
    // The latest chunks given up, by id % n_given_up (read by the lanes without the mutex).
    static constexpr std::size_t n_given_up = 256;
    std::unique_ptr<std::atomic<std::uint64_t>[]> given_up_;
    std::atomic<std::uint64_t> whead_{0};  // head_, readable without the mutex
    std::atomic<bool> wstarted_{false};
    std::atomic<bool> wdone_{false};
    // Per pool slot, grouped by slot % lanes within each chunk: in any one chunk the
    // slots of a group belong to one lane, so lanes do not share the lines they write.
    std::size_t state_stride_;
    std::unique_ptr<std::atomic<std::uint8_t>[]> slot_state_;
    std::atomic<std::uint8_t> &state(std::size_t g) noexcept {
        const std::size_t ppc = ppc_, n = lanes_.size(), slot = g % ppc;
        return slot_state_[(g / ppc) * state_stride_ * n + (slot % n) * state_stride_ + slot / n];
    }
    // The same by chunk and slot, `lanes` dividing by lanes_.size() (per packet: no
    // division where the lanes are a power of two).
    std::atomic<std::uint8_t> &state(const chunk *c, std::size_t slot, const divider &lanes) noexcept {
        return slot_state_[c->index * state_stride_ * lanes_.size() + lanes.rem(slot) * state_stride_ +
                           lanes.quot(slot)];
    }
    std::unique_ptr<std::atomic<std::uint8_t>[]> retired_flag_;  // per pool chunk
    std::vector<std::int32_t> pending_;          // per pool slot: bounce buffer, or -1
    std::vector<std::uint32_t> chunk_pending_;  // per pool chunk (under mutex_)
    std::vector<std::uint8_t> chunk_discard_;
    std::vector<std::uint8_t> chunk_before_resync_;  // retired before a window resync
    std::vector<chunk *> retired_;  // left the window, in order, waiting for their receives
    std::size_t retired_head_ = 0;
    std::size_t retired_count_ = 0;
    const chunk *blocked_ = nullptr;  // the retired chunk lanes' receives hold back
    std::uint64_t blocked_id_ = 0;
    std::int64_t blocked_since_ns_ = 0;
    buffer bounce_;
    std::vector<std::int32_t> bounce_free_;
};

}  // namespace casper400g_rx
