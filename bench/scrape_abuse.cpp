// The scrape endpoint under abuse: clients that connect and send nothing, or send a request one
// byte a second, held open (reconnected as soon as the server drops them), while a scraper asks
// for /metrics once every 100 ms. Compares, in one run, prometheus-cpp's civetweb exposer as the
// daemon configured it (8 threads, 5 s request timeout), civetweb tuned (64 threads, 1 s),
// libmicrohttpd (Debian's 0.9.75: one epoll thread, 4096 connections, 10 s idle timeout; the
// library #33 would serve TLS and basic auth with) and rxtune's non-blocking ScrapeServer, all
// serving the same registry.
//   scrape_abuse [IDLE] [SLOW] [SCRAPES]       the comparison (defaults 1000 100 50)
//   scrape_abuse hold HOST PORT IDLE SLOW SECONDS   only the abuse, against a running daemon
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <microhttpd.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "sys/scrape_server.hpp"

using Clock = std::chrono::steady_clock;

namespace {

int connectTo(const std::string& host, int port, bool block) {
    int s = socket(AF_INET, SOCK_STREAM | (block ? 0 : SOCK_NONBLOCK), 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
        close(s);
        return -1;
    }
    return s;
}

// Holds `idle` silent and `slow` dribbling connections open until `stop`, reconnecting any the
// server closes; counts reconnections.
void hold(const std::string& host, int port, int idle, int slow, const std::atomic<bool>& stop, std::atomic<long>& reconnects) {
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: slowloris\r\n\r\n";
    struct Abuser {
        int fd = -1;
        bool slow = false;
        size_t sent = 0;
    };
    std::vector<Abuser> a(static_cast<size_t>(idle + slow));
    for (size_t i = 0; i < a.size(); ++i) {
        a[i].slow = static_cast<int>(i) >= idle;
        a[i].fd = connectTo(host, port, false);
    }
    auto lastDribble = Clock::now();
    while (!stop) {
        std::vector<pollfd> p;
        for (const auto& x : a) p.push_back({x.fd, POLLIN | POLLRDHUP, 0});
        poll(p.data(), p.size(), 100);
        const bool dribble = Clock::now() - lastDribble >= std::chrono::seconds(1);
        if (dribble) lastDribble = Clock::now();
        for (size_t i = 0; i < a.size(); ++i) {
            char buf[4096];
            bool gone = a[i].fd < 0;
            if (!gone && (p[i].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))) {
                ssize_t n = recv(a[i].fd, buf, sizeof buf, MSG_DONTWAIT);
                gone = n == 0 || (n < 0 && errno != EAGAIN);
            }
            if (!gone && a[i].slow && dribble) {
                // One byte a second, never the end of the head.
                const char c = request[a[i].sent % (request.size() - 4)];
                if (send(a[i].fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) ++a[i].sent;
            }
            if (gone) {
                if (a[i].fd >= 0) close(a[i].fd);
                a[i].fd = connectTo(host, port, false);
                a[i].sent = 0;
                ++reconnects;
            }
        }
    }
    for (auto& x : a)
        if (x.fd >= 0) close(x.fd);
}

// One scrape: seconds to the whole answer, or -1 (no 200 within `timeout`).
double scrape(const std::string& host, int port, double timeout) {
    const auto t0 = Clock::now();
    int s = connectTo(host, port, false);
    if (s < 0) return -1;
    const std::string req = "GET /metrics HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
    std::string got;
    size_t sent = 0;
    while (true) {
        const double left = timeout - std::chrono::duration<double>(Clock::now() - t0).count();
        if (left <= 0) break;
        pollfd p{s, static_cast<short>(POLLIN | (sent < req.size() ? POLLOUT : 0)), 0};
        if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
        if (sent < req.size() && (p.revents & POLLOUT)) {
            ssize_t n = send(s, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
            if (n > 0) sent += static_cast<size_t>(n);
        }
        if (p.revents & (POLLIN | POLLHUP)) {
            char buf[65536];
            ssize_t n = recv(s, buf, sizeof buf, 0);
            if (n > 0) {
                got.append(buf, static_cast<size_t>(n));
                continue;
            }
            if (n == 0) break;
        }
        if (p.revents & POLLERR) break;
    }
    close(s);
    if (!got.starts_with("HTTP/1.1 200") || got.find("rxtune_bench_series") == std::string::npos) return -1;
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A libmicrohttpd endpoint as #33 would start one: its own epoll thread, the connection limit,
// timeout and request size of rxtune's ScrapeServer (4096 connections; 10 s, which libmicrohttpd
// counts from a connection's last byte, not its first; a per-connection memory pool of 16 KiB,
// room for the 8 KiB request head ScrapeServer takes). At its limit libmicrohttpd refuses new
// connections; ScrapeServer closes its oldest unfinished one instead.
struct MhdServer {
    MHD_Daemon* daemon = nullptr;
    std::function<std::string()> render;
    static MHD_Result answer(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                             size_t*, void**) {
        auto* self = static_cast<MhdServer*>(cls);
        const bool metrics = std::strcmp(method, "GET") == 0 && std::strcmp(url, "/metrics") == 0;
        const std::string body = metrics ? self->render() : "not found\n";
        MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
        MHD_add_response_header(r, "Content-Type", metrics ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain");
        const MHD_Result q = MHD_queue_response(c, metrics ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND, r);
        MHD_destroy_response(r);
        return q;
    }
    MhdServer(int port, std::function<std::string()> f) : render(std::move(f)) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        daemon = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD, static_cast<uint16_t>(port), nullptr, nullptr, &answer, this,
                                  MHD_OPTION_SOCK_ADDR, &a, MHD_OPTION_CONNECTION_LIMIT, 4096u,
                                  MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                  static_cast<size_t>(16384), MHD_OPTION_END);
    }
    ~MhdServer() {
        if (daemon) MHD_stop_daemon(daemon);
    }
};

long rssKb() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return 0;
}

void raiseFdLimit() {
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
}

}  // namespace

int main(int argc, char** argv) {
    raiseFdLimit();
    if (argc >= 7 && std::string(argv[1]) == "hold") {
        std::atomic<bool> stop{false};
        std::atomic<long> reconnects{0};
        std::thread t([&] { hold(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]), stop, reconnects); });
        std::this_thread::sleep_for(std::chrono::seconds(std::atoi(argv[6])));
        stop = true;
        t.join();
        std::printf("%ld reconnections\n", reconnects.load());
        return 0;
    }
    const int idle = argc > 1 ? std::atoi(argv[1]) : 1000, slow = argc > 2 ? std::atoi(argv[2]) : 100;
    const int scrapes = argc > 3 ? std::atoi(argv[3]) : 50;
    auto registry = std::make_shared<prometheus::Registry>();
    auto& fam = prometheus::BuildGauge().Name("rxtune_bench_series").Help("a payload the size of a 256-CPU host's").Register(*registry);
    for (int i = 0; i < 2000; ++i) fam.Add({{"cpu", std::to_string(i % 256)}, {"n", std::to_string(i)}}).Set(i);
    std::printf("endpoint under abuse: %d idle + %d slow (1 byte/s) connections held open, %d scrapes, 1 every 100 ms, "
                "2 s timeout each (a miss counts as 2000 ms); %u CPUs\n",
                idle, slow, scrapes, std::thread::hardware_concurrency());
    std::printf("%-34s %8s %8s %8s %9s %12s %10s\n", "server", "ok", "p50 ms", "p99 ms", "max ms", "reconnects", "RSS +KiB");
    int port = 19931;
    for (const std::string kind : {"civetweb (8 threads, 5 s)", "civetweb (64 threads, 1 s)", "libmicrohttpd (epoll, 10 s)",
                                   "rxtune ScrapeServer"}) {
        ++port;
        std::unique_ptr<prometheus::Exposer> exposer;
        std::unique_ptr<rxtune::ScrapeServer> server;
        std::unique_ptr<MhdServer> mhd;
        const long rss0 = rssKb();
        const std::string listen = "127.0.0.1:" + std::to_string(port);
        if (kind.starts_with("civetweb")) {
            const bool tuned = kind.find("64") != std::string::npos;
            exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
                "listening_ports", listen, "num_threads", tuned ? "64" : "8", "request_timeout_ms", tuned ? "1000" : "5000",
                "enable_keep_alive", "no"});
            exposer->RegisterCollectable(registry);
        } else if (kind.starts_with("libmicrohttpd")) {
            mhd = std::make_unique<MhdServer>(port, [registry] { return prometheus::TextSerializer().Serialize(registry->Collect()); });
            if (!mhd->daemon) {
                std::fprintf(stderr, "libmicrohttpd did not start on port %d\n", port);
                return 1;
            }
        } else {
            rxtune::ScrapeServerOptions o;
            o.listen = listen;
            auto s = rxtune::ScrapeServer::start(o, [registry] { return prometheus::TextSerializer().Serialize(registry->Collect()); });
            if (!s) {
                std::fprintf(stderr, "%s\n", s.error().message().c_str());
                return 1;
            }
            server = std::move(*s);
        }
        std::atomic<bool> stop{false};
        std::atomic<long> reconnects{0};
        std::thread abuse([&] { hold("127.0.0.1", port, idle, slow, stop, reconnects); });
        std::this_thread::sleep_for(std::chrono::seconds(2));
        std::vector<double> t;
        int ok = 0;
        for (int i = 0; i < scrapes; ++i) {
            const double s = scrape("127.0.0.1", port, 2);
            if (s >= 0) ++ok;
            t.push_back(s >= 0 ? s : 2);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        const long rss = rssKb() - rss0;
        stop = true;
        abuse.join();
        std::sort(t.begin(), t.end());
        auto at = [&](double q) { return t[std::min(t.size() - 1, static_cast<size_t>(q * static_cast<double>(t.size())))] * 1000; };
        std::printf("%-34s %5d/%-2d %8.1f %8.1f %9.1f %12ld %10ld\n", kind.c_str(), ok, scrapes, at(0.5), at(0.99), t.back() * 1000,
                    reconnects.load(), rss);
        std::fflush(stdout);
    }
    return 0;
}
