#include "sys/seqpacket.hpp"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <cstring>

namespace rxtune {

Result<SeqpacketClient> SeqpacketClient::connect(const std::string& path, int timeoutMs) {
    sockaddr_un sun{};
    if (path.size() >= sizeof sun.sun_path) return fail(ENAMETOOLONG, "connect", path);
    UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return fail(errno, "socket", "AF_UNIX");
    timeval tv{timeoutMs / 1000, (timeoutMs % 1000) * 1000};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sun.sun_family = AF_UNIX;
    std::memcpy(sun.sun_path, path.c_str(), path.size());
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sun), sizeof sun) != 0) return fail(errno, "connect", path);
    return SeqpacketClient(std::move(fd), path);
}

Result<std::string> SeqpacketClient::receive(const char* what) {
    std::string buf(65536, '\0');
    const ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n <= 0) return fail(n == 0 ? EPROTO : errno, what, path_);
    buf.resize(static_cast<size_t>(n));
    return buf;
}

Result<void> SeqpacketClient::send(const std::string& message) {
    if (::send(fd_.get(), message.data(), message.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(message.size()))
        return fail(errno, "send", path_);
    return {};
}

}  // namespace rxtune
