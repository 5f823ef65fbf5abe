// Interrupt coalescing: what the driver reports through ethtool netlink (COALESCE_GET), shown by
// detect for every device; absent what the driver does not report.
#include <linux/ethtool_netlink.h>

#include "knobs/registry.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kName = "coalesce";

// The numbers of the message rxtune reads, by the names detect shows (and fixtures hold).
const EthtoolMessage& message() {
    static const EthtoolMessage m{std::string(kName),
                                  ETHTOOL_MSG_COALESCE_GET,
                                  ETHTOOL_MSG_COALESCE_SET,
                                  ETHTOOL_A_COALESCE_HEADER,
                                  {{ETHTOOL_A_COALESCE_RX_USECS, "rx_usecs", false},
                                   {ETHTOOL_A_COALESCE_RX_MAX_FRAMES, "rx_frames", false},
                                   {ETHTOOL_A_COALESCE_TX_USECS, "tx_usecs", false},
                                   {ETHTOOL_A_COALESCE_TX_MAX_FRAMES, "tx_frames", false},
                                   {ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, "adaptive_rx", true},
                                   {ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX, "adaptive_tx", true}}};
    return m;
}

const EthtoolValues* factsOf(const Nic& n) {
    auto it = n.facts.find(std::string(kName));
    return it == n.facts.end() ? nullptr : std::any_cast<EthtoolValues>(&it->second);
}

class CoalesceFamily final : public KnobFamily {
public:
    std::string_view name() const override { return kName; }
    std::string id(const KnobKey& k) const override { return k.device + " coalesce " + k.name; }
    std::string path(const KnobKey& k) const override { return "sys/class/net/" + k.device + "/ethtool-coalesce/" + k.name; }
    std::optional<KnobKey> keyOf(std::string_view, std::string_view) const override { return std::nullopt; }

    Result<void> readDetect(const SnapshotIo& io, HostSnapshot& snap) const override {
        for (auto& n : snap.nics) {
            auto c = io.nl.ethtoolGet(message(), n.name);
            if (!c) return failWith(c.error().withContext("interface " + n.name));
            n.facts[std::string(kName)] = *c;
        }
        return {};
    }

    void detectJson(const Nic& n, json& j) const override {
        const EthtoolValues* c = factsOf(n);
        if (!c) return;
        if (!c->supported) {
            j["coalesce"] = {{"supported", false}, {"error", c->error}};
            return;
        }
        json out = json::object();
        for (const auto& a : message().attrs) {
            auto v = c->values.find(a.name);
            out[a.name] = v == c->values.end() ? json(nullptr) : a.u8 ? json(v->second != 0) : json(v->second);
        }
        j["coalesce"] = std::move(out);
    }
    void detectText(const Nic& n, std::ostream& out) const override {
        const EthtoolValues* c = factsOf(n);
        if (!c) return;
        if (!c->supported) {
            out << "    coalesce: " << c->error << "\n";
            return;
        }
        auto v = [&](const char* k) {
            auto it = c->values.find(k);
            return it == c->values.end() ? std::string("-") : std::to_string(it->second);
        };
        auto b = [&](const char* k) {
            auto it = c->values.find(k);
            return it == c->values.end() ? std::string("-") : std::string(it->second ? "on" : "off");
        };
        out << "    coalesce rx-usecs " << v("rx_usecs") << " rx-frames " << v("rx_frames") << " adaptive-rx " << b("adaptive_rx")
            << ", tx-usecs " << v("tx_usecs") << " tx-frames " << v("tx_frames") << " adaptive-tx " << b("adaptive_tx") << "\n";
    }
};

}  // namespace

const KnobFamily& coalesceFamily() {
    static const CoalesceFamily f;
    return f;
}

}  // namespace rxtune
