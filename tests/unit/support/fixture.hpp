// Test support: fixture host trees (temp copies) and a NetlinkSource answering from netlink.json.
#pragma once

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sys/netlink.hpp"

namespace rxtune::test {

inline std::filesystem::path fixtureRoot(const std::string& scenario) {
    const char* dir = std::getenv("RXTUNE_FIXTURES");
    if (!dir) throw std::runtime_error("RXTUNE_FIXTURES is not set");
    return std::filesystem::path(dir) / scenario;
}

// Every fixture host's name (a directory of tests/fixtures/hosts), sorted.
inline std::vector<std::string> fixtureHosts() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(fixtureRoot("vm-no-cpufreq").parent_path()))
        if (e.is_directory()) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// A private copy of a fixture so a test may damage or write it.
// Every file under root and its text: a tree compared before and after.
inline std::map<std::string, std::string> contents(const std::filesystem::path& root) {
    std::map<std::string, std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
        if (!e.is_regular_file()) continue;
        std::ifstream in(e.path());
        std::stringstream ss;
        ss << in.rdbuf();
        out[std::filesystem::relative(e.path(), root).string()] = ss.str();
    }
    return out;
}

class TempTree {
public:
    explicit TempTree(const std::string& scenario) {
        std::string tmpl = (std::filesystem::temp_directory_path() / "rxtune-test-XXXXXX").string();
        if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
        std::filesystem::copy(fixtureRoot(scenario), path_,
                              std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    }
    ~TempTree() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempTree(const TempTree&) = delete;
    TempTree& operator=(const TempTree&) = delete;

    const std::filesystem::path& path() const { return path_; }
    void put(const std::string& rel, const std::string& text) const {
        std::filesystem::create_directories((path_ / rel).parent_path());
        std::ofstream(path_ / rel, std::ios::trunc) << text;
    }

private:
    std::filesystem::path path_;
};

class FakeNetlink : public NetlinkSource {
public:
    explicit FakeNetlink(const std::filesystem::path& root) : root_(root) {
        std::ifstream in(root / "netlink.json");
        if (!in) throw std::runtime_error("no netlink.json in " + root.string());
        doc_ = nlohmann::json::parse(in);
    }

    Result<std::vector<LinkInfo>> links() override {
        std::vector<LinkInfo> out;
        for (const auto& l : doc_["links"]) {
            LinkInfo li;
            li.name = l["name"];
            li.ifindex = l["ifindex"];
            li.kind = l["kind"];
            li.operstate = l["operstate"];
            li.flags = l["flags"];
            li.mtu = l["mtu"];
            li.arptype = l["arptype"];
            li.numRxQueues = l["num_rx_queues"];
            li.numTxQueues = l["num_tx_queues"];
            li.stats.rxDropped = l.value("rx_dropped", 0ull);
            li.stats.rxMissed = l.value("rx_missed", 0ull);
            out.push_back(li);
        }
        return out;
    }

    // A kernel that refuses the channels dump (Debian 12's 6.1 did: EINVAL), and one that refuses
    // a device's channels question: 0 answers from the fixture (the dump: none, ask per device).
    int dumpErrno = 0;
    std::map<std::string, int> channelsErrno;
    int dumps = 0;
    Result<std::optional<std::map<std::string, Channels>>> allChannels() override {
        ++dumps;
        if (dumpErrno) return fail(dumpErrno, "ethtool CHANNELS_GET", "dump");
        return std::optional<std::map<std::string, Channels>>();
    }

    Result<Channels> channels(const std::string& ifname) override {
        if (auto e = channelsErrno.find(ifname); e != channelsErrno.end()) return fail(e->second, "ethtool CHANNELS_GET", ifname);
        const auto& c = find(ifname)["channels"];
        Channels ch;
        ch.source = "fake";
        ch.supported = c["supported"];
        if (!ch.supported) {
            ch.error = c.value("error", "");
            return ch;
        }
        ch.rx = c["rx"], ch.tx = c["tx"], ch.other = c["other"], ch.combined = c["combined"];
        ch.maxRx = c["max_rx"], ch.maxTx = c["max_tx"], ch.maxOther = c["max_other"];
        ch.maxCombined = c["max_combined"];
        return ch;
    }

    Result<DriverInfo> driverInfo(const std::string& ifname) override {
        const auto& d = find(ifname)["driver"];
        DriverInfo di;
        di.available = d.value("available", false);
        if (di.available) {
            di.driver = d["driver"], di.version = d["version"], di.firmware = d["firmware"];
            di.busInfo = d["bus_info"];
        }
        return di;
    }

    // An ethtool message's numbers where the fixture has the message under its name (true/false
    // for flags); a SET changes what the GET answers. ethtoolErrno: the SET's answer instead.
    Result<EthtoolValues> ethtoolGet(const EthtoolMessage& m, const std::string& ifname) override {
        EthtoolValues v;
        const auto& l = find(ifname);
        if (!l.contains(m.name)) {
            v.error = "Operation not supported";
            return v;
        }
        v.supported = true;
        for (const auto& [k, x] : l[m.name].items()) v.values[k] = x.is_boolean() ? (x.get<bool>() ? 1u : 0u) : x.get<std::uint32_t>();
        return v;
    }
    Result<void> ethtoolSet(const EthtoolMessage& m, const std::string& ifname, const std::map<std::string, std::uint32_t>& values) override {
        ++ethtoolSets;
        for (auto& l : doc_["links"]) {
            if (l["name"] != ifname) continue;
            if (!l.contains(m.name)) return fail(EOPNOTSUPP, "ethtool " + m.name + " set", ifname);
            if (auto e = ethtoolErrno.find(ifname); e != ethtoolErrno.end()) return fail(e->second, "ethtool " + m.name + " set", ifname);
            // A value above the driver's maximum (where it reports one, "<name>_max") is refused.
            for (const auto& [k, x] : values)
                if (l[m.name].contains(k + "_max") && x > l[m.name][k + "_max"].get<std::uint32_t>())
                    return fail(EINVAL, "ethtool " + m.name + " set", ifname);
            for (const auto& [k, x] : values) {
                auto& slot = l[m.name][k];
                if (slot.is_boolean()) slot = x != 0;
                else slot = x;
            }
            // A driver that takes the values, then fails (its reset after the change did not come back).
            if (ethtoolSets == failEthtoolSetAt) return fail(EIO, "ethtool " + m.name + " set", ifname, "device reset failed");
            return {};
        }
        return fail(ENODEV, "ethtool " + m.name + " set", ifname);
    }
    int ethtoolSets = 0;
    int failEthtoolSetAt = -1;  // the Nth SET lands, then answers EIO
    // What the fixture's driver holds now: one number of a message ("rings", "rx").
    std::uint32_t ethtoolValue(const std::string& message, const std::string& ifname, const std::string& key) const {
        for (const auto& l : doc_["links"])
            if (l["name"] == ifname) return l[message][key].is_boolean() ? l[message][key].get<bool>() : l[message][key].get<std::uint32_t>();
        throw std::runtime_error("no link " + ifname);
    }
    std::map<std::string, int> ethtoolErrno;


    // What napi-get would answer, where the fixture says (else the kernel is one without it).
    Result<std::optional<std::vector<NapiInfo>>> napis(int ifindex) override {
        for (const auto& l : doc_["links"]) {
            if (l["ifindex"] != ifindex || !l.contains("napis")) continue;
            std::vector<NapiInfo> out;
            for (const auto& n : l["napis"]) {
                NapiInfo i;
                i.id = n["id"];
                i.irq = n.value("irq", -1);
                i.pid = n.value("pid", 0);
                if (n.contains("defer_hard_irqs")) i.deferHardIrqs = n["defer_hard_irqs"].get<std::uint32_t>();
                if (n.contains("gro_flush_timeout")) i.groFlushTimeout = n["gro_flush_timeout"].get<std::uint64_t>();
                if (n.contains("irq_suspend_timeout")) i.irqSuspendTimeout = n["irq_suspend_timeout"].get<std::uint64_t>();
                if (n.contains("threaded")) i.threaded = n["threaded"].get<std::uint32_t>();
                out.push_back(i);
            }
            return std::optional<std::vector<NapiInfo>>(std::move(out));
        }
        return std::optional<std::vector<NapiInfo>>();
    }

    // What napi-set takes, where the fixture says ("napi_set": {"threaded_max": 2, ...}).
    Result<NapiFeatures> napiFeatures() override {
        NapiFeatures f;
        if (!doc_.contains("napi_set")) return f;
        const auto& n = doc_["napi_set"];
        f.napiSet = true;
        f.deferHardIrqs = n.value("defer_hard_irqs", true);
        f.groFlushTimeout = n.value("gro_flush_timeout", true);
        f.irqSuspendTimeout = n.value("irq_suspend_timeout", true);
        f.threaded = n.contains("threaded_max");
        f.threadedMax = n.value("threaded_max", 0u);
        return f;
    }
    // queue-get: a link's "queues_netdev" ([{"id": 0, "tx": false, "napi_id": 8193}]).
    Result<std::optional<std::vector<NapiQueue>>> napiQueues(int ifindex) override {
        for (const auto& l : doc_["links"]) {
            if (l["ifindex"] != ifindex || !l.contains("queues_netdev")) continue;
            std::vector<NapiQueue> out;
            for (const auto& q : l["queues_netdev"]) {
                NapiQueue x;
                x.id = q["id"], x.tx = q.value("tx", false);
                if (q.contains("napi_id")) x.napiId = q["napi_id"].get<unsigned>();
                out.push_back(x);
            }
            return std::optional<std::vector<NapiQueue>>(std::move(out));
        }
        return std::optional<std::vector<NapiQueue>>();
    }
    // napi-set changes what napi-get answers; napiSetErrno: the answer for a NAPI id instead.
    int napiSets = 0;
    std::map<unsigned, int> napiSetErrno;
    Result<void> napiSet(unsigned id, const NapiSettings& v) override {
        ++napiSets;
        const std::string what = "napi " + std::to_string(id);
        if (!doc_.contains("napi_set")) return fail(EOPNOTSUPP, "netdev NAPI_SET", what);
        if (auto e = napiSetErrno.find(id); e != napiSetErrno.end()) return fail(e->second, "netdev NAPI_SET", what);
        if (napiSets == failNapiSetAt) return fail(EIO, "netdev NAPI_SET", what);
        for (auto& l : doc_["links"]) {
            if (!l.contains("napis")) continue;
            for (auto& n : l["napis"]) {
                if (n["id"] != id) continue;
                if (v.deferHardIrqs) n["defer_hard_irqs"] = *v.deferHardIrqs;
                if (v.groFlushTimeout) n["gro_flush_timeout"] = *v.groFlushTimeout;
                if (v.irqSuspendTimeout) n["irq_suspend_timeout"] = *v.irqSuspendTimeout;
                if (v.threaded) {
                    n["threaded"] = *v.threaded;
                    threadedKthread(n, *v.threaded != 0);
                }
                return {};
            }
        }
        return fail(ENOENT, "netdev NAPI_SET", what);
    }
    int failNapiSetAt = -1;  // the Nth napi-set answers EIO
    // A device reset: the NAPI comes back under a new id, its values and queues kept.
    void renumberNapi(unsigned from, unsigned to) {
        for (auto& l : doc_["links"]) {
            if (l.contains("napis"))
                for (auto& n : l["napis"])
                    if (n["id"] == from) n["id"] = to;
            if (l.contains("queues_netdev"))
                for (auto& q : l["queues_netdev"])
                    if (q.contains("napi_id") && q["napi_id"] == from) q["napi_id"] = to;
        }
    }
    // One per-NAPI value the fake holds now.
    std::optional<std::uint64_t> napiValue(unsigned id, const std::string& key) const {
        for (const auto& l : doc_["links"])
            if (l.contains("napis"))
                for (const auto& n : l["napis"])
                    if (n["id"] == id && n.contains(key)) return n[key].get<std::uint64_t>();
        return std::nullopt;
    }

private:
    // napi-set threaded: the kernel starts the NAPI's kthread (pid 950 + its place, on every CPU of
    // the tree's proc/<pid>/status) where there is none, and stops it at 0.
    void threadedKthread(nlohmann::json& n, bool on) {
        const int pid = n.value("pid", 0);
        if (on && pid == 0) {
            const int fresh = 950 + nextKthread_++;
            n["pid"] = fresh;
            std::filesystem::create_directories(root_ / "proc" / std::to_string(fresh));
            std::ofstream(root_ / "proc" / std::to_string(fresh) / "status", std::ios::trunc)
                << "Name:\tnapi/x-" << n["id"].get<unsigned>() << "\nPPid:\t2\nCpus_allowed:\tfffff\n";
        }
        if (!on && pid != 0) {
            n.erase("pid");
            std::filesystem::remove_all(root_ / "proc" / std::to_string(pid));
        }
    }
    std::filesystem::path root_;
    int nextKthread_ = 0;

    const nlohmann::json& find(const std::string& name) const {
        for (const auto& l : doc_["links"])
            if (l["name"] == name) return l;
        throw std::runtime_error("fake netlink: no link " + name);
    }
    nlohmann::json doc_;
};

}  // namespace rxtune::test
