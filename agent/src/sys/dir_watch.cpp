#include "sys/dir_watch.hpp"

#include <sys/inotify.h>

#include <cerrno>
#include <cstdint>

namespace rxtune {

namespace {
// Entries created, renamed in or out, deleted, written and closed, or chmod'ed; the directory
// itself deleted or moved (the kubelet removes an old timestamped directory).
constexpr std::uint32_t kMask = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE | IN_ATTRIB |
                                IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
}  // namespace

Result<DirWatch> DirWatch::open() {
    int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) return fail(errno, "inotify_init1", "");
    return DirWatch(UniqueFd(fd));
}

std::set<std::string> DirWatch::watch(const std::set<std::string>& dirs) {
    for (auto it = byWd_.begin(); it != byWd_.end();) {
        if (dirs.count(it->second)) {
            ++it;
            continue;
        }
        ::inotify_rm_watch(fd_.get(), it->first);
        it = byWd_.erase(it);
    }
    std::set<std::string> have;
    for (const auto& [wd, d] : byWd_) have.insert(d);
    for (const auto& d : dirs) {
        if (have.count(d)) continue;
        // The same directory under two names gets one watch descriptor: the last name wins.
        const int wd = ::inotify_add_watch(fd_.get(), d.c_str(), kMask);
        if (wd < 0) continue;
        byWd_[wd] = d;
        have.insert(d);
    }
    return have;
}

bool DirWatch::drain() {
    alignas(inotify_event) char buf[8192];
    bool any = false;
    for (;;) {
        const ssize_t n = ::read(fd_.get(), buf, sizeof buf);
        if (n <= 0) break;  // EAGAIN: drained
        for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
            const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
            // A removed or moved directory's watch is gone: forget it (the next watch() re-adds
            // what still exists). An overflow means events were lost: look anyway.
            if (ev->mask & IN_IGNORED) byWd_.erase(ev->wd);
            if (ev->mask & (kMask | IN_Q_OVERFLOW)) any = true;
            off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
        }
    }
    return any;
}

}  // namespace rxtune
