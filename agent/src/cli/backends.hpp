// The OS objects a one-shot command's knobs live in (XDP pins, NAPI kthreads), made once.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "apply/apply.hpp"
#include "bpf/xdp_steering.hpp"
#include "sys/napi_threads.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

class KnobBackends {
public:
    KnobBackends(const FileTree& fs, const std::string& bpfDir) : xdp_(bpfDir) {
        // Without netlink, kthreads are looked for by name in /proc.
        if (auto n = Netlink::open()) nl_ = std::move(*n);
        if (nl_) napi_.emplace(fs, *nl_);
    }
    Knobs knobs(FileTree& fs) { return Knobs(fs, services()); }
    Services services() {
        return Services().with<XdpSteering>(&xdp_).with<NapiThreads>(napi_ ? &*napi_ : nullptr).with<NetlinkSource>(nl_.get());
    }

private:
    XdpSteering xdp_;
    std::unique_ptr<Netlink> nl_;
    std::optional<SystemNapiThreads> napi_;
};

}  // namespace rxtune
