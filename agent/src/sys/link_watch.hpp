// LinkWatch: libnl's cache manager keeps a link cache current from rtnetlink events, and says
// which device each event was about, so the daemon needs no dump per event.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "sys/netlink.hpp"

struct nl_cache;
struct nl_cache_mngr;
struct nl_object;

namespace rxtune {

struct LinkChange {
    enum class Kind { kNew, kChanged, kRemoved, kResync };
    Kind kind = Kind::kResync;
    std::string name;      // empty for kResync
    std::string linkKind;  // IFLA_INFO_KIND ("veth", "tun"), empty for hardware and loopback
};

class LinkWatch {
public:
    static Result<std::unique_ptr<LinkWatch>> open();
    ~LinkWatch();
    LinkWatch(const LinkWatch&) = delete;
    LinkWatch& operator=(const LinkWatch&) = delete;

    int fd() const;
    // Drains the socket into the cache and returns what changed, in order. Events lost to an
    // overrun (ENOBUFS) refill the cache and come back as one kResync: "look at everything".
    std::vector<LinkChange> read();
    // The cached link (its counters are as of its last event, not now).
    std::optional<LinkInfo> find(const std::string& name) const;
    // Every cached link, by name and kind alone (no counters): what the daemon picks from without
    // asking the kernel for a dump.
    struct Entry {
        std::string name, kind;
        bool loopback = false;
    };
    std::vector<Entry> entries() const;

private:
    LinkWatch() = default;
    static void onChange(::nl_cache*, ::nl_object* obj, int action, void* self);

    ::nl_sock* sock_ = nullptr;     // the manager's event socket
    ::nl_sock* refill_ = nullptr;   // for a refill after an overrun
    ::nl_cache_mngr* mngr_ = nullptr;
    ::nl_cache* cache_ = nullptr;   // owned by the manager
    std::vector<LinkChange> pending_;
};

}  // namespace rxtune
