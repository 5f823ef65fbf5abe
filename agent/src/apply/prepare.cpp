#include "apply/prepare.hpp"

#include <algorithm>

namespace rxtune {

Result<Prepared> preparePlan(const Profile& profile, const FileTree& fs, NetlinkSource& nl,
                             const std::vector<std::string>& interfaces, bool skipMissing, const XdpSteering* xdp) {
    std::vector<std::string> only = interfaces;
    if (skipMissing && !interfaces.empty()) {
        auto links = nl.links();
        if (!links) return failWith(links.error());
        std::erase_if(only, [&](const std::string& n) {
            return std::none_of(links->begin(), links->end(), [&](const LinkInfo& l) { return l.name == n; });
        });
    }
    PlanOptions opts;
    opts.interfaces = only;
    opts.explicitInterfaces = !interfaces.empty();
    Prepared out;
    if (opts.explicitInterfaces && only.empty()) {
        // None of the named interfaces exists now: plan the host-wide settings only.
        auto topo = readTopology(fs);
        if (!topo) return failWith(topo.error().withContext("host"));
        out.snapshot.host = std::move(*topo);
    } else {
        auto snap = takeSnapshot(fs, nl, only);
        if (!snap) return failWith(snap.error());
        out.snapshot = std::move(*snap);
    }
    if (profile.steering.mode == SteeringMode::kXdp) {
        if (!xdp) return fail(ENOTSUP, "steering.mode", "xdp", "XDP steering is not available here");
        for (auto& n : out.snapshot.nics) {
            auto cur = xdp->current(n.name);
            if (!cur) return failWith(cur.error().withContext("interface " + n.name));
            n.xdpSteering = *cur;
        }
    }
    std::vector<std::string> keys;
    for (const auto& [k, v] : profile.sysctls) keys.push_back(k);
    if (auto r = addSysctls(fs, out.snapshot.host, keys); !r) return failWith(r.error());
    const auto& choice = profile.steering.cpus;
    if (choice.kind == CpuChoice::Kind::kCgroup) {
        auto cpus = cgroupCpus(fs, out.snapshot.host, choice.cgroupPath);
        if (!cpus) return failWith(profileError(choice.where, "steering.cpus", cpus.error().message()));
        opts.cgroupCpus[choice.cgroupPath] = *cpus;
    }
    auto p = plan(profile, out.snapshot, opts);
    if (!p) return failWith(p.error());
    out.plan = std::move(*p);
    return out;
}

}  // namespace rxtune
