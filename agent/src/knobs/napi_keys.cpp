#include "knobs/napi_keys.hpp"

namespace rxtune {

KnobKey napiRoleKey(std::string family, std::string device, std::string name, const NapiRole& role) {
    KnobKey k{std::move(family), std::move(device), std::move(name)};
    if (role.kind == NapiRole::kOrdinal) k.napi = static_cast<int>(role.index);
    else k.queue = static_cast<int>(role.index), k.tx = role.kind == NapiRole::kTx;
    return k;
}

std::optional<NapiRole> napiRoleOf(const KnobKey& k) {
    if (k.napi >= 0) return NapiRole{NapiRole::kOrdinal, static_cast<unsigned>(k.napi)};
    if (k.queue >= 0) return NapiRole{k.tx ? NapiRole::kTx : NapiRole::kRx, static_cast<unsigned>(k.queue)};
    return std::nullopt;
}

std::string napiKnobFile(const NapiRole& role, std::string_view name) {
    return std::string(kNapiKnobDir) + role.str() + "/" + std::string(name);
}

std::optional<std::pair<NapiRole, std::string_view>> parseNapiKnobFile(std::string_view file) {
    if (!file.starts_with(kNapiKnobDir)) return std::nullopt;
    file.remove_prefix(kNapiKnobDir.size());
    const auto slash = file.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    auto role = parseNapiRole(file.substr(0, slash));
    const std::string_view name = file.substr(slash + 1);
    if (!role || name.empty() || name.find('/') != std::string_view::npos) return std::nullopt;
    return std::pair{*role, name};
}

Result<NapiInfo> liveNapi(NetlinkSource& nl, const std::string& dev, const NapiRole& role) {
    auto link = nl.link(dev);
    if (!link) return failWith(link.error());
    if (!*link) return fail(ENODEV, "netdev NAPI_GET", dev);
    auto napis = nl.napis((*link)->ifindex);
    if (!napis) return failWith(napis.error());
    if (!*napis) return fail(EOPNOTSUPP, "netdev NAPI_GET", dev, "this kernel has no napi-get");
    auto queues = nl.napiQueues((*link)->ifindex);
    if (!queues) return failWith(queues.error());
    for (const auto& [r, n] : napiRoles(**napis, queues->value_or(std::vector<NapiQueue>{})))
        if (r == role) return *n;
    return fail(ENOENT, "netdev NAPI_GET", dev + " NAPI " + role.str(), "no such NAPI instance now");
}

}  // namespace rxtune
