#include "sys/signals.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <sstream>
#include <cstring>
#include <fstream>

namespace rxtune {

Result<void> SystemProcessSignals::hangUp(int pid, const std::string& comm) {
    if (pid <= 1) return fail(EINVAL, "kill", "pid " + std::to_string(pid));
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string now;
    if (!std::getline(in, now) || now != comm)
        return fail(ESRCH, "kill", "pid " + std::to_string(pid), "no longer " + comm);
    if (::kill(pid, SIGHUP) != 0) return fail(errno, "kill", "pid " + std::to_string(pid) + " (" + comm + ")", "SIGHUP");
    return {};
}

namespace {

// A connected stream socket to irqbalance `pid`'s control socket: the file
// /run/irqbalance/irqbalance<PID>.sock, else the abstract name it falls back to where it cannot
// bind the file (irqbalance.c init_socket: an all-zero sun_path, the whole sockaddr_un as its
// length). The listener's credentials must name `pid`: an abstract name is shared by every
// irqbalance on the host, and a file may outlive its process.
int connectIrqbalance(int pid) {
    const std::string path = "/run/irqbalance/irqbalance" + std::to_string(pid) + ".sock";
    for (const bool abstract : {false, true}) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (!abstract) {
            if (path.size() >= sizeof addr.sun_path) continue;
            std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        }
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        // irqbalance answers between its passes: a pass under way (the better part of a second under
        // emulation, longer at its first) holds the answer back, and that wait is what the caller wants.
        const timeval timeout{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        ucred peer{};
        socklen_t len = sizeof peer;
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 &&
            ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 && peer.pid == pid)
            return fd;
        ::close(fd);
    }
    return -1;
}

}  // namespace

std::optional<std::set<int>> SystemProcessSignals::irqbalancePlaced(int pid) {
    const int fd = connectIrqbalance(pid);
    if (fd < 0) return std::nullopt;
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    char command[] = "stats";
    iovec iov{command, sizeof command - 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof(ucred));
    const ucred cred{::getpid(), ::getuid(), ::getgid()};
    std::memcpy(CMSG_DATA(c), &cred, sizeof cred);
    if (::sendmsg(fd, &msg, MSG_NOSIGNAL) < 0) return std::nullopt;
    std::string reply;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) reply.append(buf, static_cast<size_t>(n));
        else if (n < 0 && errno == EINTR) continue;
        else if (n < 0) return std::nullopt;  // no answer in 5 s: it hangs, or is not irqbalance
        else break;
    }
    if (reply.empty()) return std::nullopt;  // refused (not root) or closed unanswered
    // "TYPE t NUMBER n LOAD l SAVE_MODE s IRQ i LOAD l DIFF d CLASS c ..." (irqbalance.c get_object_stat)
    std::set<int> irqs;
    std::istringstream words(reply);
    std::string word;
    while (words >> word)
        if (word == "IRQ" && words >> word) {
            int n = 0;
            const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), n);
            if (ec == std::errc() && end == word.data() + word.size()) irqs.insert(n);
        }
    return irqs;
}

Result<void> queueHangUp(int pid, int value) {
    sigval v{};
    v.sival_int = value;
    if (::sigqueue(pid, SIGHUP, v) != 0) return fail(errno, "sigqueue", "pid " + std::to_string(pid));
    return {};
}

}  // namespace rxtune
