// Replays a classic pcap file (microsecond or nanosecond, either byte order)
// with its own reader: no libpcap needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "casper400g_rx/format.h"
#include "casper400g_rx/source.h"

namespace casper400g_rx {

class mapped_file {
public:
    explicit mapped_file(const std::string &path);
    mapped_file(const mapped_file &) = delete;
    mapped_file &operator=(const mapped_file &) = delete;
    ~mapped_file();
    const std::uint8_t *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }

private:
    const std::uint8_t *data_ = nullptr;
    std::size_t size_ = 0;
};

class pcap_source : public source {
public:
    pcap_source(const std::string &path, std::uint16_t udp_port);
    void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) override;
    linktype link() const noexcept { return lt_; }

private:
    mapped_file file_;
    bool swapped_ = false;
    linktype lt_ = linktype::ethernet;
    std::uint16_t udp_port_;
};

}  // namespace casper400g_rx
