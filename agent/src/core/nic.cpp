#include "core/nic.hpp"

#include <algorithm>

#include <cctype>

#include "core/text.hpp"

namespace rxtune {

const char* toString(Verdict v) {
    switch (v) {
        case Verdict::kSingleQueue: return "single-queue";
        case Verdict::kMultiQueue: return "multi-queue";
        case Verdict::kVirtual: return "virtual";
    }
    return "unknown";
}

std::string irqRole(const std::string& name) {
    std::string n;
    for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
    if (has("txrx") || has("comp") || has("-combined") || has("-fp-") || has("queue")) return "rxtx";
    if (has("-input") || has("-rx") || has("rx-")) return "rx";
    if (has("-output") || has("-tx") || has("tx-")) return "tx";
    return "other";
}

bool rxCountedAfterBacklog(const Nic& nic) { return nic.kind == "veth" || nic.kind == "tap" || nic.kind == "tun"; }

Verdict classify(const Nic& nic) {
    if (nic.kind != "physical") return Verdict::kVirtual;
    std::uint32_t rxNow = static_cast<std::uint32_t>(nic.rx.size());
    if (nic.channels.supported) {
        std::uint32_t rxMax = nic.channels.maxRx + nic.channels.maxCombined;
        if (rxNow > 1 || rxMax > 1) return Verdict::kMultiQueue;
        return Verdict::kSingleQueue;
    }
    return rxNow > 1 ? Verdict::kMultiQueue : Verdict::kSingleQueue;
}

CpuSet irqCpus(const Nic& nic) {
    CpuSet out;
    bool anyRx = std::any_of(nic.irqs.begin(), nic.irqs.end(),
                             [](const Irq& i) { return i.role == "rx" || i.role == "rxtx"; });
    for (const auto& i : nic.irqs) {
        if (anyRx && i.role != "rx" && i.role != "rxtx") continue;
        // Where the kernel serves it: its effective CPUs, unless they lie outside its affinity (a
        // move pending until its next interrupt): then the CPUs it moves to.
        const bool held = i.effective && !i.effective->empty() && (i.affinity.empty() || (*i.effective - i.affinity).empty());
        out = out | (held ? *i.effective : i.affinity);
    }
    return out;
}


std::string NapiRole::str() const {
    return std::string(kind == kRx ? "rx-" : kind == kTx ? "tx-" : "napi-") + std::to_string(index);
}

std::optional<NapiRole> parseNapiRole(std::string_view s) {
    NapiRole r;
    std::string_view rest;
    if (s.starts_with("rx-")) r.kind = NapiRole::kRx, rest = s.substr(3);
    else if (s.starts_with("tx-")) r.kind = NapiRole::kTx, rest = s.substr(3);
    else if (s.starts_with("napi-")) r.kind = NapiRole::kOrdinal, rest = s.substr(5);
    else return std::nullopt;
    std::uint64_t n = 0;
    if (!parseUnsigned(rest, n) || n > 65535) return std::nullopt;
    r.index = static_cast<unsigned>(n);
    return r;
}

std::vector<std::pair<NapiRole, const NapiInfo*>> napiRoles(const std::vector<NapiInfo>& napis,
                                                            const std::vector<NapiQueue>& queues) {
    std::vector<const NapiInfo*> byId;
    for (const auto& n : napis)
        if (n.id != 0) byId.push_back(&n);
    std::sort(byId.begin(), byId.end(), [](const NapiInfo* a, const NapiInfo* b) { return a->id < b->id; });
    std::vector<std::pair<NapiRole, const NapiInfo*>> out;
    unsigned ordinal = 0;
    for (const NapiInfo* n : byId) {
        std::optional<NapiRole> role;
        // The lowest RX queue it serves names it; a TX-only NAPI, its lowest TX queue.
        for (const auto& q : queues) {
            if (q.napiId != n->id) continue;
            NapiRole r{q.tx ? NapiRole::kTx : NapiRole::kRx, q.id};
            if (!role || r < *role) role = r;
        }
        out.emplace_back(role ? *role : NapiRole{NapiRole::kOrdinal, ordinal++}, n);
    }
    return out;
}

}  // namespace rxtune
