// SPDX-License-Identifier: GPL-3.0-or-later
// net_port.h — where the twin's Ethernet frames go: a TAP device (the host sees a NIC with
// the FPGA behind it), a UDP tunnel (one raw Ethernet frame per datagram, no privileges
// needed) or a pcap file (frames the FPGA sent; nothing comes back).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace twin {

inline std::runtime_error sys_error(const std::string &what) {
    return std::runtime_error(what + ": " + std::strerror(errno));
}

class NetPort {
  public:
    virtual ~NetPort() = default;
    // Hand a frame (no FCS) to the host side; false when the host side refused it.
    virtual bool send(const std::uint8_t *frame, std::size_t len) = 0;
    // The next frame from the host side, if one waits (non-blocking).
    virtual bool recv(std::vector<std::uint8_t> &frame) = 0;
    // A descriptor to poll() for frames from the host side, or -1.
    virtual int fd() const = 0;
    virtual std::string describe() const = 0;
};

class FdCloser {
  public:
    explicit FdCloser(int fd = -1) : fd_(fd) {}
    FdCloser(const FdCloser &) = delete;
    FdCloser &operator=(const FdCloser &) = delete;
    ~FdCloser() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }

  private:
    int fd_;
};

// A descriptor handed over by the parent (a TAP device it attached, a file it opened):
// the harness owns it from here on, non-blocking.
inline int adopt_fd(const std::string &text) {
    std::size_t end = 0;
    const int fd = std::stoi(text, &end);
    if (end != text.size() || fd < 3) throw std::runtime_error("bad descriptor '" + text + "'");
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) throw sys_error("descriptor " + text + " is not open");
    if (::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 || ::fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        throw sys_error("descriptor " + text);
    return fd;
}

// A TAP device: frames written appear as received by the interface, frames the host
// sends out of the interface are read here. Either attached by name (a persistent
// interface this user may attach to, in the caller's network namespace) or, as the twin
// does, handed over attached: the parent keeps the privilege, the harness needs none.
class TapPort final : public NetPort {
  public:
    explicit TapPort(const std::string &name) : name_(name), fd_(open_tap(name)) {}
    TapPort(int fd, const std::string &name) : name_(name), fd_(fd) {}

    bool send(const std::uint8_t *frame, std::size_t len) override {
        return ::write(fd_.get(), frame, len) == static_cast<ssize_t>(len);
    }
    bool recv(std::vector<std::uint8_t> &frame) override {
        frame.resize(65536);
        const ssize_t n = ::read(fd_.get(), frame.data(), frame.size());
        if (n <= 0) return false;
        frame.resize(static_cast<std::size_t>(n));
        return true;
    }
    int fd() const override { return fd_.get(); }
    std::string describe() const override { return "tap " + name_; }

  private:
    static int open_tap(const std::string &name) {
        const int fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) throw sys_error("cannot open /dev/net/tun");
        ifreq ifr{};
        ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
        if (name.size() >= IFNAMSIZ) {
            ::close(fd);
            throw std::runtime_error("interface name '" + name + "' is too long");
        }
        std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
        if (::ioctl(fd, TUNSETIFF, &ifr) < 0) {
            const int e = errno;
            ::close(fd);
            errno = e;
            throw sys_error("cannot attach to TAP device '" + name + "'");
        }
        return fd;
    }
    std::string name_;
    FdCloser fd_;
};

inline sockaddr_in parse_endpoint(const std::string &text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("endpoint '" + text + "': want IP:port");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(text.substr(colon + 1))));
    if (inet_pton(AF_INET, text.substr(0, colon).c_str(), &a.sin_addr) != 1)
        throw std::runtime_error("endpoint '" + text + "': bad IPv4 address");
    return a;
}

// One raw Ethernet frame (no FCS) per UDP datagram, both ways, between `local` and `peer`.
class UdpTunnelPort final : public NetPort {
  public:
    UdpTunnelPort(const std::string &local, const std::string &peer)
        : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)),
          local_(local), peer_text_(peer), peer_(parse_endpoint(peer)) {
        if (fd_.get() < 0) throw sys_error("cannot create the tunnel's UDP socket");
        const sockaddr_in a = parse_endpoint(local);
        if (::bind(fd_.get(), reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0)
            throw sys_error("cannot bind the tunnel to " + local);
    }
    bool send(const std::uint8_t *frame, std::size_t len) override {
        return ::sendto(fd_.get(), frame, len, 0, reinterpret_cast<const sockaddr *>(&peer_),
                        sizeof peer_) == static_cast<ssize_t>(len);
    }
    bool recv(std::vector<std::uint8_t> &frame) override {
        frame.resize(65536);
        const ssize_t n = ::recv(fd_.get(), frame.data(), frame.size(), 0);
        if (n <= 0) return false;
        frame.resize(static_cast<std::size_t>(n));
        return true;
    }
    int fd() const override { return fd_.get(); }
    std::string describe() const override {
        return "udp tunnel " + local_ + " <-> " + peer_text_;
    }

  private:
    FdCloser fd_;
    std::string local_, peer_text_;
    sockaddr_in peer_;
};

// Frames the FPGA sends, appended to a pcap file (Ethernet link type) as they leave: a
// file opened by path, or a descriptor the parent opened (`path` then only names it).
class PcapPort final : public NetPort {
  public:
    explicit PcapPort(const std::string &path) : PcapPort(std::fopen(path.c_str(), "wb"), path) {}
    PcapPort(int fd, const std::string &path) : PcapPort(::fdopen(fd, "wb"), path) {}
    PcapPort(std::FILE *f, const std::string &path) : path_(path), f_(f) {
        if (!f_) throw sys_error("cannot write " + path);
        const std::uint32_t hdr[6] = {0xa1b2c3d4u, 0x00040002u, 0, 0, 65535, 1};
        std::fwrite(hdr, sizeof hdr, 1, f_);
        std::fflush(f_);
    }
    ~PcapPort() override { std::fclose(f_); }
    bool send(const std::uint8_t *frame, std::size_t len) override {
        timeval tv{};
        ::gettimeofday(&tv, nullptr);
        const std::uint32_t rec[4] = {static_cast<std::uint32_t>(tv.tv_sec),
                                      static_cast<std::uint32_t>(tv.tv_usec),
                                      static_cast<std::uint32_t>(len),
                                      static_cast<std::uint32_t>(len)};
        const bool ok = std::fwrite(rec, sizeof rec, 1, f_) == 1 && std::fwrite(frame, len, 1, f_) == 1;
        std::fflush(f_);  // a reader may follow the file while the twin runs
        return ok;
    }
    bool recv(std::vector<std::uint8_t> &) override { return false; }
    int fd() const override { return -1; }
    std::string describe() const override { return "pcap " + path_; }

  private:
    std::string path_;
    std::FILE *f_;
};

}  // namespace twin
