#include "casper400g_rx/spead_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace py = pybind11;

namespace casper400g_rx {

namespace {

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

format make_spead_format(std::size_t heap_size, unsigned heap_address_bits,
                         std::uint64_t index_item, std::uint64_t index_step,
                         const std::vector<std::uint64_t> &items, std::size_t max_packet,
                         std::uint16_t udp_port) {
    spead_format s;
    s.heap_address_bits = heap_address_bits;
    s.index_item = index_item;
    s.index_step = index_step;
    if (items.size() > spead_max_items)
        throw std::invalid_argument("at most " + std::to_string(spead_max_items) +
                                    " SPEAD items, got " + std::to_string(items.size()));
    for (std::size_t i = 0; i < items.size(); i++) s.items[i] = items[i];
    s.n_items = items.size();
    s.max_packet = max_packet;
    format f;
    f.payload_size = heap_size;
    f.udp_port = udp_port;
    f.spead = s;
    f.validate();
    return f;
}

// spead2's chunk_place_data as its documentation lays it out (spead2 >= 4.1).
struct spead2_place_data {
    const std::uint8_t *packet;
    std::size_t packet_size;
    const std::int64_t *items;  // the requested items' immediate values, -1 when absent
    std::int64_t chunk_id;
    std::size_t heap_index;
    std::size_t heap_offset;
    std::uint64_t *batch_stats;
    std::uint8_t *extra;
    std::size_t extra_offset;
    std::size_t extra_size;
};

struct spead2_place_params {
    std::size_t heaps_per_chunk;
    std::size_t heap_size;
    std::uint64_t index_step;
    std::size_t n_items;
};

// Requested items: [index item, heap size (0x2), named items...]. A heap of another
// size, or whose index is absent or not a multiple of the step, is left out (chunk_id
// stays -1); the named items go to the chunk's `extra`, n_items values per heap.
extern "C" void spead2_place(void *data, std::size_t size, void *context) {
    auto *d = static_cast<spead2_place_data *>(data);
    const auto *p = static_cast<const spead2_place_params *>(context);
    if (size < offsetof(spead2_place_data, extra)) return;
    const std::int64_t value = d->items[0];
    if (value < 0 || d->items[1] != static_cast<std::int64_t>(p->heap_size)) return;
    if (static_cast<std::uint64_t>(value) % p->index_step != 0) return;
    const std::uint64_t index = static_cast<std::uint64_t>(value) / p->index_step;
    d->chunk_id = static_cast<std::int64_t>(index / p->heaps_per_chunk);
    d->heap_index = index % p->heaps_per_chunk;
    d->heap_offset = d->heap_index * p->heap_size;
    if (p->n_items != 0 && size >= sizeof(spead2_place_data)) {
        std::memcpy(d->extra, d->items + 2, p->n_items * sizeof(std::int64_t));
        d->extra_offset = d->heap_index * p->n_items * sizeof(std::int64_t);
        d->extra_size = p->n_items * sizeof(std::int64_t);
    }
}

py::tuple make_spead2_place(std::size_t heaps_per_chunk, std::size_t heap_size,
                            std::uint64_t index_step, std::size_t n_items) {
    if (heaps_per_chunk == 0) throw std::invalid_argument("heaps_per_chunk must be > 0, got 0");
    if (index_step == 0) throw std::invalid_argument("index_step must be > 0, got 0");
    auto params = std::make_unique<spead2_place_params>(
        spead2_place_params{heaps_per_chunk, heap_size, index_step, n_items});
    PyObject *cap = PyCapsule_New(reinterpret_cast<void *>(&spead2_place),
                                  "void (void *, size_t, void *)", [](PyObject *capsule) {
                                      delete static_cast<spead2_place_params *>(
                                          PyCapsule_GetContext(capsule));
                                  });
    if (cap == nullptr) throw py::error_already_set();
    if (PyCapsule_SetContext(cap, params.get()) != 0) {
        Py_DECREF(cap);
        throw py::error_already_set();
    }
    params.release();  // owned by the capsule from here on
    return py::make_tuple(py::reinterpret_steal<py::object>(cap));
}

}  // namespace

void bind_spead2_place(py::module_ &m) {
    m.def("_spead2_place", &make_spead2_place, py::arg("heaps_per_chunk"), py::arg("heap_size"),
          py::arg("index_step") = 1, py::arg("n_items") = 0,
          "spead2 ChunkStreamConfig place callback placing as Format.spead does; request the "
          "items [index item, spead2.HEAP_LENGTH_ID, named items...] and max_heap_extra = "
          "8 * n_items");
}

void bind_spead_format(py::class_<format> &cls) {
    cls.def_static("spead", &make_spead_format, py::arg("heap_size") = 8192, py::kw_only(),
                   py::arg("heap_address_bits") = 48, py::arg("index_item") = spead_heap_cnt_id,
                   py::arg("index_step") = 1, py::arg("items") = std::vector<std::uint64_t>{},
                   py::arg("max_packet") = 9000, py::arg("udp_port") = 0,
                   "SPEAD-64-48 (or 64-40) heaps of heap_size bytes, one per slot: slot index "
                   "= immediate value of index_item (default the heap counter) // index_step; "
                   "the named immediate `items` land in per-slot arrays (Chunk.items)");
    cls.def_property_readonly(
        "spead_config",
        [](const format &f) -> py::object {
            if (!f.spead) return py::none();
            const spead_format &s = *f.spead;
            py::dict d;
            d["heap_size"] = f.payload_size;
            d["heap_address_bits"] = s.heap_address_bits;
            d["index_item"] = s.index_item;
            d["index_step"] = s.index_step;
            d["items"] = std::vector<std::uint64_t>(s.items.begin(), s.items.begin() + s.n_items);
            d["max_packet"] = s.max_packet;
            return std::move(d);
        },
        "None, or the SPEAD descriptor's settings");
}

std::string spead_repr(const format &f) {
    const spead_format &s = *f.spead;
    std::string r = "Format.spead(heap_size=" + std::to_string(f.payload_size);
    if (s.heap_address_bits != 48)
        r += ", heap_address_bits=" + std::to_string(s.heap_address_bits);
    if (s.index_item != spead_heap_cnt_id) r += ", index_item=" + hex(s.index_item);
    if (s.index_step != 1) r += ", index_step=" + std::to_string(s.index_step);
    if (s.n_items) {
        r += ", items=[";
        for (std::size_t i = 0; i < s.n_items; i++) r += (i ? ", " : "") + hex(s.items[i]);
        r += "]";
    }
    if (s.max_packet != 9000) r += ", max_packet=" + std::to_string(s.max_packet);
    if (f.udp_port) r += ", udp_port=" + std::to_string(f.udp_port);
    return r + ")";
}

py::object heap_bytes_array(py::handle owner, const std::uint64_t *heap_bytes, std::size_t ppc) {
    if (heap_bytes == nullptr) return py::none();
    return py::array_t<std::uint64_t>({ppc}, {sizeof(std::uint64_t)}, heap_bytes, owner);
}

py::dict items_arrays(py::handle owner, const std::uint64_t *items, const std::uint64_t *ids,
                      std::size_t n, std::size_t ppc) {
    py::dict d;
    if (items == nullptr) return d;
    for (std::size_t k = 0; k < n; k++)
        d[py::int_(ids[k])] =
            py::array_t<std::uint64_t>({ppc}, {sizeof(std::uint64_t)}, items + k * ppc, owner);
    return d;
}

void add_spead_stats(py::dict &d, const counters &c, const format &fmt) {
    if (!fmt.spead) return;
    d["heaps_partial"] = c.heaps_partial;
    py::dict by;
    for (std::size_t r = 0; r < n_spead_rejects; r++)
        by[spead_reject_name(static_cast<spead_reject>(r + 1))] = c.rejected_by[r];
    d["rejected_by"] = by;
}

}  // namespace casper400g_rx
