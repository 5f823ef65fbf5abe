// lab_httpd: the gateway of the single-queue lab and of the datapath test. An epoll HTTP/1.1 server
// (keep-alive, one SO_REUSEPORT listener per thread) whose handler costs a small fixed time, with
// an optional simulated upstream that answers after a fixed delay plus a random part, and a
// per-connection log (peer, the CPU its packets were processed on: SO_INCOMING_CPU).
//
//   lab_httpd --listen 10.0.0.2:8080 [--threads N] [--cost-us U] [--upstream-ms A --jitter-ms B]
//             [--conn-log FILE] [--body-bytes N]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
std::atomic<bool> gStop{false};
extern "C" void onSignal(int) { gStop.store(true); }

struct Options {
    sockaddr_storage addr{};
    socklen_t addrLen = 0;
    unsigned threads = 1, costUs = 0, upstreamMs = 0, jitterMs = 0, bodyBytes = 64;
    std::string connLog;
};

struct Conn {
    int fd = -1;
    std::string in, out;
    unsigned pending = 0;  // requests waiting on the simulated upstream
    unsigned long requests = 0;
    int cpu = -1;
    std::string peer;
    unsigned gen = 0;
    bool closing = false;
};

struct Due {
    Clock::time_point at;
    int fd;
    unsigned gen;
    bool operator>(const Due& o) const { return at > o.at; }
};

std::mutex gLogMutex;
std::vector<std::string> gLog;

void spin(unsigned us) {
    if (us == 0) return;
    const auto until = Clock::now() + std::chrono::microseconds(us);
    while (Clock::now() < until) {
    }
}

std::string peerOf(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (ss.ss_family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        port = ntohs(a->sin6_port);
    }
    return std::string(ip) + " " + std::to_string(port);
}

void serve(const Options& o, unsigned index) {
    int ls = socket(o.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(ls, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (bind(ls, reinterpret_cast<const sockaddr*>(&o.addr), o.addrLen) != 0 || listen(ls, 65535) != 0) {
        std::fprintf(stderr, "lab_httpd: bind/listen: %s\n", std::strerror(errno));
        std::exit(1);
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = ls;
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    std::unordered_map<int, Conn> conns;
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> timers;
    std::mt19937 rng(12345 + index);
    const std::string body(o.bodyBytes, 'x');
    const std::string response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                                 std::to_string(body.size()) + "\r\n\r\n" + body;
    std::vector<std::string> log;

    auto closeConn = [&](Conn& c) {
        if (!o.connLog.empty()) log.push_back(c.peer + " " + std::to_string(c.cpu) + " " + std::to_string(c.requests));
        epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
        close(c.fd);
        conns.erase(c.fd);
    };
    auto flush = [&](Conn& c) -> bool {
        while (!c.out.empty()) {
            ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
            if (n > 0) {
                c.out.erase(0, static_cast<size_t>(n));
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                epoll_event w{};
                w.events = EPOLLIN | EPOLLOUT;
                w.data.fd = c.fd;
                epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &w);
                return true;
            }
            return false;
        }
        epoll_event w{};
        w.events = EPOLLIN;
        w.data.fd = c.fd;
        epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &w);
        return true;
    };

    epoll_event events[256];
    char buf[16384];
    while (!gStop.load()) {
        int timeout = 100;
        if (!timers.empty()) {
            auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timers.top().at - Clock::now()).count();
            timeout = static_cast<int>(std::clamp<long>(ms, 0, 100));
        }
        int n = epoll_wait(ep, events, 256, timeout);
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            if (fd == ls) {
                for (;;) {
                    int c = accept4(ls, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (c < 0) break;
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    Conn& conn = conns[c];
                    conn = Conn{};
                    conn.fd = c;
                    conn.peer = peerOf(c);
                    static std::atomic<unsigned> gens{0};
                    conn.gen = ++gens;
                    epoll_event w{};
                    w.events = EPOLLIN;
                    w.data.fd = c;
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &w);
                }
                continue;
            }
            auto it = conns.find(fd);
            if (it == conns.end()) continue;
            Conn& c = it->second;
            bool alive = true;
            if (events[i].events & EPOLLIN) {
                ssize_t r = recv(fd, buf, sizeof buf, 0);
                if (r > 0) c.in.append(buf, static_cast<size_t>(r));
                else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) alive = false;
                size_t end;
                while (alive && (end = c.in.find("\r\n\r\n")) != std::string::npos) {
                    const bool closeAfter = c.in.substr(0, end).find("Connection: close") != std::string::npos;
                    c.in.erase(0, end + 4);
                    ++c.requests;
                    if (c.cpu < 0) {
                        socklen_t len = sizeof c.cpu;
                        getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &c.cpu, &len);
                    }
                    spin(o.costUs);
                    if (o.upstreamMs || o.jitterMs) {
                        const unsigned extra = o.jitterMs ? static_cast<unsigned>(rng() % (o.jitterMs * 1000 + 1)) : 0;
                        timers.push({Clock::now() + std::chrono::milliseconds(o.upstreamMs) + std::chrono::microseconds(extra), fd, c.gen});
                        ++c.pending;
                    } else {
                        c.out += response;
                    }
                    if (closeAfter) c.closing = true;
                }
            }
            if (alive && !c.out.empty()) alive = flush(c);
            else if (alive && (events[i].events & EPOLLOUT)) alive = flush(c);
            if (alive && c.closing && c.pending == 0 && c.out.empty()) alive = false;
            if (!alive || (events[i].events & (EPOLLHUP | EPOLLERR))) closeConn(c);
        }
        const auto now = Clock::now();
        while (!timers.empty() && timers.top().at <= now) {
            Due d = timers.top();
            timers.pop();
            auto it = conns.find(d.fd);
            if (it == conns.end() || it->second.gen != d.gen) continue;
            Conn& c = it->second;
            --c.pending;
            c.out += response;
            bool alive = flush(c);
            if (alive && c.closing && c.pending == 0 && c.out.empty()) alive = false;
            if (!alive) closeConn(c);
        }
    }
    while (!conns.empty()) closeConn(conns.begin()->second);
    close(ls);
    close(ep);
    std::lock_guard lock(gLogMutex);
    gLog.insert(gLog.end(), log.begin(), log.end());
}

bool parseAddr(const std::string& s, Options& o) {
    auto colon = s.rfind(':');
    if (colon == std::string::npos) return false;
    std::string host = s.substr(0, colon), port = s.substr(colon + 1);
    if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
    auto* v4 = reinterpret_cast<sockaddr_in*>(&o.addr);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&o.addr);
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(static_cast<uint16_t>(std::atoi(port.c_str())));
        o.addrLen = sizeof *v4;
        return true;
    }
    if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(static_cast<uint16_t>(std::atoi(port.c_str())));
        o.addrLen = sizeof *v6;
        return true;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    bool haveAddr = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "lab_httpd: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        auto num = [&]() { return static_cast<unsigned>(std::strtoul(next().c_str(), nullptr, 10)); };
        if (a == "--listen") haveAddr = parseAddr(next(), o);
        else if (a == "--threads") o.threads = std::max(1u, num());
        else if (a == "--cost-us") o.costUs = num();
        else if (a == "--upstream-ms") o.upstreamMs = num();
        else if (a == "--jitter-ms") o.jitterMs = num();
        else if (a == "--body-bytes") o.bodyBytes = num();
        else if (a == "--conn-log") o.connLog = next();
        else {
            std::fprintf(stderr, "usage: lab_httpd --listen ADDR:PORT [--threads N] [--cost-us U] [--upstream-ms A] "
                                 "[--jitter-ms B] [--body-bytes N] [--conn-log FILE]\n");
            return 2;
        }
    }
    if (!haveAddr) {
        std::fprintf(stderr, "lab_httpd: --listen ADDR:PORT is required\n");
        return 2;
    }
    struct sigaction sa{};
    sa.sa_handler = onSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < o.threads; ++t) threads.emplace_back(serve, std::cref(o), t);
    for (auto& t : threads) t.join();
    if (!o.connLog.empty()) {
        std::ofstream out(o.connLog);
        for (const auto& l : gLog) out << l << "\n";  // peer_ip peer_port incoming_cpu requests
    }
    return 0;
}
