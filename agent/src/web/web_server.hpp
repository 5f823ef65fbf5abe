// WebServer: the daemon's scrape endpoint. HTTP, TLS (GnuTLS), client certificates and basic
// auth are libmicrohttpd's, run from one thread of ours over epoll; the connections are ours to
// admit and to end. A new connection waits at our gate until its first bytes come (with TLS, its
// whole ClientHello record), so idle and dribbling clients cost libmicrohttpd and GnuTLS nothing;
// each must have its request answered within a deadline from accept (TLS handshake included), a
// kept-alive one within an idle deadline per request, and at the limit the oldest connection that
// never finished a request makes room (libmicrohttpd alone refuses the newest, the scrape, and
// times out only connections that send nothing at all).
//
// use() swaps the web configuration: every request is judged by the one in force when it comes
// (users, passwords, headers), on old connections too; a connection whose TLS rules (certificate,
// client CA, client_auth_type, allowed SANs, versions) changed is closed, at once where it is idle
// between requests, after its answer where one is under way, so that its client handshakes again
// under the new rules. A kept-alive connection also ends after its answer once it is maxAge old.
// A 401 or 429 closes its connection: refused clients cannot hold the slots.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/result.hpp"
#include "sys/stream_server.hpp"
#include "sys/unique_fd.hpp"
#include "web/auth_guard.hpp"
#include "web/web_endpoint.hpp"

namespace rxtune {

struct WebServerOptions {
    std::string listen = "0.0.0.0:9867";  // address:port; [v6]:port for IPv6
    std::size_t maxConnections = 4096;    // beyond it the oldest unfinished connection is closed
    std::chrono::milliseconds requestTimeout{10000};  // from accept to the answer sent (TLS handshake included)
    std::chrono::milliseconds idleTimeout{120000};    // a kept-alive connection's, for each next request and answer
    std::chrono::milliseconds maxAge{300000};          // a connection this old is closed after its answer
    AuthBudget auth;                                   // bcrypt's CPU time, per client address
    std::function<void(AuthResult)> onAuth;            // each request's basic-auth outcome (where users are configured)
    // Refused requests, at most one line every kWarnSeconds; `throttled`: some were refused
    // unchecked (the budget spent: abuse, a warning), else only wrong or missing credentials.
    std::function<void(const std::string&, bool throttled)> onRefusals;
    static constexpr double kWarnSeconds = 10;
};

struct Generation;

class WebServer {
public:
    // GET /metrics answers render()'s text (the exposition format); GET / a pointer to it.
    using Render = std::function<std::string()>;
    static Result<std::unique_ptr<WebServer>> start(const WebServerOptions& opts, std::shared_ptr<const WebEndpoint> endpoint,
                                                    Render render);
    ~WebServer();  // stops the thread and closes every connection
    WebServer(const WebServer&) = delete;
    WebServer& operator=(const WebServer&) = delete;

    // From any thread: new connections are served with `endpoint`. On an error (libmicrohttpd or
    // GnuTLS refused it) nothing changes.
    Result<void> use(std::shared_ptr<const WebEndpoint> endpoint);

    unsigned short port() const { return port_; }  // the bound port (useful with port 0)

private:
    WebServer(UniqueFd listener, Waker wake, Poller poller, unsigned short port, WebServerOptions opts, Render render);
    Result<std::unique_ptr<Generation>> generation(std::shared_ptr<const WebEndpoint> endpoint);
    void loop();

    UniqueFd listener_;
    Waker wake_;
    Poller poller_;  // the thread's epoll set
    unsigned short port_;
    WebServerOptions opts_;
    Render render_;
    std::mutex mu_;
    std::vector<std::unique_ptr<Generation>> pending_;  // from use(), for the thread to take
    bool stopping_ = false;
    std::thread thread_;
};


}  // namespace rxtune
