// The reorder window that several receive queues share, and the one policy both
// placement engines follow (engine.h, the copying engine; hds.h, the header-data split).
//
// Each queue has its own window of `max_chunks` chunk ids from its `head`, moved only by
// its own packets; the shared window's head is the slowest attached queue's, and a chunk
// leaves once every attached queue has moved past it. The policy decides:
// * how far one packet may move a queue's window: at most `max_jump` chunks past its end.
//   A packet further ahead, or more than `max_jump` chunks behind both the queue's head
//   and the newest chunk the queue itself placed into (older than anything a reordering
//   network delivers; a lagging queue moved forward by the others still has its own
//   backlog late, not out of window), is `out_of_window`: counted, placed nowhere, moving
//   nothing -- one wild datagram (or a bad first packet) no longer turns every later
//   packet `late` nor counts 2^60 packets `lost`. A run of `resync_after` out-of-window
//   packets of one queue, each a later packet than the one before and less than a window
//   after it (a stream: the sender restarted, or the stream jumped after a long gap; not
//   one packet repeated), moves the whole window to them (`window_resyncs`), without
//   counting the chunks it jumps as lost. The stream the window left is no place to
//   resync to: until a queue has placed into the new window (for at most a stall
//   timeout), its out-of-window packets within the old stream's chunks -- from the old
//   window's first chunk to its furthest, and after a jump forward up to the new head --
//   start no run. They are a lagging queue's backlog (packets that queue took before the
//   others saw the jump); a run of them would move the window back and hand out chunk
//   ids again;
// * when a queue that holds the window's head back has stopped: it has been in no call
//   for `stall_timeout_ms` while another queue moved past the head for that long, and is
//   not waiting for a chunk. It is passed over (`queue_stalls`) and rejoins at its next
//   packet, its older packets late;
// * with `skip_lagging` (live sources), when a queue that keeps placing lags so far that
//   another waits for it longer than a fifth of the stall timeout: it is moved forward
//   at its next call (`queue_skips`), its older packets late.
//
// Threads: a queue's record (head, skip_to, attached) and the window's state are changed
// under the engine's mutex, or by the queue's own thread; the queue's activity flags are
// atomics. `busy` and `gen` make edits by others safe: a queue sets `busy` before it
// places and then reads `gen`; an editor bumps `gen` and then reads `busy`, and edits
// only a queue that is not placing. `parked` marks a queue about to take the mutex, which
// holds no chunk and syncs with the window before it places again.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace casper400g_rx {

struct engine_config;
struct counters;

class window_policy {
public:
    // What a queue's activity shows, read by the others (atomics, a cache line each).
    struct alignas(64) activity {
        std::atomic<bool> busy{false};
        std::atomic<bool> waiting{false};  // waits for a free chunk: never passed over
        std::atomic<bool> parked{false};   // about to take the mutex, holding no chunk
        std::atomic<std::int64_t> active_ns{0};  // steady_clock at its last call or packet
        std::atomic<std::uint64_t> gen{0};
    };
    // The window's record of a queue.
    struct record {
        std::uint64_t head = 0;     // oldest chunk id the queue may still place into
        std::uint64_t skip_to = 0;  // the others waited too long for it: move to here
        bool attached = true;       // the window waits for this queue
        bool done = false;          // its source ended
    };
    // No chunk placed into yet (since the last resync).
    static constexpr std::uint64_t none = UINT64_MAX;
    // A queue's run of out-of-window packets (its own thread's).
    struct run {
        std::uint64_t n = 0;
        std::uint64_t seq = 0;   // sequence number of the latest
        std::uint64_t low = 0;   // the chunk id of the first
        // After a resync, the queue's backlog from before it (packets in the old stream's
        // chunks [stale_lo, stale_hi), until it places or for a stall timeout) is out of
        // window but starts no run: a queue that lagged must not move the window back.
        std::uint64_t stale_lo = 0;
        std::uint64_t stale_hi = 0;
        std::int64_t stale_until = 0;
    };
    enum class place { in_window, ahead, late, out_of_window };

    explicit window_policy(const engine_config &cfg);

    void set_queues(std::size_t n, std::int64_t now);
    std::size_t queues() const noexcept { return records_.size(); }
    record &rec(std::size_t q) noexcept { return records_[q]; }
    const record &rec(std::size_t q) const noexcept { return records_[q]; }
    activity &act(std::size_t q) noexcept { return acts_[q]; }
    std::uint64_t passed() const noexcept { return passed_; }
    std::uint64_t max_jump() const noexcept { return max_jump_; }

    // Where chunk `id` falls for a queue whose window starts at `head` and whose newest
    // chunk placed into is `own` (or `none`).
    place classify(std::uint64_t head, std::uint64_t own, std::uint64_t id) const noexcept {
        if (id < head) {
            const std::uint64_t ref = own < head ? own : head;
            return id >= ref || ref - id <= max_jump_ ? place::late : place::out_of_window;
        }
        if (id - head < w_) return place::in_window;
        return id - head - w_ >= max_jump_ ? place::out_of_window : place::ahead;
    }
    // An out-of-window packet `seq` (`ppc` packets per chunk) of a queue whose newest
    // chunk placed into is `own` joins the queue's run; true when the run is long enough
    // to move the window, to resync_head().
    bool note_out_of_window(run &r, std::uint64_t seq, std::uint64_t ppc, std::uint64_t own,
                            std::int64_t now) const noexcept;
    // The window resyncs to `to`: the chunks of the stream it leaves become the place of
    // every queue's backlog (after_resync). Before start(to).
    void begin_resync(std::uint64_t to) noexcept;
    // A resync at `now` (after begin_resync): the queue's run starts afresh, the old
    // stream's chunks its backlog's place. A queue that placed nothing since the resync
    // before (`own` none) may still hold that one's backlog too: it keeps its place.
    void after_resync(run &r, std::uint64_t own, std::int64_t now) const noexcept;
    std::uint64_t resync_head(const run &r, std::uint64_t ppc) const noexcept;

    // The stream starts (or restarts after a resync) at `head`: every queue's too.
    void start(std::uint64_t head) noexcept;
    // Moves queue q's head forward to `new_head` (never back); false when it did not move.
    bool move(std::size_t q, std::uint64_t new_head) noexcept;
    // The head the window may move to: no attached queue is behind it and some queue has
    // moved past (with none attached, the furthest one).
    std::uint64_t limit() const noexcept;
    // A queue passed over (or done) rejoins at the window's head.
    void attach(std::size_t q, std::uint64_t window_head) noexcept;
    // A skip the others asked of queue q applies (counted `queue_skips`): between the
    // queue's calls, or by its own thread with nothing in flight. True when it moved.
    bool apply_skip(std::size_t q, counters &c) noexcept;
    bool rejoin(std::size_t q, std::uint64_t window_head, counters &c) noexcept {
        attach(q, window_head);
        return apply_skip(q, c);
    }
    // The window's head waits for a queue another has moved past: true once it has waited
    // stall_timeout_ms (`passed_` beyond `window_head`), time to pass stalled queues.
    bool blocked_too_long(std::uint64_t window_head, std::int64_t now) noexcept;
    void unblocked() noexcept { blocked_since_ = 0; }
    bool blocked() const noexcept { return blocked_since_ != 0; }
    // Passes over the attached queues at the window's head that have stalled (see the
    // header); counts `queue_stalls`. True when any was.
    bool pass_stalled(std::uint64_t window_head, std::int64_t now, counters &c) noexcept;
    // With skip_lagging: asks the attached queues behind `target` that keep placing to
    // move there at their next call.
    void skip_lagging(std::uint64_t target, std::int64_t now) noexcept;
    // Before a resync: bumps every queue's `gen` but `except`'s (each syncs with the
    // window before it places again) and waits until none of them is placing (not busy,
    // or parked), which takes at most a batch. Then the window's chunks may all leave.
    void hold_others(std::size_t except) noexcept;
    // The same without waiting: false when another queue is placing now.
    bool try_hold_others(std::size_t except) noexcept;
    std::int64_t stall_ns() const noexcept { return stall_ns_; }

private:
    std::size_t w_;
    std::uint64_t max_jump_;
    std::uint64_t resync_after_;
    std::int64_t stall_ns_;
    bool skip_lagging_;
    std::vector<record> records_;
    std::unique_ptr<activity[]> acts_;
    std::uint64_t passed_ = 0;         // the furthest head of any queue
    std::uint64_t first_ = 0;          // the head the window started (or resynced) at
    std::uint64_t old_lo_ = 0;         // the chunks of the stream the last resync left
    std::uint64_t old_hi_ = 0;
    std::int64_t blocked_since_ = 0;   // since when the head waits for a queue (0: not)
};

}  // namespace casper400g_rx
