#include "bpf/xdp_steering.hpp"

#include <linux/if_link.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/libbpf_log.hpp"
#include "core/text.hpp"
#include "sys/bpffs.hpp"
#include "sys/unique_fd.hpp"
#include "xdp_steer_shared.h"
#include "xdp_steer.skel.h"

namespace rxtune {

namespace {

constexpr std::uint32_t kNoCpu = 0xffffffffu;

struct SkelGuard {
    xdp_steer_bpf* skel = nullptr;
    ~SkelGuard() { xdp_steer_bpf__destroy(skel); }
};

}  // namespace

XdpSteering::XdpSteering(std::string pinRoot) : pinRoot_(std::move(pinRoot)) {}

std::string XdpSteering::dirFor(const std::string& ifname) const {
    // Interface names repeat across network namespaces; bpffs is one per host.
    return pinRoot_ + "/" + std::to_string(netnsInode()) + "_" + ifname;
}

Result<std::string> XdpSteering::current(const std::string& ifname) const {
    const std::string dir = dirFor(ifname);
    if (::access((dir + "/link").c_str(), F_OK) != 0) return std::string();
    UniqueFd link(bpf_obj_get((dir + "/link").c_str()));
    if (link.get() < 0) return fail(errno, "bpf_obj_get", dir + "/link");
    bpf_link_info info{};
    std::uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(link.get(), &info, &len) != 0) return fail(errno, "bpf link info", dir + "/link");
    const unsigned ifindex = if_nametoindex(ifname.c_str());
    if (ifindex == 0 || info.xdp.ifindex != ifindex) return std::string("detached");
    XdpSpec spec;
    UniqueFd slots(bpf_obj_get((dir + "/slots").c_str()));
    UniqueFd cpus(bpf_obj_get((dir + "/cpu_map").c_str()));
    if (slots.get() < 0 || cpus.get() < 0) return fail(errno, "bpf_obj_get", dir, "pinned maps missing");
    for (std::uint32_t i = 0; i < RXTUNE_XDP_MAX_SLOTS; ++i) {
        std::uint32_t cpu = kNoCpu;
        if (bpf_map_lookup_elem(slots.get(), &i, &cpu) == 0 && cpu != kNoCpu) spec.cpus.add(cpu);
    }
    if (!spec.cpus.empty()) {
        std::uint32_t first = spec.cpus.cpus().front();
        bpf_cpumap_val val{};
        if (bpf_map_lookup_elem(cpus.get(), &first, &val) == 0) spec.qsize = val.qsize;
    }
    // Plain init plus sz instead of LIBBPF_OPTS, whose statement expression is not ISO C++.
    bpf_xdp_query_opts q{};
    q.sz = sizeof q;
    if (bpf_xdp_query(static_cast<int>(ifindex), 0, &q) == 0)
        spec.mode = q.attach_mode == XDP_ATTACHED_DRV ? XdpMode::kNative : XdpMode::kGeneric;
    return spec.str();
}

Result<void> XdpSteering::install(const std::string& ifname, const XdpSpec& spec) {
    const unsigned ifindex = if_nametoindex(ifname.c_str());
    if (ifindex == 0) return fail(ENODEV, "xdp attach", ifname, "no such device");
    if (spec.cpus.empty()) return fail(EINVAL, "xdp attach", ifname, "no target CPUs");
    if (auto r = ensureBpfFs(pinRoot_); !r) return r;
    if (auto r = requireDurableBpfFs(pinRoot_); !r) return r;
    if (auto r = remove(ifname); !r) return r;

    routeLibbpfLog();
    SkelGuard g{xdp_steer_bpf__open()};
    if (!g.skel) return fail(errno, "bpf open", "xdp_steer");
    g.skel->rodata->nr_slots = RXTUNE_XDP_MAX_SLOTS;
    // A cpumap may not have more entries than the kernel has possible CPUs.
    const int possible = libbpf_num_possible_cpus();
    if (possible <= 0) return fail(-possible, "bpf", "possible CPUs");
    bpf_map__set_max_entries(g.skel->maps.cpu_map, static_cast<std::uint32_t>(std::min(possible, RXTUNE_XDP_MAX_CPUS)));
    if (int err = xdp_steer_bpf__load(g.skel); err != 0)
        return fail(-err, "bpf load", "xdp_steer", -err == EPERM ? "needs CAP_BPF and CAP_NET_ADMIN" : lastLibbpfMessage());
    const auto cpus = spec.cpus.cpus();
    for (std::uint32_t cpu : cpus) {
        if (cpu >= static_cast<std::uint32_t>(std::min(possible, RXTUNE_XDP_MAX_CPUS)))
            return fail(ERANGE, "xdp", ifname, "CPU " + std::to_string(cpu) + " beyond the cpumap size");
        bpf_cpumap_val val{};
        val.qsize = spec.qsize;
        if (bpf_map__update_elem(g.skel->maps.cpu_map, &cpu, sizeof cpu, &val, sizeof val, 0) != 0)
            return fail(errno, "cpumap update", "cpu " + std::to_string(cpu));
    }
    for (std::uint32_t i = 0; i < RXTUNE_XDP_MAX_SLOTS; ++i) {
        std::uint32_t cpu = cpus[i % cpus.size()];
        if (bpf_map__update_elem(g.skel->maps.slots, &i, sizeof i, &cpu, sizeof cpu, 0) != 0)
            return fail(errno, "slots update", ifname);
    }
    // A BPF link rather than a netlink attach: it cannot be replaced behind our back, and it goes
    // away with its last reference (the pin below).
    bpf_link_create_opts opts{};
    opts.sz = sizeof opts;
    opts.flags = spec.mode == XdpMode::kNative ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
    UniqueFd link(bpf_link_create(bpf_program__fd(g.skel->progs.xdp_steer), static_cast<int>(ifindex), BPF_XDP, &opts));
    if (link.get() < 0) {
        int e = errno;
        return fail(e, "xdp attach", ifname,
                    e == EBUSY || e == EEXIST ? "another XDP program is attached to the device"
                    : e == EOPNOTSUPP        ? "the driver has no native XDP (use mode generic)"
                                             : "");
    }
    const std::string dir = dirFor(ifname);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail(ec.value(), "mkdir", dir);
    if (bpf_obj_pin(link.get(), (dir + "/link").c_str()) != 0) return fail(errno, "bpf_obj_pin", dir + "/link");
    for (auto [map, name] : {std::pair{g.skel->maps.slots, "slots"}, {g.skel->maps.cpu_map, "cpu_map"},
                             {g.skel->maps.redirected, "redirected"}})
        if (bpf_map__pin(map, (dir + "/" + name).c_str()) != 0) {
            int e = errno;
            remove(ifname);
            return fail(e, "bpf pin", dir + "/" + name);
        }
    return {};
}

Result<void> XdpSteering::remove(const std::string& ifname) {
    return removePins(dirFor(ifname), {"link", "slots", "cpu_map", "redirected"});
}

Result<std::map<unsigned, std::uint64_t>> XdpSteering::redirected(const std::string& ifname) const {
    const std::string p = dirFor(ifname) + "/redirected";
    UniqueFd m(bpf_obj_get(p.c_str()));
    if (m.get() < 0) return fail(errno, "bpf_obj_get", p);
    std::map<unsigned, std::uint64_t> out;
    for (std::uint32_t cpu = 0; cpu < RXTUNE_XDP_MAX_CPUS; ++cpu) {
        std::uint64_t v = 0;
        if (bpf_map_lookup_elem(m.get(), &cpu, &v) == 0 && v) out[cpu] = v;
    }
    return out;
}

}  // namespace rxtune
