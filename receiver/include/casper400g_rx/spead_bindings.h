// Python bindings of SPEAD formats (spead.h): Format.spead, the chunks' per-heap arrays
// and the rejection reasons in stats. Called from bindings.cpp and cuda_bindings.cpp.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>

#include "casper400g_rx/engine.h"
#include "casper400g_rx/format.h"

namespace casper400g_rx {

// Format.spead(...), Format's `spead` property.
void bind_spead_format(pybind11::class_<format> &cls);
// Format's repr for a SPEAD format.
std::string spead_repr(const format &f);
// (packets_per_chunk,) uint64 view of bytes received per heap, kept alive by `owner`;
// None for formats without heaps.
pybind11::object heap_bytes_array(pybind11::handle owner, const std::uint64_t *heap_bytes,
                                  std::size_t ppc);
// {item id: (packets_per_chunk,) uint64 view} of the named items `ids` (n of them).
pybind11::dict items_arrays(pybind11::handle owner, const std::uint64_t *items,
                            const std::uint64_t *ids, std::size_t n, std::size_t ppc);
// _spead2_place: a place callback for spead2's chunk stream that places as Format.spead
// does, so that spead2 can serve as the reference (tests, benchmarks).
void bind_spead2_place(pybind11::module_ &m);
// heaps_partial and rejected_by (a dict by reason), for SPEAD formats.
void add_spead_stats(pybind11::dict &d, const counters &c, const format &fmt);

}  // namespace casper400g_rx
