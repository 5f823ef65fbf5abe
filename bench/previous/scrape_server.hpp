// The daemon's scrape endpoint before #33 (hand-written HTTP, no TLS), kept here as the abuse
// bench's peer: the server that replaced it (agent/src/web/web_server) is measured against it.
// ScrapeServer: the Prometheus scrape endpoint, served by one thread over epoll. Every connection
// is a small state machine with a deadline, so clients that connect and send nothing, or send a
// byte a second, cost a few hundred bytes each and never hold up a scrape (a thread-per-request
// server is held by as many such sockets as it has threads).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/result.hpp"
#include "sys/unique_fd.hpp"

namespace rxtune {

struct ScrapeServerOptions {
    std::string listen = "0.0.0.0:9867";  // address:port; [v6]:port for IPv6
    std::size_t maxConnections = 4096;    // beyond it the oldest unfinished connection is closed
    std::chrono::milliseconds requestTimeout{10000};  // to send a whole request and take the answer
    std::size_t maxRequestBytes = 8192;   // request line and headers
};

class ScrapeServer {
public:
    // GET /metrics answers render()'s text (the exposition format); GET / a pointer to it.
    using Render = std::function<std::string()>;
    static Result<std::unique_ptr<ScrapeServer>> start(const ScrapeServerOptions& opts, Render render);
    ~ScrapeServer();  // stops the thread and closes every connection
    ScrapeServer(const ScrapeServer&) = delete;
    ScrapeServer& operator=(const ScrapeServer&) = delete;

    unsigned short port() const { return port_; }  // the bound port (useful with port 0)

private:
    ScrapeServer(UniqueFd listener, UniqueFd stop, unsigned short port, ScrapeServerOptions opts, Render render);
    void loop();

    UniqueFd listener_, stop_;
    unsigned short port_;
    ScrapeServerOptions opts_;
    Render render_;
    std::thread thread_;
};

// The parts of an HTTP request head the endpoint needs; "" method when the head is malformed.
struct RequestHead {
    std::string method, path;
};
RequestHead parseRequestHead(const std::string& head);

}  // namespace rxtune
