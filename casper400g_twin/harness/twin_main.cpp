// SPDX-License-Identifier: GPL-3.0-or-later
// twin_main.cpp — the digital twin's harness: a design's generated top.v, Verilated, run as
// a board. Its clocks run at the design's frequencies; the DCMAC of each 400GbE block is
// played by the C++ model (../models/) and its frames go to a network port
// (TAP device, UDP tunnel or pcap file) through the link model; the AXI4-Lite bus is
// mastered on requests from the control descriptor, where casper400g_twin (board-server
// behind it) sends them.
//
// Control protocol (one line per request, one reply line each, in order):
//   r ADDR N            -> ok W0 .. W(N-1)   (hex words)      | err RESP ADDR
//   w ADDR W0 [W1 ..]   -> ok                                 | err RESP ADDR
//   stats               -> stats {json}
//   faults MAC k=v ..   -> ok     (drop= duplicate= delay= depth= seed= drop_at=i,j ..)
//   flush MAC           -> ok     (release datagrams the link model holds)
//   quit                -> ok, then the harness exits (so does EOF on the descriptor)
// Addresses and words are hex (0x optional). A bus access that fails stops the request.
//
// The design may come from an uploaded image: the harness refuses to run as root, and sets
// no_new_privs before the design's first evaluation (nothing it starts gains privileges).
// A TAP device or pcap file it is given as a descriptor (tapfd:N:NAME, pcapfd:N:PATH) was
// opened by its privileged parent.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "Vtop.h"
#include "axil_master.h"
#include "dcmac_rx.h"
#include "dcmac_tx.h"
#include "design_ports.h"
#include "link_model.h"
#include "net_port.h"
#include "twin_design.h"
#include "verilated.h"

namespace twin {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

constexpr std::uint64_t FS_PER_S = 1000000000000000ull;
constexpr double USER_CLK_HZ = 390.625e6;
constexpr double MAC_CLK_HZ = 391.03e6;
constexpr double AXIL_CLK_HZ = 250e6;
constexpr std::uint64_t RESET_AXIL_CYCLES = 16;
// Idle: no frame either way and no bus access for this many user_clk cycles. The twin
// then slows down (short runs, then sleeps until a descriptor wakes it) so that a board
// nobody uses does not take a CPU core.
constexpr std::uint64_t IDLE_CYCLES = 1 << 16;
// The link model releases what it holds once the stream paused this long.
constexpr std::uint64_t LINK_FLUSH_CYCLES = 4096;

std::uint64_t period_fs(double hz) { return static_cast<std::uint64_t>(FS_PER_S / hz + 0.5); }

enum class ClockKind { USER, AXIL, MAC_TX, MAC_RX };

struct Clock {
    CData *sig;
    std::uint64_t period, next_rise, fall_at = 0;
    bool high = false;
    ClockKind kind;
    std::size_t mac;
};

struct Mac {
    MacPorts ports;
    std::unique_ptr<NetPort> port;
    dcmac::LinePacer pacer;
    dcmac::TxChecker checker;
    dcmac::RxPacker packer;
    LinkModel link;
    dcmac::Bus tx_bus, rx_bus;
    std::uint64_t tx_cost = 0;
    bool rx_idle_driven = false;
    std::uint64_t to_host_frames = 0, to_host_bytes = 0, from_host_frames = 0,
                  from_host_bytes = 0, send_errors = 0, last_tx_cycle = 0;

    Mac(const MacPorts &p, std::unique_ptr<NetPort> np, double mac_hz)
        : ports(p), port(std::move(np)), pacer(mac_hz),
          checker([this](const std::vector<std::uint8_t> &f, bool err) { from_core(f, err); }),
          packer(mac_hz), link([this](const std::vector<std::uint8_t> &f) { to_host(f); }) {}

    void from_core(const std::vector<std::uint8_t> &frame, bool err) {
        if (err) return;  // the MAC sends a frame the client marked bad with a bad FCS
        link.carry(frame);
    }

    void to_host(const std::vector<std::uint8_t> &frame) {
        if (!port) return;
        if (port->send(frame.data(), frame.size())) {
            to_host_frames++;
            to_host_bytes += frame.size();
        } else {
            send_errors++;
        }
    }

    void sample_tx() {
        SegmentPorts &s = ports.tx;
        dcmac::Bus &b = tx_bus;
        b.tvalid = *s.tvalid;
        if (!b.tvalid) return;
        b.ena = b.sop = b.eop = b.err = 0;
        for (int i = 0; i < SEGMENTS; i++) {
            if (!*s.ena[i]) continue;
            b.ena |= 1 << i;
            b.sop |= (*s.sop[i] & 1) << i;
            b.eop |= (*s.eop[i] & 1) << i;
            b.err |= (*s.err[i] & 1) << i;
            b.mty[i] = *s.mty[i];
            std::memcpy(b.data[i], s.tdata[i], dcmac::SEG_BYTES);
        }
    }

    void drive_rx() {
        packer.next_cycle(rx_bus);
        if (!rx_bus.tvalid && rx_idle_driven) return;
        SegmentPorts &s = ports.rx;
        *s.tvalid = rx_bus.tvalid;
        for (int i = 0; i < SEGMENTS; i++) {
            *s.ena[i] = rx_bus.ena >> i & 1;
            *s.sop[i] = rx_bus.sop >> i & 1;
            *s.eop[i] = rx_bus.eop >> i & 1;
            *s.err[i] = rx_bus.err >> i & 1;
            *s.mty[i] = rx_bus.mty[i];
            if (rx_bus.ena >> i & 1) std::memcpy(s.tdata[i], rx_bus.data[i], dcmac::SEG_BYTES);
        }
        rx_idle_driven = !rx_bus.tvalid;
    }
};

struct Options {
    // NAME=tap:IF | NAME=tapfd:FD:IF | NAME=udp:LOCAL,PEER | NAME=pcap:PATH | NAME=pcapfd:FD:PATH
    std::vector<std::string> ports;
    int control_fd = -1;
};

[[noreturn]] void usage(const char *msg) {
    std::fprintf(stderr,
                 "twin: %s\nusage: twin --control-fd N [--port NAME=tap:IF|tapfd:FD:IF|"
                 "udp:LOCAL,PEER|pcap:PATH|pcapfd:FD:PATH]...\n",
                 msg);
    std::exit(2);
}

std::unique_ptr<NetPort> open_port(const std::string &spec) {
    const auto colon = spec.find(':');
    const std::string kind = spec.substr(0, colon), arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
    if (kind == "tap") return std::make_unique<TapPort>(arg);
    if (kind == "pcap") return std::make_unique<PcapPort>(arg);
    if (kind == "tapfd" || kind == "pcapfd") {
        const auto sep = arg.find(':');
        if (sep == std::string::npos) usage(("want " + kind + ":FD:NAME in '" + spec + "'").c_str());
        const int fd = adopt_fd(arg.substr(0, sep));
        if (kind == "tapfd") return std::make_unique<TapPort>(fd, arg.substr(sep + 1));
        return std::make_unique<PcapPort>(fd, arg.substr(sep + 1));
    }
    if (kind == "udp") {
        const auto comma = arg.find(',');
        if (comma == std::string::npos) usage("udp port: want udp:LOCAL_IP:PORT,PEER_IP:PORT");
        return std::make_unique<UdpTunnelPort>(arg.substr(0, comma), arg.substr(comma + 1));
    }
    if (kind == "none") return nullptr;
    usage(("unknown port kind in '" + spec + "'").c_str());
}

std::string json_escape(const std::string &s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) continue;
        out += c;
    }
    return out;
}

class Harness {
  public:
    Harness(const Options &opt, VerilatedContext *ctx)
        : ctx_(ctx), top_(std::make_unique<Vtop>(ctx, "top")), control_fd_(opt.control_fd) {
        bind_design(top_.get(), ports_);
        axil_ = std::make_unique<AxilMaster>(ports_.axil);
        const double mac_hz = MAC_CLK_HZ;
        for (std::size_t i = 0; i < ports_.macs.size(); i++) {
            std::unique_ptr<NetPort> np;
            const std::string want = ports_.macs[i].name + "=";
            for (const auto &p : opt.ports)
                if (p.rfind(want, 0) == 0) np = open_port(p.substr(want.size()));
            macs_.push_back(std::make_unique<Mac>(ports_.macs[i], std::move(np), mac_hz));
        }
        clocks_.push_back({ports_.user_clk, period_fs(USER_CLK_HZ), 0, 0, false, ClockKind::USER, 0});
        clocks_.push_back({ports_.axil.clk, period_fs(AXIL_CLK_HZ), 0, 0, false, ClockKind::AXIL, 0});
        for (std::size_t i = 0; i < macs_.size(); i++) {
            const std::uint64_t p = period_fs(mac_hz);
            // The RX clock is its own domain: give it its own phase, as the core allows.
            clocks_.push_back({ports_.macs[i].tx_clk, p, 0, 0, false, ClockKind::MAC_TX, i});
            clocks_.push_back({ports_.macs[i].rx_clk, p, p / 3, 0, false, ClockKind::MAC_RX, i});
        }
        for (auto &c : clocks_) *c.sig = 0;
        *ports_.axil.rst_n = 0;
        for (auto &m : macs_) {
            *m->ports.tx_rst = 1;
            *m->ports.rx_rst = 1;
            *m->ports.tready = 0;
            *m->ports.taf = 0;
            m->drive_rx();
        }
        for (std::size_t i = 0; i < macs_.size(); i++) drive_link(top_.get(), i, false);
        top_->eval();
    }

    int run() {
        t_start_ = std::chrono::steady_clock::now();
        while (!g_stop && !quit_) {
            const bool idle = user_cycles_ - last_activity_ > IDLE_CYCLES && !axil_->busy();
            service(idle ? 5 : 0);
            if (g_stop || quit_) break;
            run_cycles(idle ? 256 : 2048);
        }
        for (auto &m : macs_) m->link.flush();
        top_->final();
        return 0;
    }

  private:
    // ---------------------------------------------------------------- simulation
    void run_cycles(std::uint64_t user_cycles) {
        const std::uint64_t until = user_cycles_ + user_cycles;
        axil_completed_ = false;
        while (user_cycles_ < until && !axil_completed_) step();
        for (auto &m : macs_) {
            if (m->packer.queued()) last_activity_ = user_cycles_;
            if (m->link.held() && user_cycles_ - m->last_tx_cycle > LINK_FLUSH_CYCLES)
                m->link.flush();
        }
        if (axil_->busy()) last_activity_ = user_cycles_;
    }

    void step() {
        std::uint64_t t = UINT64_MAX;
        for (const auto &c : clocks_) t = std::min(t, c.next_rise);
        bool settle = false;
        for (auto &c : clocks_) {
            if (c.high && c.fall_at <= t) {
                *c.sig = 0;
                c.high = false;
                settle |= c.next_rise == t;  // it must be seen low before it rises again
            }
        }
        if (settle) top_->eval();
        std::size_t rising[32];  // 2 + 2 per 400GbE block
        std::size_t n = 0;
        for (std::size_t i = 0; i < clocks_.size() && n < 32; i++)
            if (clocks_[i].next_rise == t) rising[n++] = i;
        for (std::size_t k = 0; k < n; k++) pre_edge(clocks_[rising[k]]);
        for (std::size_t k = 0; k < n; k++) {
            Clock &c = clocks_[rising[k]];
            *c.sig = 1;
            c.high = true;
            c.fall_at = t + c.period / 2;
            c.next_rise = t + c.period;
        }
        now_fs_ = t;
        top_->eval();
        for (std::size_t k = 0; k < n; k++) post_edge(clocks_[rising[k]]);
    }

    void pre_edge(Clock &c) {
        switch (c.kind) {
        case ClockKind::USER: break;
        case ClockKind::AXIL: axil_->pre_edge(); break;
        case ClockKind::MAC_TX: {
            Mac &m = *macs_[c.mac];
            if (in_reset_) break;
            m.sample_tx();
            m.tx_cost = m.checker.step(m.tx_bus, *m.ports.tready, *m.ports.taf);
            if (m.tx_bus.tvalid) {
                last_activity_ = user_cycles_;
                m.last_tx_cycle = user_cycles_;
            }
            break;
        }
        case ClockKind::MAC_RX: break;
        }
    }

    void post_edge(Clock &c) {
        switch (c.kind) {
        case ClockKind::USER: user_cycles_++; break;
        case ClockKind::AXIL:
            if (in_reset_ && ++axil_cycles_ >= RESET_AXIL_CYCLES) release_reset();
            if (axil_->post_edge(in_reset_)) axil_completed_ = true;
            break;
        case ClockKind::MAC_TX: {
            Mac &m = *macs_[c.mac];
            if (in_reset_) break;
            m.pacer.advance(m.tx_cost);
            m.tx_cost = 0;
            *m.ports.tready = m.pacer.tready();
            *m.ports.taf = m.pacer.taf();
            break;
        }
        case ClockKind::MAC_RX:
            if (!in_reset_) macs_[c.mac]->drive_rx();
            break;
        }
    }

    void release_reset() {
        in_reset_ = false;
        *ports_.axil.rst_n = 1;
        for (std::size_t i = 0; i < macs_.size(); i++) {
            *macs_[i]->ports.tx_rst = 0;
            *macs_[i]->ports.rx_rst = 0;
            *macs_[i]->ports.tready = macs_[i]->pacer.tready();
            *macs_[i]->ports.taf = macs_[i]->pacer.taf();
            drive_link(top_.get(), i, true);
        }
    }

    // ---------------------------------------------------------------- descriptors
    void service(int timeout_ms) {
        std::vector<pollfd> fds;
        fds.push_back({control_fd_, POLLIN, 0});
        for (auto &m : macs_)
            if (m->port && m->port->fd() >= 0) fds.push_back({m->port->fd(), POLLIN, 0});
        const int n = ::poll(fds.data(), fds.size(), timeout_ms);
        if (n < 0) return;  // EINTR: the signal flag is checked by the caller
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) read_control();
        handle_lines();
        for (auto &m : macs_) {
            if (!m->port || m->port->fd() < 0) continue;
            // A bounded number per pass, so a flood from the host cannot stall the clocks.
            for (int k = 0; k < 256 && m->port->recv(frame_); k++) {
                m->from_host_frames++;
                m->from_host_bytes += frame_.size();
                m->packer.push(frame_.data(), frame_.size());
                last_activity_ = user_cycles_;
            }
        }
    }

    void read_control() {
        char buf[65536];
        const ssize_t n = ::read(control_fd_, buf, sizeof buf);
        if (n == 0) {
            quit_ = true;  // the controlling process went away
            return;
        }
        if (n > 0) inbox_.append(buf, static_cast<std::size_t>(n));
    }

    void reply(const std::string &line) {
        std::string out = line + "\n";
        const char *p = out.data();
        std::size_t left = out.size();
        while (left) {
            const ssize_t n = ::write(control_fd_, p, left);
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                quit_ = true;
                return;
            }
            p += n;
            left -= static_cast<std::size_t>(n);
        }
    }

    // One request at a time: the next line is taken once the bus request before it ended.
    void handle_lines() {
        while (!request_open_ && !quit_) {
            const auto nl = inbox_.find('\n');
            if (nl == std::string::npos) return;
            const std::string line = inbox_.substr(0, nl);
            inbox_.erase(0, nl + 1);
            handle(line);
        }
    }

    static std::uint32_t hex(const std::string &s) {
        return static_cast<std::uint32_t>(std::stoul(s, nullptr, 16));
    }

    void handle(const std::string &line) {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        try {
            if (cmd == "r" || cmd == "w") {
                std::string a;
                in >> a;
                auto req = std::make_shared<BusRequest>();
                req->write = cmd == "w";
                req->addr = hex(a);
                if (req->write) {
                    std::string w;
                    while (in >> w) req->words.push_back(hex(w));
                } else {
                    std::string n;
                    in >> n;
                    req->count = std::stoul(n, nullptr, 10);
                }
                const std::size_t total = req->write ? req->words.size() : req->count;
                if (total == 0 || total > 65536) {
                    reply("err ARGS " + a);
                    return;
                }
                request_open_ = true;
                issue(req, 0);
            } else if (cmd == "stats") {
                reply("stats " + stats_json());
            } else if (cmd == "faults") {
                std::string name, kv;
                in >> name;
                Mac *m = find_mac(name);
                if (!m) return reply("err ARGS unknown block " + name);
                LinkFaults f;
                while (in >> kv) parse_fault(f, kv);
                m->link.configure(f);
                reply("ok");
            } else if (cmd == "flush") {
                std::string name;
                in >> name;
                Mac *m = find_mac(name);
                if (!m) return reply("err ARGS unknown block " + name);
                m->link.flush();
                reply("ok");
            } else if (cmd == "quit") {
                reply("ok");
                quit_ = true;
            } else {
                reply("err ARGS unknown request '" + cmd + "'");
            }
        } catch (const std::exception &e) {
            reply(std::string("err ARGS ") + e.what());
        }
    }

    static std::set<std::uint64_t> index_list(const std::string &v) {
        std::set<std::uint64_t> out;
        std::stringstream ss(v);
        std::string item;
        while (std::getline(ss, item, ','))
            if (!item.empty()) out.insert(std::stoull(item));
        return out;
    }

    static void parse_fault(LinkFaults &f, const std::string &kv) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("fault '" + kv + "': want k=v");
        const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        if (k == "drop") f.drop = std::stod(v);
        else if (k == "duplicate") f.duplicate = std::stod(v);
        else if (k == "delay") f.delay = std::stod(v);
        else if (k == "depth") f.depth = static_cast<unsigned>(std::stoul(v));
        else if (k == "seed") f.seed = std::stoull(v);
        else if (k == "drop_at") f.drop_at = index_list(v);
        else if (k == "duplicate_at") f.duplicate_at = index_list(v);
        else if (k == "delay_at") f.delay_at = index_list(v);
        else throw std::invalid_argument("unknown fault '" + k + "'");
        if (f.depth == 0) throw std::invalid_argument("depth must be at least 1");
    }

    Mac *find_mac(const std::string &name) {
        for (auto &m : macs_)
            if (m->ports.name == name) return m.get();
        return nullptr;
    }

    struct BusRequest {
        bool write = false;
        std::uint32_t addr = 0;
        std::size_t count = 0;
        std::vector<std::uint32_t> words;
        std::string out = "ok";
    };

    void issue(const std::shared_ptr<BusRequest> &req, std::size_t k) {
        AxilOp op;
        op.write = req->write;
        op.addr = req->addr + 4 * static_cast<std::uint32_t>(k);
        op.data = req->write ? req->words[k] : 0;
        op.done = [this, req, k](Resp r, std::uint32_t data) {
            const std::uint32_t addr = req->addr + 4 * static_cast<std::uint32_t>(k);
            if (r != Resp::OKAY) {
                char text[64];
                std::snprintf(text, sizeof text, "err %s %08x", resp_name(r), addr);
                return finish(text);
            }
            if (!req->write) {
                char text[16];
                std::snprintf(text, sizeof text, " %08x", data);
                req->out += text;
            }
            const std::size_t total = req->write ? req->words.size() : req->count;
            if (k + 1 < total) return issue(req, k + 1);
            finish(req->out);
        };
        axil_->submit(std::move(op));
    }

    void finish(const std::string &text) {
        reply(text);
        request_open_ = false;
    }

    std::string stats_json() {
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
        std::ostringstream o;
        o << "{\"sim_fs\":" << now_fs_ << ",\"user_cycles\":" << user_cycles_
          << ",\"wall_s\":" << wall << ",\"axil_accesses\":" << axil_->accesses()
          << ",\"idle\":" << (user_cycles_ - last_activity_ > IDLE_CYCLES ? "true" : "false")
          << ",\"in_reset\":" << (in_reset_ ? "true" : "false") << ",\"macs\":{";
        for (std::size_t i = 0; i < macs_.size(); i++) {
            const Mac &m = *macs_[i];
            const auto &tx = m.checker.stats();
            const auto &rx = m.packer.stats();
            const auto &ln = m.link.stats();
            o << (i ? "," : "") << "\"" << m.ports.name << "\":{"
              << "\"port\":\"" << json_escape(m.port ? m.port->describe() : "none") << "\""
              << ",\"to_host_frames\":" << m.to_host_frames << ",\"to_host_bytes\":" << m.to_host_bytes
              << ",\"from_host_frames\":" << m.from_host_frames
              << ",\"from_host_bytes\":" << m.from_host_bytes << ",\"send_errors\":" << m.send_errors
              << ",\"mac_tx_frames\":" << tx.frames << ",\"mac_tx_bytes\":" << tx.bytes
              << ",\"mac_tx_wire_bytes\":" << tx.wire_bytes << ",\"mac_tx_err_frames\":" << tx.err_frames
              << ",\"mac_tx_cycles\":" << tx.cycles << ",\"mac_tx_stall_cycles\":" << tx.stall_cycles
              << ",\"violations\":" << tx.violations << ",\"violation\":\""
              << json_escape(m.checker.first_violation()) << "\""
              << ",\"mac_rx_frames\":" << rx.frames << ",\"mac_rx_bytes\":" << rx.bytes
              << ",\"rx_queue_drops\":" << rx.queue_drops << ",\"rx_queued\":" << m.packer.queued()
              << ",\"link\":{\"datagrams\":" << ln.datagrams << ",\"dropped\":" << ln.dropped
              << ",\"duplicated\":" << ln.duplicated << ",\"delayed\":" << ln.delayed
              << ",\"passed\":" << ln.passed << ",\"held\":" << m.link.held() << "}}";
        }
        o << "}}";
        return o.str();
    }

    VerilatedContext *ctx_;
    std::unique_ptr<Vtop> top_;
    DesignPorts ports_;
    std::unique_ptr<AxilMaster> axil_;
    std::vector<std::unique_ptr<Mac>> macs_;
    std::vector<Clock> clocks_;
    int control_fd_;
    std::string inbox_;
    std::vector<std::uint8_t> frame_;
    bool quit_ = false, request_open_ = false, in_reset_ = true, axil_completed_ = false;
    std::uint64_t now_fs_ = 0, user_cycles_ = 0, axil_cycles_ = 0, last_activity_ = 0;
    std::chrono::steady_clock::time_point t_start_;
};

}  // namespace
}  // namespace twin

int main(int argc, char **argv) {
    using namespace twin;
    Options opt;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(("missing value after " + a).c_str());
            return argv[++i];
        };
        if (a == "--control-fd") opt.control_fd = std::stoi(value());
        else if (a == "--port") opt.ports.push_back(value());
        else usage(("unknown argument " + a).c_str());
    }
    if (opt.control_fd < 0) usage("--control-fd is required");
    if (::geteuid() == 0) {
        std::fprintf(stderr, "twin: refusing to run as root: the design may be an uploaded one "
                             "(casper400g twin starts it as an unprivileged user)\n");
        return 3;
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        std::fprintf(stderr, "twin: prctl(PR_SET_NO_NEW_PRIVS): %s\n", std::strerror(errno));
        return 3;
    }
    ::signal(SIGPIPE, SIG_IGN);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(1, argv);
    try {
        Harness h(opt, ctx.get());
        std::fprintf(stderr, "twin: ready\n");
        return h.run();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "twin: %s\n", e.what());
        return 1;
    }
}
