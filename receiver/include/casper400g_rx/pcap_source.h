// Replays a classic pcap file (microsecond or nanosecond, either byte order)
// with its own reader: no libpcap needed.
//
// The file is read with pread into a buffer, never mapped: a file truncated while it is
// replayed (a capture still being rotated, a copy in progress) must end the replay with
// an error naming the file and offset, where a mapping would kill the process (SIGBUS).
// The replay covers the file as long as it was when opened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "casper400g_rx/fd.h"
#include "casper400g_rx/format.h"
#include "casper400g_rx/source.h"

namespace casper400g_rx {

// The largest record the replay reads (libpcap's largest snap length): a longer one
// cannot hold a datagram of the stream and is counted `rejected` unread.
inline constexpr std::size_t pcap_max_record = 262144;

class pcap_source : public source {
public:
    pcap_source(const std::string &path, std::uint16_t udp_port);
    void run(std::size_t i, engine &eng, const std::atomic<bool> &stop) override;
    linktype link() const noexcept { return lt_; }

private:
    // The bytes [off, off + n) of the file, read into the buffer when not already there
    // (n <= the buffer's size). Throws when the file ends before the size it had when
    // it was opened.
    const std::uint8_t *bytes_at(std::size_t off, std::size_t n);

    std::string path_;
    unique_fd fd_;
    std::size_t size_ = 0;  // at open: how far the replay reads
    bool swapped_ = false;
    linktype lt_ = linktype::ethernet;
    std::uint16_t udp_port_;
    std::vector<std::uint8_t> buf_;
    std::size_t buf_off_ = 0;  // file offset of buf_[0]
    std::size_t buf_len_ = 0;  // valid bytes in buf_
};

}  // namespace casper400g_rx
