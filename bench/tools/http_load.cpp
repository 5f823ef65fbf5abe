// http_load: the lab's load generator, run from the client netns. Closed loop (each connection
// sends its next request when the answer came, like wrk) or open loop at a fixed offered rate
// (like wrk2: latency counted from when the request was due, so a stalled server cannot hide its
// queue). Prints one JSON line.
//
//   http_load --url-host 10.0.0.2 --port 8080 --connections C (--duration S | --requests N)
//             [--rate R] [--threads T] [--timeout-ms M] [--close]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    sockaddr_in addr{};
    unsigned connections = 16, threads = 1, requests = 0, timeoutMs = 2000;
    double duration = 0, rate = 0;  // rate: requests/s over all connections (0: closed loop)
    bool closeEach = false;         // one connection per request (Connection: close)
};

struct Result {
    unsigned long ok = 0, errors = 0, timeouts = 0, connectErrors = 0;
    unsigned long inFlight = 0;  // at the end: sent or due, not yet answered, not yet overdue
    std::vector<uint32_t> latUs;
};

struct Conn {
    int fd = -1;
    bool busy = false, connecting = false;
    Clock::time_point due, sent;
    std::string in;
    unsigned done = 0;
    Clock::time_point next;  // open loop: when the next request is due
};

void run(const Options& o, unsigned first, unsigned count, Clock::time_point start, Clock::time_point end, Result& res) {
    const std::string req = std::string("GET / HTTP/1.1\r\nHost: lab\r\n") + (o.closeEach ? "Connection: close\r\n" : "") + "\r\n";
    int ep = epoll_create1(EPOLL_CLOEXEC);
    std::vector<Conn> conns(count);
    const double perConnRate = o.rate > 0 ? o.rate / o.connections : 0;
    const auto interval = perConnRate > 0 ? std::chrono::nanoseconds(static_cast<long>(1e9 / perConnRate)) : std::chrono::nanoseconds(0);
    auto open = [&](unsigned i) -> bool {
        Conn& c = conns[i];
        c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int r = connect(c.fd, reinterpret_cast<const sockaddr*>(&o.addr), sizeof o.addr);
        if (r != 0 && errno != EINPROGRESS) {
            close(c.fd);
            c.fd = -1;
            ++res.connectErrors;
            return false;
        }
        c.connecting = true;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.u32 = i;
        epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
        c.in.clear();
        return true;
    };
    auto shut = [&](unsigned i) {
        Conn& c = conns[i];
        if (c.fd >= 0) {
            epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
            close(c.fd);
        }
        c.fd = -1;
        c.busy = false;
        c.connecting = false;
    };
    auto sendReq = [&](unsigned i, Clock::time_point due) {
        Conn& c = conns[i];
        c.busy = true;
        c.due = due;
        c.sent = Clock::now();
        if (send(c.fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
            ++res.errors;
            shut(i);
        }
    };
    auto finished = [&](unsigned i) { return o.requests > 0 && conns[i].done >= o.requests; };
    for (unsigned i = 0; i < count; ++i) {
        conns[i].next = start + interval * (first + i) / o.connections;  // spread the first sends
        open(i);
    }
    epoll_event events[256];
    char buf[65536];
    for (;;) {
        const auto now = Clock::now();
        if (o.requests == 0 && now >= end) break;
        bool allDone = o.requests > 0;
        for (unsigned i = 0; i < count; ++i) {
            Conn& c = conns[i];
            if (!finished(i)) allDone = false;
            if (c.busy && now - c.due > std::chrono::milliseconds(o.timeoutMs)) {
                ++res.timeouts;
                ++c.done;
                shut(i);
            }
            if (c.fd < 0 && !finished(i) && (o.requests > 0 || now < end)) open(i);
            if (c.fd >= 0 && !c.connecting && !c.busy && !finished(i)) {
                if (perConnRate == 0) sendReq(i, now);
                else if (now >= c.next) {
                    sendReq(i, c.next);
                    c.next += interval;
                }
            }
        }
        if (allDone) break;
        int n = epoll_wait(ep, events, 256, 1);
        for (int k = 0; k < n; ++k) {
            const unsigned i = events[k].data.u32;
            Conn& c = conns[i];
            if (c.fd < 0) continue;
            if (c.connecting && (events[k].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err != 0) {
                    ++res.connectErrors;
                    ++c.done;
                    shut(i);
                    continue;
                }
                c.connecting = false;
                epoll_event ev{};
                ev.events = EPOLLIN;
                ev.data.u32 = i;
                epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
                continue;
            }
            if (!(events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
            ssize_t r = recv(c.fd, buf, sizeof buf, 0);
            if (r <= 0) {
                if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
                if (c.busy) {
                    ++res.errors;
                    ++c.done;
                }
                shut(i);
                continue;
            }
            c.in.append(buf, static_cast<size_t>(r));
            for (;;) {
                auto hdrEnd = c.in.find("\r\n\r\n");
                if (hdrEnd == std::string::npos) break;
                size_t bodyLen = 0;
                auto cl = c.in.find("Content-Length: ");
                if (cl != std::string::npos && cl < hdrEnd) bodyLen = std::strtoul(c.in.c_str() + cl + 16, nullptr, 10);
                if (c.in.size() < hdrEnd + 4 + bodyLen) break;
                const bool ok = c.in.compare(0, 12, "HTTP/1.1 200") == 0;
                c.in.erase(0, hdrEnd + 4 + bodyLen);
                if (!c.busy) continue;
                const auto t = Clock::now();
                c.busy = false;
                ++c.done;
                if (ok) {
                    ++res.ok;
                    res.latUs.push_back(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(t - c.due).count()));
                } else {
                    ++res.errors;
                }
                if (o.closeEach) shut(i);
            }
        }
    }
    // In flight when the run ends: a failure only when it was already overdue.
    const auto stop = Clock::now();
    const auto overdue = std::chrono::milliseconds(o.timeoutMs);
    for (unsigned i = 0; i < count; ++i) {
        Conn& c = conns[i];
        if (c.busy && c.fd >= 0) ++(stop - c.due > overdue ? res.timeouts : res.inFlight);
        // Open loop: requests that fell due but were never sent (the connection was still busy).
        for (; perConnRate > 0 && c.next <= std::min(stop, end); c.next += interval) ++(stop - c.next > overdue ? res.timeouts : res.inFlight);
    }
    for (unsigned i = 0; i < count; ++i) shut(i);
    close(ep);
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    o.addr.sin_family = AF_INET;
    bool haveHost = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "http_load: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--host") haveHost = inet_pton(AF_INET, next().c_str(), &o.addr.sin_addr) == 1;
        else if (a == "--port") o.addr.sin_port = htons(static_cast<uint16_t>(std::atoi(next().c_str())));
        else if (a == "--connections") o.connections = static_cast<unsigned>(std::max(1, std::atoi(next().c_str())));
        else if (a == "--threads") o.threads = static_cast<unsigned>(std::max(1, std::atoi(next().c_str())));
        else if (a == "--requests") o.requests = static_cast<unsigned>(std::atoi(next().c_str()));
        else if (a == "--duration") o.duration = std::atof(next().c_str());
        else if (a == "--rate") o.rate = std::atof(next().c_str());
        else if (a == "--timeout-ms") o.timeoutMs = static_cast<unsigned>(std::atoi(next().c_str()));
        else if (a == "--close") o.closeEach = true;
        else {
            std::fprintf(stderr, "usage: http_load --host IPv4 --port P --connections C (--duration S | --requests N) "
                                 "[--rate R] [--threads T] [--timeout-ms M] [--close]\n");
            return 2;
        }
    }
    if (!haveHost || (o.duration <= 0 && o.requests == 0)) {
        std::fprintf(stderr, "http_load: --host and one of --duration/--requests are required\n");
        return 2;
    }
    o.threads = std::min(o.threads, o.connections);
    const auto t0 = Clock::now();
    // Open loop: connect everything first, so that the schedule does not start with a connect storm.
    const auto warmup = o.rate > 0 ? std::chrono::milliseconds(100 + std::min(2000u, o.connections / 2)) : std::chrono::milliseconds(10);
    const auto start = t0 + warmup;
    const auto end = start + std::chrono::nanoseconds(static_cast<long>(o.duration * 1e9));
    std::vector<Result> results(o.threads);
    std::vector<std::thread> threads;
    unsigned first = 0;
    for (unsigned t = 0; t < o.threads; ++t) {
        unsigned count = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
        threads.emplace_back(run, std::cref(o), first, count, start, end, std::ref(results[t]));
        first += count;
    }
    for (auto& t : threads) t.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    Result all;
    for (auto& r : results) {
        all.ok += r.ok;
        all.errors += r.errors;
        all.timeouts += r.timeouts;
        all.connectErrors += r.connectErrors;
        all.inFlight += r.inFlight;
        all.latUs.insert(all.latUs.end(), r.latUs.begin(), r.latUs.end());
    }
    std::sort(all.latUs.begin(), all.latUs.end());
    auto pct = [&](double p) -> unsigned long {
        if (all.latUs.empty()) return 0;
        return all.latUs[std::min(all.latUs.size() - 1, static_cast<size_t>(p * static_cast<double>(all.latUs.size())))];
    };
    const unsigned long failures = all.errors + all.timeouts + all.connectErrors;
    std::printf("{\"mode\":\"%s\",\"connections\":%u,\"offered_rps\":%.0f,\"seconds\":%.3f,\"ok\":%lu,\"errors\":%lu,"
                "\"timeouts\":%lu,\"connect_errors\":%lu,\"failures\":%lu,\"rps\":%.1f,\"p50_us\":%lu,\"p95_us\":%lu,"
                "\"p99_us\":%lu,\"max_us\":%lu,\"in_flight\":%lu}\n",
                o.rate > 0 ? "open" : "closed", o.connections, o.rate, elapsed, all.ok, all.errors, all.timeouts,
                all.connectErrors, failures, static_cast<double>(all.ok) / elapsed, pct(0.50), pct(0.95), pct(0.99),
                all.latUs.empty() ? 0ul : static_cast<unsigned long>(all.latUs.back()), all.inFlight);
    return failures == 0 ? 0 : 1;
}
