// Basic auth's cost as a client sees it, and as the endpoint pays it (#44):
//   1. Timing: a known user with a wrong password beside an unknown user, interleaved, over HTTP
//      to today's WebServer (each request on a new connection, the bcrypt budget lifted so that
//      every request is checked), for hashes of cost 10 and 12. Equal times say nothing about
//      which users exist.
//   2. The bound: wrong guesses from three addresses as fast as answered, for SECONDS, against the
//      default budget, and beside it (the peer, same run) against a budget of no bcrypt at all:
//      the server's CPU (this process's; the clients run in a child) per second of flood, what
//      the guessers got (401: checked, 429: refused unchecked), and the longest check of a
//      trusted address (the scraper's, once a second) meanwhile.
//   auth_timing [ROUNDS] [PER_ROUND] [SECONDS]   (defaults 7 20 10)
#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "web/basic_auth.hpp"
#include "web/web_endpoint.hpp"
#include "web/web_server.hpp"

using Clock = std::chrono::steady_clock;

namespace {

std::string bcrypt(const std::string& password, int cost) {
    char setting[CRYPT_GENSALT_OUTPUT_SIZE];
    crypt_data data{};
    crypt_gensalt_rn("$2y$", cost, nullptr, 0, setting, sizeof setting);
    return crypt_r(password.c_str(), setting, &data);
}

// One request on a new connection from `source`; the status code (0: none).
int ask(const char* source, unsigned short port, const std::string& credentials) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from{}, to{};
    from.sin_family = to.sin_family = AF_INET;
    inet_pton(AF_INET, source, &from.sin_addr);
    to.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    int code = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0 && connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
        const auto colon = credentials.find(':');
        const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: " +
                                rxtune::basicAuthHeader(credentials.substr(0, colon), credentials.substr(colon + 1)) + "\r\n\r\n";
        if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
            char buf[256];
            const ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
            if (n > 12) code = std::atoi(buf + 9);
        }
    }
    close(fd);
    return code;
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double cpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::unique_ptr<rxtune::WebServer> serve(const std::string& hash, rxtune::AuthBudget budget) {
    rxtune::WebConfig cfg;
    cfg.basicAuthUsers = {{"prometheus", hash}};
    auto ep = rxtune::prepareWebEndpoint(cfg);
    rxtune::WebServerOptions o;
    o.listen = "127.0.0.1:0";
    o.auth = budget;
    auto s = rxtune::WebServer::start(o, *ep, [] { return std::string("x 1\n"); });
    if (!s) {
        std::fprintf(stderr, "cannot serve: %s\n", s.error().message().c_str());
        std::exit(1);
    }
    return std::move(*s);
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 7, perRound = argc > 2 ? std::atoi(argv[2]) : 20;
    const int seconds = argc > 3 ? std::atoi(argv[3]) : 10;
    std::printf("basic auth timing: %d interleaved rounds of %d requests per kind, each on a new connection; %u CPUs\n", rounds, perRound,
                std::thread::hardware_concurrency());
    std::printf("%-5s %-22s %9s %9s %9s\n", "cost", "request", "p10 ms", "p50 ms", "p90 ms");
    rxtune::AuthBudget unlimited;
    unlimited.trustedCpu = unlimited.otherCpu = unlimited.newcomerCpu = 1000;
    for (const int cost : {10, 12}) {
        auto server = serve(bcrypt("s3cret", cost), unlimited);
        std::vector<double> known, unknown, right;
        for (int r = 0; r < rounds; ++r)
            for (int k = 0; k < 2; ++k)  // known first in even rounds, unknown first in odd ones
                for (int i = 0; i < perRound; ++i) {
                    const bool askKnown = (k == 0) == (r % 2 == 0);
                    const auto t0 = Clock::now();
                    const int code = ask("127.0.0.2", server->port(), askKnown ? "prometheus:guess" + std::to_string(i) : "nobody:guess");
                    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
                    if (code != 401) std::fprintf(stderr, "unexpected %d\n", code);
                    (askKnown ? known : unknown).push_back(ms);
                }
        for (const auto& [name, v] : {std::pair<const char*, const std::vector<double>&>{"known user, wrong pw", known}, {"unknown user", unknown}})
            std::printf("%-5d %-22s %9.1f %9.1f %9.1f\n", cost, name, percentile(v, 0.1), percentile(v, 0.5), percentile(v, 0.9));
    }

    std::printf("\nflood against the default budget: 3 addresses x 8 connections guessing for %d s\n", seconds);
    std::printf("%-5s %-9s %10s %10s %10s %10s %14s %16s\n", "cost", "budget", "guesses/s", "401", "429", "checks/s", "server CPU %",
                "trusted max (s)");
    rxtune::AuthBudget none;
    none.trustedCpu = none.otherCpu = none.newcomerCpu = 1e-9;
    for (const auto& [cost, budget, name] : {std::tuple{10, rxtune::AuthBudget{}, "default"}, std::tuple{10, none, "none"},
                                             std::tuple{12, rxtune::AuthBudget{}, "default"}}) {
        auto server = serve(bcrypt("s3cret", cost), budget);
        const unsigned short port = server->port();
        // The scraper authenticated once before the flood (as Prometheus has): its address is trusted.
        ask("127.0.0.2", port, "prometheus:s3cret");
        int pipefd[2];
        if (pipe(pipefd) != 0) return 1;
        const double cpu0 = cpuSeconds();
        const auto t0 = Clock::now();
        const pid_t child = fork();
        if (child == 0) {
            std::atomic<bool> stop{false};
            std::atomic<long> counts[3] = {0, 0, 0};
            std::vector<std::thread> t;
            for (const char* src : {"127.0.0.3", "127.0.0.4", "127.0.0.5"})
                for (int i = 0; i < 8; ++i)
                    t.emplace_back([&, src] {
                        for (long n = 0; !stop; ++n) {
                            const int code = ask(src, port, "prometheus:guess" + std::to_string(n));
                            ++counts[code == 401 ? 0 : code == 429 ? 1 : 2];
                        }
                    });
            std::this_thread::sleep_for(std::chrono::seconds(seconds));
            stop = true;
            for (auto& x : t) x.join();
            long out[3] = {counts[0], counts[1], counts[2]};
            if (write(pipefd[1], out, sizeof out) < 0) _exit(1);
            _exit(0);
        }
        // Meanwhile the scraper's password changes nothing here (remembered), so it asks as a
        // newcomer would: a wrong password from its trusted address, every second, timed.
        std::vector<double> scrape;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        while (Clock::now() - t0 < std::chrono::seconds(seconds - 1)) {
            const auto s0 = Clock::now();
            ask("127.0.0.2", port, "prometheus:not-remembered");
            scrape.push_back(std::chrono::duration<double>(Clock::now() - s0).count());
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
        long got[3] = {0, 0, 0};
        if (read(pipefd[0], got, sizeof got) < 0) return 1;
        waitpid(child, nullptr, 0);
        const double wall = std::chrono::duration<double>(Clock::now() - t0).count(), cpu = cpuSeconds() - cpu0;
        std::printf("%-5d %-9s %10.0f %10ld %10ld %10.1f %14.1f %16.3f\n", cost, name, static_cast<double>(got[0] + got[1] + got[2]) / wall,
                    got[0], got[1], static_cast<double>(got[0]) / wall, 100 * cpu / wall, *std::max_element(scrape.begin(), scrape.end()));
        close(pipefd[0]);
        close(pipefd[1]);
    }
    return 0;
}
