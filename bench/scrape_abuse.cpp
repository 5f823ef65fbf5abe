// The scrape endpoint under abuse: clients that connect and send nothing, or send a request one
// byte a second, held open (reconnected as soon as the server drops them), while a scraper asks
// for /metrics once every 100 ms, each on a new connection. Compares, in one run, prometheus-cpp's
// civetweb exposer as the daemon first configured it (8 threads, 5 s request timeout), civetweb
// tuned (64 threads, 1 s), libmicrohttpd alone (Debian's 0.9.75: one epoll thread, 4096
// connections, 10 s idle timeout), the daemon's server before #33 (bench/previous: hand-written
// HTTP) and today's (web/web_server: libmicrohttpd under rxtune's admission and deadlines) plain,
// with TLS, and with TLS and basic auth; all serve the same registry. The clients run in a child
// process, so the server's CPU time (this process's, over the row) is the endpoint's own.
//   scrape_abuse [IDLE] [SLOW] [SCRAPES] [ROWS]  the comparison (defaults 1000 100 50; 0 0 N: no abuse;
//                                                ROWS: the servers whose names start with one of
//                                                these comma-separated words, default all)
//   scrape_abuse hold HOST PORT IDLE SLOW SECONDS [tls] [once]   only the abuse, against a running
//                                                daemon (once: what the server closes stays closed)
//   scrape_abuse guess HOST PORT SOURCES CONNS SECONDS USER:PASSWORD   password guessing against a
//                                                (for SECONDS, or until SIGTERM)
//                                                running daemon (plain HTTP): CONNS connections from each
//                                                of the comma-separated SOURCES addresses, each sending
//                                                requests with USER:PASSWORD<n> as fast as answered;
//                                                prints the guesses, their rate and the answers' codes
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <crypt.h>
#include <gnutls/gnutls.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

#include "previous/scrape_server.hpp"
#include "web/basic_auth.hpp"
#include "web/web_config.hpp"
#include "web/web_endpoint.hpp"
#include "web/web_server.hpp"

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

// A connection that has sent a real ClientHello (GnuTLS's) and will send nothing more: the
// server's handshake waits for the rest.
int stalledHandshake(const std::string& host, int port) {
    static gnutls_certificate_credentials_t cred = [] {
        gnutls_certificate_credentials_t c = nullptr;
        gnutls_certificate_allocate_credentials(&c);
        return c;
    }();
    int s = connectTo(host, port, true);
    if (s < 0) return -1;
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
    gnutls_session_t ses = nullptr;
    gnutls_init(&ses, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
    gnutls_set_default_priority(ses);
    gnutls_credentials_set(ses, GNUTLS_CRD_CERTIFICATE, cred);
    gnutls_transport_set_int(ses, s);
    gnutls_handshake(ses);  // sends the ClientHello; the server's answer is never read
    gnutls_deinit(ses);
    return s;
}

// Holds `idle` silent and `slow` dribbling connections open until `stop`, reconnecting any the
// server closes; counts reconnections. With `tls`, half the slow ones send a TLS record (a
// ClientHello's header and body) a byte a second, the other half a whole ClientHello and then
// nothing.
void hold(const std::string& host, int port, int idle, int slow, bool tls, const std::atomic<bool>& stop, std::atomic<long>& reconnects,
          bool reconnect = true) {
    const std::string request = tls ? std::string("\x16\x03\x01\x02\x00", 5) + std::string(512, 'A')
                                    : "GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: slowloris\r\n\r\n";
    struct Abuser {
        int fd = -1;
        bool slow = false, stalled = false;
        size_t sent = 0;
    };
    std::vector<Abuser> a(static_cast<size_t>(idle + slow));
    auto open = [&](Abuser& x) { x.fd = x.stalled ? stalledHandshake(host, port) : connectTo(host, port, false); };
    for (size_t i = 0; i < a.size(); ++i) {
        a[i].slow = static_cast<int>(i) >= idle;
        a[i].stalled = tls && a[i].slow && i % 2 == 1;
        open(a[i]);
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
            if (!gone && a[i].slow && !a[i].stalled && dribble) {
                // One byte a second, never the end of the head.
                const char c = request[a[i].sent % (request.size() - 4)];
                if (send(a[i].fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) ++a[i].sent;
            }
            if (gone && a[i].fd >= 0) {
                close(a[i].fd);
                a[i].fd = -1;
            }
            if (gone && reconnect) {
                open(a[i]);
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

double cpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A self-signed certificate for the TLS rows, made by openssl in a temporary directory.
struct TlsFiles {
    std::string dir, cert, key, web, webAuth;
    TlsFiles() {
        char tmpl[] = "/tmp/scrape-abuse-XXXXXX";
        dir = mkdtemp(tmpl);
        cert = dir + "/c.pem";
        key = dir + "/k.pem";
        const std::string gen = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 "
                                "-keyout " + key + " -out " + cert + " >/dev/null 2>&1";
        if (std::system(gen.c_str()) != 0) std::fprintf(stderr, "openssl failed\n");
        char salt[CRYPT_GENSALT_OUTPUT_SIZE];
        crypt_data data{};
        crypt_gensalt_rn("$2y$", 10, nullptr, 0, salt, sizeof salt);
        web = dir + "/web.yml";
        webAuth = dir + "/web-auth.yml";
        const std::string tls = "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n";
        std::ofstream(web) << tls;
        std::ofstream(webAuth) << tls << "basic_auth_users:\n  prometheus: " << crypt_r("bench", salt, &data) << "\n";
    }
    ~TlsFiles() { std::filesystem::remove_all(dir); }
};

// One scrape over TLS on a new connection (handshake included), with basic auth when `auth`.
double scrapeTls(const std::string& host, int port, double timeout, bool auth) {
    static gnutls_certificate_credentials_t cred = [] {
        gnutls_certificate_credentials_t c = nullptr;
        gnutls_certificate_allocate_credentials(&c);
        return c;
    }();
    const auto t0 = Clock::now();
    int s = connectTo(host, port, true);
    if (s < 0) return -1;
    timeval tv{static_cast<time_t>(timeout), 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;  // the Finished and the request are two writes: neither may wait for a delayed ACK
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    gnutls_session_t ses = nullptr;
    gnutls_init(&ses, GNUTLS_CLIENT);
    gnutls_set_default_priority(ses);
    gnutls_credentials_set(ses, GNUTLS_CRD_CERTIFICATE, cred);
    gnutls_transport_set_int(ses, s);
    gnutls_handshake_set_timeout(ses, static_cast<unsigned>(timeout * 1000));
    int rc;
    do rc = gnutls_handshake(ses);
    while (rc < 0 && !gnutls_error_is_fatal(rc));
    std::string got;
    if (rc == 0) {
        const std::string req = "GET /metrics HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n" +
                                (auth ? "Authorization: Basic cHJvbWV0aGV1czpiZW5jaA==\r\n" : "") + "\r\n";
        gnutls_record_send(ses, req.data(), req.size());
        char buf[65536];
        while (std::chrono::duration<double>(Clock::now() - t0).count() < timeout) {
            const ssize_t n = gnutls_record_recv(ses, buf, sizeof buf);
            if (n > 0) got.append(buf, static_cast<size_t>(n));
            else if (n == 0 || gnutls_error_is_fatal(static_cast<int>(n))) break;
        }
    }
    gnutls_deinit(ses);
    close(s);
    if (!got.starts_with("HTTP/1.1 200") || got.find("rxtune_bench_series") == std::string::npos) return -1;
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct RowResult {
    int ok = 0;
    long reconnects = 0;
    std::vector<double> times;
};

// The clients of one row, in a child process: the abuse, then the scrapes once the abuse is in
// place; the results come back through a pipe.
RowResult clients(int port, int idle, int slow, int scrapes, int tls) {
    int p[2];
    if (pipe(p) != 0) return {};
    const pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        std::atomic<bool> stop{false};
        std::atomic<long> reconnects{0};
        std::thread abuse([&] { hold("127.0.0.1", port, idle, slow, tls != 0, stop, reconnects); });
        if (idle + slow > 0) std::this_thread::sleep_for(std::chrono::seconds(2));
        std::vector<double> t;
        for (int i = 0; i < scrapes; ++i) {
            const double s = tls ? scrapeTls("127.0.0.1", port, 2, tls == 2) : scrape("127.0.0.1", port, 2);
            t.push_back(s);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        stop = true;
        abuse.join();
        const long r = reconnects.load();
        if (write(p[1], &r, sizeof r) < 0 || write(p[1], t.data(), t.size() * sizeof(double)) < 0) _exit(1);
        _exit(0);
    }
    close(p[1]);
    RowResult out;
    std::string bytes;
    char buf[4096];
    for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) bytes.append(buf, static_cast<size_t>(n));
    close(p[0]);
    waitpid(pid, nullptr, 0);
    if (bytes.size() < sizeof(long)) return out;
    std::memcpy(&out.reconnects, bytes.data(), sizeof(long));
    for (size_t at = sizeof(long); at + sizeof(double) <= bytes.size(); at += sizeof(double)) {
        double v;
        std::memcpy(&v, bytes.data() + at, sizeof v);
        if (v >= 0) ++out.ok;
        out.times.push_back(v >= 0 ? v : 2);
    }
    return out;
}

// Wrong passwords, each request on a connection of its own from `source` (the server closes after
// a 401 or 429; a kept connection is used again), until `stop`; counts the answers by code.
void guess(const std::string& host, int port, const std::string& source, const std::string& credentials, const std::atomic<bool>& stop,
           std::atomic<long>& sent, std::atomic<long>* codes) {
    int fd = -1;
    for (long n = 0; !stop; ++n) {
        if (fd < 0) {
            fd = socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in from{}, to{};
            from.sin_family = to.sin_family = AF_INET;
            inet_pton(AF_INET, source.c_str(), &from.sin_addr);
            to.sin_port = htons(static_cast<uint16_t>(port));
            inet_pton(AF_INET, host.c_str(), &to.sin_addr);
            timeval tv{2, 0};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
                connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
                close(fd);
                fd = -1;
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
                continue;
            }
        }
        const auto colon = credentials.find(':');
        const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: " +
                                rxtune::basicAuthHeader(credentials.substr(0, colon), credentials.substr(colon + 1) + std::to_string(n)) + "\r\n\r\n";
        if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
            close(fd);
            fd = -1;
            continue;
        }
        ++sent;
        // The status line, then the head and body up to the server's close or Content-Length.
        std::string got;
        char buf[4096];
        bool closed = false;
        size_t bodyAt = std::string::npos, length = 0;
        while (true) {
            const ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r <= 0) {
                closed = true;
                break;
            }
            got.append(buf, static_cast<size_t>(r));
            if (bodyAt == std::string::npos && (bodyAt = got.find("\r\n\r\n")) != std::string::npos) {
                bodyAt += 4;
                const auto cl = got.find("Content-Length: ");
                length = cl == std::string::npos ? 0 : std::strtoul(got.c_str() + cl + 16, nullptr, 10);
            }
            if (bodyAt != std::string::npos && got.size() >= bodyAt + length) break;
        }
        const int code = got.size() > 12 ? std::atoi(got.c_str() + 9) : 0;
        ++codes[code == 401 ? 0 : code == 429 ? 1 : 2];
        if (closed || got.find("Connection: close") != std::string::npos) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0) close(fd);
}

}  // namespace

int main(int argc, char** argv) {
    raiseFdLimit();
    if (argc >= 8 && std::string(argv[1]) == "guess") {
        // SIGTERM blocked before any thread exists, so that sigtimedwait below takes it.
        sigset_t term;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &term, nullptr);
        std::atomic<bool> stop{false};
        std::atomic<long> sent{0}, codes[3] = {0, 0, 0};
        std::vector<std::thread> threads;
        std::string sources = argv[4];
        const auto start = Clock::now();
        for (size_t at = 0; at <= sources.size();) {
            const size_t comma = std::min(sources.find(',', at), sources.size());
            const std::string source = sources.substr(at, comma - at);
            for (int i = 0; i < std::atoi(argv[5]); ++i)
                threads.emplace_back([&, source] { guess(argv[2], std::atoi(argv[3]), source, argv[7], stop, sent, codes); });
            at = comma + 1;
        }
        // SECONDS at most: SIGTERM ends it sooner (a test that is done with the flood), the report
        // printed all the same.
        const timespec limit{std::atoi(argv[6]), 0};
        sigtimedwait(&term, nullptr, &limit);
        stop = true;
        for (auto& t : threads) t.join();
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf("guesses %ld rate %.0f/s 401 %ld 429 %ld other %ld\n", sent.load(), static_cast<double>(sent.load()) / secs,
                    codes[0].load(), codes[1].load(), codes[2].load());
        return 0;
    }
    if (argc >= 7 && std::string(argv[1]) == "hold") {
        std::atomic<bool> stop{false};
        std::atomic<long> reconnects{0};
        bool tls = false, once = false;
        for (int i = 7; i < argc; ++i) {
            tls = tls || std::string(argv[i]) == "tls";
            once = once || std::string(argv[i]) == "once";
        }
        std::thread t([&] { hold(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]), tls, stop, reconnects, !once); });
        std::this_thread::sleep_for(std::chrono::seconds(std::atoi(argv[6])));
        stop = true;
        t.join();
        std::printf("%ld reconnections\n", reconnects.load());
        return 0;
    }
    const int idle = argc > 1 ? std::atoi(argv[1]) : 1000, slow = argc > 2 ? std::atoi(argv[2]) : 100;
    const int scrapes = argc > 3 ? std::atoi(argv[3]) : 50;
    const std::string rows = argc > 4 ? std::string(",") + argv[4] + "," : "";
    auto registry = std::make_shared<prometheus::Registry>();
    auto& fam = prometheus::BuildGauge().Name("rxtune_bench_series").Help("a payload the size of a 256-CPU host's").Register(*registry);
    for (int i = 0; i < 2000; ++i) fam.Add({{"cpu", std::to_string(i % 256)}, {"n", std::to_string(i)}}).Set(i);
    auto render = [registry] { return prometheus::TextSerializer().Serialize(registry->Collect()); };
    const TlsFiles files;
    std::printf("endpoint under abuse: %d idle + %d slow (1 byte/s; on TLS rows half of them a ClientHello record a byte a second, "
                "half a whole ClientHello, then nothing) connections held open, %d scrapes, 1 every 100 ms on a new "
                "connection, 2 s timeout each (a miss counts as 2000 ms); %u CPUs\n",
                idle, slow, scrapes, std::thread::hardware_concurrency());
    std::printf("%-34s %8s %8s %8s %9s %12s %10s %11s\n", "server", "ok", "p50 ms", "p99 ms", "max ms", "reconnects", "RSS +KiB",
                "CPU ms/scr");
    // Fresh ports for each run (civetweb does not bind over the last run's TIME_WAIT), below the
    // ephemeral range, where the abusers' own ports are.
    int port = 20000 + static_cast<int>(getpid() % 1500) * 8;
    for (const std::string kind : {"civetweb (8 threads, 5 s)", "civetweb (64 threads, 1 s)", "libmicrohttpd (epoll, 10 s)",
                                   "previous ScrapeServer (plain)", "WebServer (plain)", "WebServer (TLS)", "WebServer (TLS + basic auth)"}) {
        ++port;
        if (!rows.empty() && rows.find("," + kind.substr(0, kind.find_first_of(" ")) + ",") == std::string::npos) continue;
        std::unique_ptr<prometheus::Exposer> exposer;
        std::unique_ptr<rxtune::ScrapeServer> previous;
        std::unique_ptr<rxtune::WebServer> web;
        std::unique_ptr<MhdServer> mhd;
        const long rss0 = rssKb();
        const std::string listen = "127.0.0.1:" + std::to_string(port);
        int tls = 0;
        if (kind.starts_with("civetweb")) {
            const bool tuned = kind.find("64") != std::string::npos;
            exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
                "listening_ports", listen, "num_threads", tuned ? "64" : "8", "request_timeout_ms", tuned ? "1000" : "5000",
                "enable_keep_alive", "no"});
            exposer->RegisterCollectable(registry);
        } else if (kind.starts_with("libmicrohttpd")) {
            mhd = std::make_unique<MhdServer>(port, render);
            if (!mhd->daemon) {
                std::fprintf(stderr, "libmicrohttpd did not start on port %d\n", port);
                return 1;
            }
        } else if (kind.starts_with("previous")) {
            rxtune::ScrapeServerOptions o;
            o.listen = listen;
            auto s = rxtune::ScrapeServer::start(o, render);
            if (!s) {
                std::fprintf(stderr, "%s\n", s.error().message().c_str());
                return 1;
            }
            previous = std::move(*s);
        } else {
            tls = kind.find("TLS") == std::string::npos ? 0 : kind.find("auth") == std::string::npos ? 1 : 2;
            std::shared_ptr<const rxtune::WebEndpoint> ep = rxtune::plainWebEndpoint();
            if (tls) {
                auto cfg = rxtune::loadWebConfig(tls == 2 ? files.webAuth : files.web);
                auto prepared = cfg ? rxtune::prepareWebEndpoint(*cfg) : tl::unexpected<rxtune::Error>(cfg.error());
                if (!prepared) {
                    std::fprintf(stderr, "%s\n", prepared.error().message().c_str());
                    return 1;
                }
                ep = *prepared;
            }
            rxtune::WebServerOptions o;
            o.listen = listen;
            auto s = rxtune::WebServer::start(o, ep, render);
            if (!s) {
                std::fprintf(stderr, "%s\n", s.error().message().c_str());
                return 1;
            }
            web = std::move(*s);
        }
        const double cpu0 = cpuSeconds();
        RowResult r = clients(port, idle, slow, scrapes, tls);
        const double cpu = cpuSeconds() - cpu0;
        const long rss = rssKb() - rss0;
        if (r.times.empty()) {
            std::printf("%-34s no result\n", kind.c_str());
            continue;
        }
        std::vector<double>& t = r.times;
        std::sort(t.begin(), t.end());
        auto at = [&](double q) { return t[std::min(t.size() - 1, static_cast<size_t>(q * static_cast<double>(t.size())))] * 1000; };
        std::printf("%-34s %5d/%-2d %8.1f %8.1f %9.1f %12ld %10ld %11.2f\n", kind.c_str(), r.ok, scrapes, at(0.5), at(0.99),
                    t.back() * 1000, r.reconnects, rss, cpu * 1000 / scrapes);
        std::fflush(stdout);
    }
    return 0;
}
