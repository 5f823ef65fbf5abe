#include "sys/stream_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>

namespace rxtune {

namespace {

Result<PeerAddress> parseListen(const std::string& listen) {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) return fail(EINVAL, "listen", listen, "expected address:port");
    std::string host = listen.substr(0, colon);
    const std::string portText = listen.substr(colon + 1);
    unsigned port = 0;
    auto [p, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
    if (ec != std::errc() || p != portText.data() + portText.size() || port > 65535)
        return fail(EINVAL, "listen", listen, "bad port");
    PeerAddress out;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        auto* a = reinterpret_cast<sockaddr_in6*>(&out.addr);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(static_cast<std::uint16_t>(port));
        if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a->sin6_addr) != 1)
            return fail(EINVAL, "listen", listen, "bad IPv6 address");
        out.len = sizeof(sockaddr_in6);
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&out.addr);
        a->sin_family = AF_INET;
        a->sin_port = htons(static_cast<std::uint16_t>(port));
        if (inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) return fail(EINVAL, "listen", listen, "bad IPv4 address");
        out.len = sizeof(sockaddr_in);
    }
    return out;
}

}  // namespace

Result<UniqueFd> listenTcp(const std::string& listen, unsigned short& port) {
    auto addr = parseListen(listen);
    if (!addr) return failWith(addr.error());
    UniqueFd s(::socket(addr->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (s.get() < 0) return fail(errno, "socket", listen);
    int one = 1;
    ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.get(), addr->get(), addr->len) != 0) return fail(errno, "bind", listen);
    if (::listen(s.get(), 1024) != 0) return fail(errno, "listen", listen);
    sockaddr_storage bound{};
    socklen_t blen = sizeof bound;
    ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&bound), &blen);
    port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    return s;
}

int acceptConnection(int listener, PeerAddress& peer, int& error) {
    peer = PeerAddress{};
    const int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&peer.addr), &peer.len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    error = fd < 0 ? errno : 0;
    return fd;
}

PeerAddress peerOf(int fd) {
    PeerAddress peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer.addr), &peer.len) != 0) peer.len = 0;
    return peer;
}

void setNoDelay(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

long peekBytes(int fd, unsigned char* buf, std::size_t size) {
    const ssize_t n = ::recv(fd, buf, size, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 ? -1 : static_cast<long>(n);
}

int pendingBytes(int fd) {
    int avail = 0;
    return ::ioctl(fd, FIONREAD, &avail) == 0 ? avail : -1;
}

void shutdownConnection(int fd) { ::shutdown(fd, SHUT_RDWR); }
void closeConnection(int fd) { ::close(fd); }

Result<Poller> Poller::create() {
    UniqueFd fd(::epoll_create1(EPOLL_CLOEXEC));
    if (fd.get() < 0) return fail(errno, "epoll_create1", "web server");
    return Poller(std::move(fd));
}

void Poller::watch(int fd, std::uint64_t tag, bool edgeAndHangUp) {
    epoll_event ev{};
    ev.events = edgeAndHangUp ? EPOLLIN | EPOLLRDHUP | EPOLLET : EPOLLIN;
    ev.data.u64 = tag;
    ::epoll_ctl(fd_.get(), EPOLL_CTL_ADD, fd, &ev);
}

void Poller::unwatch(int fd) { ::epoll_ctl(fd_.get(), EPOLL_CTL_DEL, fd, nullptr); }

int Poller::wait(std::span<PollEvent> out, int timeoutMs) {
    std::array<epoll_event, 64> events{};
    const int max = static_cast<int>(std::min(out.size(), events.size()));
    const int n = ::epoll_wait(fd_.get(), events.data(), max, timeoutMs);
    if (n < 0) return errno == EINTR ? 0 : -1;
    for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)].tag = events[static_cast<std::size_t>(i)].data.u64;
    return n;
}

Result<Waker> Waker::create() {
    UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (fd.get() < 0) return fail(errno, "eventfd", "web server");
    return Waker(std::move(fd));
}

void Waker::wake() const {
    const std::uint64_t v = 1;
    if (::write(fd_.get(), &v, sizeof v) < 0) {
        // An eventfd holds 2^64-2: the waiting thread wakes from the earlier writes.
    }
}

void Waker::drain() const {
    std::uint64_t v = 0;
    if (::read(fd_.get(), &v, sizeof v) < 0) {
        // Nothing there (another drain took it): nothing was lost either way.
    }
}

}  // namespace rxtune
