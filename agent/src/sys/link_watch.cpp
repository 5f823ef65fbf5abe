#include "sys/link_watch.hpp"

#include <net/if.h>
#include <net/if_arp.h>

#include <algorithm>

#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

namespace rxtune {

namespace {

// Room for a burst of a few thousand link messages (pods starting together) before an overrun.
constexpr int kRcvBuf = 8 << 20;

int errnoOf(int nlerr) { return nlerr == -NLE_NOMEM ? ENOMEM : nlerr == -NLE_PERM ? EPERM : EIO; }

}  // namespace

Result<std::unique_ptr<LinkWatch>> LinkWatch::open() {
    std::unique_ptr<LinkWatch> w(new LinkWatch());
    w->sock_ = nl_socket_alloc();
    w->refill_ = nl_socket_alloc();
    if (!w->sock_ || !w->refill_) return fail(ENOMEM, "netlink", "link watch", "cannot allocate socket");
    if (int rc = nl_connect(w->refill_, NETLINK_ROUTE); rc < 0)
        return fail(errnoOf(rc), "netlink connect", "NETLINK_ROUTE", nl_geterror(rc));
    if (int rc = nl_cache_mngr_alloc(w->sock_, NETLINK_ROUTE, NL_AUTO_PROVIDE, &w->mngr_); rc < 0)
        return fail(errnoOf(rc), "nl_cache_mngr_alloc", "NETLINK_ROUTE", nl_geterror(rc));
    nl_socket_set_buffer_size(w->sock_, kRcvBuf, 0);
    // The manager dumps once here to fill the cache, then follows RTNLGRP_LINK.
    if (int rc = nl_cache_mngr_add(w->mngr_, "route/link", &LinkWatch::onChange, w.get(), &w->cache_); rc < 0)
        return fail(errnoOf(rc), "nl_cache_mngr_add", "route/link", nl_geterror(rc));
    return w;
}

LinkWatch::~LinkWatch() {
    if (mngr_) nl_cache_mngr_free(mngr_);  // frees its caches; the socket passed in stays ours
    if (sock_) nl_socket_free(sock_);
    if (refill_) nl_socket_free(refill_);
}

int LinkWatch::fd() const { return nl_cache_mngr_get_fd(mngr_); }

void LinkWatch::onChange(::nl_cache*, ::nl_object* obj, int action, void* self) {
    auto* w = static_cast<LinkWatch*>(self);
    auto* link = reinterpret_cast<rtnl_link*>(obj);
    LinkChange c;
    c.kind = action == NL_ACT_NEW ? LinkChange::Kind::kNew
             : action == NL_ACT_DEL ? LinkChange::Kind::kRemoved
                                    : LinkChange::Kind::kChanged;
    const char* name = rtnl_link_get_name(link);
    c.name = name ? name : "";
    const char* kind = rtnl_link_get_type(link);
    c.linkKind = kind ? kind : "";
    if (!c.name.empty()) w->pending_.push_back(std::move(c));
}

std::vector<LinkChange> LinkWatch::read() {
    pending_.clear();
    const int rc = nl_cache_mngr_data_ready(mngr_);
    if (rc < 0 && rc != -NLE_AGAIN) {
        // Events were lost (an overrun reads as NLE_NOMEM): what the cache says may be stale.
        nl_cache_refill(refill_, cache_);
        pending_.clear();
        pending_.push_back(LinkChange{});
    }
    return std::move(pending_);
}

std::optional<LinkInfo> LinkWatch::find(const std::string& name) const {
    rtnl_link* l = rtnl_link_get_by_name(cache_, name.c_str());
    if (!l) return std::nullopt;
    LinkInfo li = linkInfoOf(l);
    rtnl_link_put(l);
    return li;
}

std::vector<LinkWatch::Entry> LinkWatch::entries() const {
    std::vector<Entry> out;
    out.reserve(static_cast<size_t>(std::max(0, nl_cache_nitems(cache_))));
    for (nl_object* o = nl_cache_get_first(cache_); o; o = nl_cache_get_next(o)) {
        auto* l = reinterpret_cast<rtnl_link*>(o);
        const char* name = rtnl_link_get_name(l);
        const char* kind = rtnl_link_get_type(l);
        out.push_back({name ? name : "", kind ? kind : "",
                       rtnl_link_get_arptype(l) == ARPHRD_LOOPBACK || (rtnl_link_get_flags(l) & IFF_LOOPBACK)});
    }
    return out;
}

}  // namespace rxtune
