// The scrape endpoint's OS side: its listening TCP socket, the connections it accepts, the epoll
// set its thread waits on and the descriptor that wakes that thread. The endpoint runs on a thread
// of its own (libmicrohttpd's epoll sets are watched from ours), not on the daemon's sd-event:
// a flood of connections must not delay a re-apply.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/result.hpp"
#include "sys/unique_fd.hpp"

namespace rxtune {

// A connection's peer, as accept and getpeername give it.
struct PeerAddress {
    sockaddr_storage addr{};
    socklen_t len = sizeof(sockaddr_storage);
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&addr); }
};

// "ADDRESS:PORT" ("0.0.0.0:9465", "[::1]:0"): a non-blocking listening socket, SO_REUSEADDR,
// backlog 1024. `port`: the port it got (the one asked for, or the kernel's for 0).
Result<UniqueFd> listenTcp(const std::string& listen, unsigned short& port);

// One connection from the listen queue, non-blocking, close-on-exec; -1 with `error` set (EAGAIN
// when the queue is empty, EMFILE/ENFILE when out of descriptors). The caller owns the descriptor
// (it may hand it to libmicrohttpd, which closes it).
int acceptConnection(int listener, PeerAddress& peer, int& error);
PeerAddress peerOf(int fd);
void setNoDelay(int fd);  // TCP_NODELAY
// Up to `size` bytes without taking them (MSG_PEEK, non-blocking): the count, 0 at the end, < 0
// when nothing is there yet.
long peekBytes(int fd, unsigned char* buf, std::size_t size);
// Bytes waiting to be read (FIONREAD); -1 if it cannot say.
int pendingBytes(int fd);
void shutdownConnection(int fd);  // both ways; the owner still closes it
void closeConnection(int fd);

// An epoll set: descriptors with the caller's tag, readable (optionally edge-triggered, with the
// peer's hang-up).
struct PollEvent {
    std::uint64_t tag = 0;
};
class Poller {
public:
    static Result<Poller> create();
    void watch(int fd, std::uint64_t tag, bool edgeAndHangUp = false);
    void unwatch(int fd);
    // Ready descriptors' tags into `out`, waiting at most timeoutMs: their count, 0 on a timeout
    // or a signal, -1 on any other error.
    int wait(std::span<PollEvent> out, int timeoutMs);

private:
    explicit Poller(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
};

// Wakes a thread that waits in a Poller (an eventfd): wake() from any thread, drain() on the
// waiting one.
class Waker {
public:
    static Result<Waker> create();
    int fd() const { return fd_.get(); }
    void wake() const;
    void drain() const;

private:
    explicit Waker(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
};

}  // namespace rxtune
