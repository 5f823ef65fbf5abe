#include "previous/scrape_server.hpp"
#include "web/web_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <list>
#include <map>

namespace rxtune {

namespace {

using Clock = std::chrono::steady_clock;

struct Conn {
    UniqueFd fd;
    Clock::time_point deadline;
    std::string in, out;
    std::size_t sent = 0;
    bool writing = false;
    std::list<int>::iterator age;  // its place in accept order (oldest first)
};

std::string response(int code, const char* reason, const std::string& type, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

RequestHead parseRequestHead(const std::string& head) {
    RequestHead r;
    const auto eol = head.find("\r\n");
    const std::string line = head.substr(0, eol);
    const auto a = line.find(' ');
    const auto b = a == std::string::npos ? std::string::npos : line.find(' ', a + 1);
    if (a == std::string::npos || b == std::string::npos || !line.substr(b + 1).starts_with("HTTP/1.")) return r;
    r.method = line.substr(0, a);
    r.path = line.substr(a + 1, b - a - 1);
    if (auto q = r.path.find('?'); q != std::string::npos) r.path.resize(q);
    return r;
}

Result<std::unique_ptr<ScrapeServer>> ScrapeServer::start(const ScrapeServerOptions& opts, Render render) {
    unsigned short port = 0;
    auto listener = listenTcp(opts.listen, port);  // today's server's, the same socket
    if (!listener) return failWith(listener.error());
    UniqueFd s = std::move(*listener);
    UniqueFd stop(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (stop.get() < 0) return fail(errno, "eventfd", "scrape server");
    std::unique_ptr<ScrapeServer> srv(new ScrapeServer(std::move(s), std::move(stop), port, opts, std::move(render)));
    srv->thread_ = std::thread([p = srv.get()] { p->loop(); });
    return srv;
}

ScrapeServer::ScrapeServer(UniqueFd listener, UniqueFd stop, unsigned short port, ScrapeServerOptions opts, Render render)
    : listener_(std::move(listener)), stop_(std::move(stop)), port_(port), opts_(std::move(opts)), render_(std::move(render)) {}

ScrapeServer::~ScrapeServer() {
    const std::uint64_t v = 1;
    if (::write(stop_.get(), &v, sizeof v) < 0) {
        // The eventfd cannot be full after one write: nothing to do but join.
    }
    if (thread_.joinable()) thread_.join();
}

namespace {

// The connections one loop serves, each a small state machine: read the request head until its
// blank line (or the size limit), answer, send what the socket takes, close; all within one
// deadline. Accept order is deadline order (one timeout for all).
class Connections {
public:
    Connections(int ep, const ScrapeServerOptions& opts, const ScrapeServer::Render& render)
        : ep_(ep), opts_(opts), render_(render) {}

    void watch(int fd, std::uint32_t events) {
        epoll_event ev{};
        ev.events = events;
        ev.data.fd = fd;
        ::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
    }

    // Until the oldest connection's deadline, or a second.
    int timeoutMs() const {
        if (order_.empty()) return 1000;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(conns_.at(order_.front()).deadline - Clock::now());
        return static_cast<int>(std::clamp<long long>(left.count() + 1, 0, 1000));
    }

    void acceptAll(int listener) {
        while (true) {
            int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if ((errno == EMFILE || errno == ENFILE) && !order_.empty()) {
                    drop(order_.front());  // out of descriptors: the oldest connection makes room
                    continue;
                }
                return;  // EAGAIN, or nothing to free
            }
            if (conns_.size() >= opts_.maxConnections) drop(order_.front());
            order_.push_back(fd);
            Conn& c = conns_[fd];
            c.fd = UniqueFd(fd);
            c.deadline = Clock::now() + opts_.requestTimeout;
            c.age = std::prev(order_.end());
            watch(fd, EPOLLIN | EPOLLRDHUP);
        }
    }

    // A connection's event: more of its request, or room to send more of its answer.
    void onEvent(int fd, std::uint32_t ev) {
        auto it = conns_.find(fd);
        if (it == conns_.end()) return;
        Conn& c = it->second;
        if (c.writing) {
            if (!flush(c)) drop(fd);
            return;
        }
        const bool closed = readRequest(c);
        if (c.in.find("\r\n\r\n") != std::string::npos) {
            answer(c);
            if (!flush(c)) drop(fd);
        } else if (c.in.size() > opts_.maxRequestBytes) {
            c.out = response(431, "Request Header Fields Too Large", "text/plain", "request too large\n");
            if (!flush(c)) drop(fd);
        } else if (closed || (ev & (EPOLLHUP | EPOLLERR))) {
            drop(fd);
        }
    }

    // Whatever has not finished by its deadline goes, oldest first.
    void expire() {
        const auto now = Clock::now();
        while (!order_.empty() && conns_.at(order_.front()).deadline <= now) drop(order_.front());
    }

private:
    void drop(int fd) {
        auto it = conns_.find(fd);
        if (it == conns_.end()) return;
        order_.erase(it->second.age);
        conns_.erase(it);  // UniqueFd closes; epoll forgets a closed fd
    }

    // Reads what the socket has, up to the head's end or the size limit; true when the client
    // closed or the connection broke.
    bool readRequest(Conn& c) const {
        char buf[4096];
        while (true) {
            ssize_t r = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
            if (r > 0) {
                c.in.append(buf, static_cast<std::size_t>(r));
                if (c.in.find("\r\n\r\n") != std::string::npos || c.in.size() > opts_.maxRequestBytes) return false;
                continue;
            }
            return !(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
        }
    }

    void answer(Conn& c) const {
        const RequestHead h = parseRequestHead(c.in);
        if (h.method.empty()) c.out = response(400, "Bad Request", "text/plain", "bad request\n");
        else if (h.method != "GET") c.out = response(405, "Method Not Allowed", "text/plain", "GET only\n");
        else if (h.path == "/metrics") c.out = response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", render_());
        else if (h.path == "/") c.out = response(200, "OK", "text/html", "<a href=\"/metrics\">/metrics</a>\n");
        else c.out = response(404, "Not Found", "text/plain", "not found\n");
        c.in.clear();
        c.in.shrink_to_fit();
    }

    // Sends what is left; false when the connection is done (sent or broken).
    bool flush(Conn& c) const {
        while (c.sent < c.out.size()) {
            ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                c.sent += static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (!c.writing) {
                    c.writing = true;
                    epoll_event ev{};
                    ev.events = EPOLLOUT;
                    ev.data.fd = c.fd.get();
                    ::epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd.get(), &ev);
                }
                return true;
            }
            return false;
        }
        ::shutdown(c.fd.get(), SHUT_WR);
        return false;
    }

    int ep_;
    const ScrapeServerOptions& opts_;
    const ScrapeServer::Render& render_;
    std::map<int, Conn> conns_;
    std::list<int> order_;  // accept order = deadline order
};

}  // namespace

void ScrapeServer::loop() {
    UniqueFd ep(::epoll_create1(EPOLL_CLOEXEC));
    Connections conns(ep.get(), opts_, render_);
    conns.watch(listener_.get(), EPOLLIN);
    conns.watch(stop_.get(), EPOLLIN);
    std::array<epoll_event, 64> events{};
    while (true) {
        int n = ::epoll_wait(ep.get(), events.data(), static_cast<int>(events.size()), conns.timeoutMs());
        if (n < 0 && errno != EINTR) return;
        for (int i = 0; i < n; ++i) {
            const epoll_event& e = events[static_cast<std::size_t>(i)];
            if (e.data.fd == stop_.get()) return;
            if (e.data.fd == listener_.get()) conns.acceptAll(listener_.get());
            else conns.onEvent(e.data.fd, e.events);
        }
        conns.expire();
    }
}

}  // namespace rxtune
