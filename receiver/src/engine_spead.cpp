// The engine's placement of SPEAD packets (spead.h): the same window and accounting as
// fixed-size packets, a heap per slot.
#include "casper400g_rx/engine.h"

namespace casper400g_rx {

void engine::place_spead(queue_state &s, std::size_t q, const packet_ref &pkt) {
    const format &fmt = decoder_.fmt();
    spead_packet p;
    const spead_reject why = parse_spead(pkt.payload, pkt.size, *fmt.spead, fmt.payload_size, p);
    if (why != spead_reject::none) {
        s.c.rejected_by[static_cast<unsigned>(why) - 1]++;
        s.c.rejected++;
        s.c.received++;
        return;
    }
    const std::size_t ppc = cfg_.packets_per_chunk;
    // The next packet of the heap this queue is filling in order: its chunk is the run's
    // (the window moves only through this queue, after the run ends).
    if (spead_run_continue(s.heap_run, p, fmt.payload_size, ppc, fmt.spead->n_items)) {
        s.c.packets++;
        s.c.bytes += p.length;
        s.c.received++;
        return;
    }
    end_heap_run(s);
    chunk *c = window_chunk(s, q, p.index);
    if (c == nullptr) return;
    if (deposit_heap_packet(*c, p.index % ppc, p, fmt.payload_size, ppc, fmt.spead->n_items,
                            shared_slots_, shared_slots_ ? nullptr : &s.heap_run) ==
        heap_deposit::duplicate) {
        s.c.duplicate++;
    } else {
        s.c.packets++;
        s.c.bytes += p.length;
    }
    s.c.received++;
}

void engine::end_heap_run(queue_state &s) noexcept {
    if (s.heap_run.c != nullptr) spead_run_end(s.heap_run, decoder_.fmt().payload_size);
}

}  // namespace casper400g_rx
