#include "profile/daemon_config.hpp"

#include <charconv>
#include <cmath>
#include <set>

#include <yaml-cpp/yaml.h>

#include "core/digest.hpp"
#include "core/paths.hpp"
#include "profile/profile.hpp"
#include "profile/yaml_config.hpp"

namespace rxtune {

namespace {

using yamlcfg::bad;
using yamlcfg::scalar;

// The shared duration syntax, from 100 ms to a day.
std::chrono::milliseconds duration(const YAML::Node& n, const std::string& key) {
    return std::chrono::milliseconds(static_cast<long>(std::lround(yamlcfg::seconds(n, key, 0.1, 86400) * 1000)));
}

}  // namespace

Result<DaemonConfig> parseDaemonConfig(const std::string& text, const std::string& file) {
    DaemonConfig c;
    c.file = file;
    c.digest = Digest().add(text).hex();
    try {
        YAML::Node root = yamlcfg::loadDocument(text, "configuration");
        yamlcfg::requireKeys(root, "", {"profile", "interfaces", "listen", "drift_interval", "metrics_interval", "on_stop",
                                        "state_dir", "run_dir", "bpf_dir", "proc_sys", "http_threads", "http_max_connections", "http_timeout",
                                        "web_config", "datapaths", "bpf_accounting", "metrics_interfaces",
                                        "bpf_max_softirq_rate"});
        if (auto n = root["profile"]) {
            // A name from the profile directories, or a file: then an absolute path (a relative
            // one would depend on the daemon's working directory).
            c.profile = scalar(n, "profile");
            if (c.profile.empty()) bad(n, "profile", "expected a profile name or an absolute path, got ''");
            if (isProfilePath(c.profile)) c.profile = yamlcfg::absolutePath(n, "profile");
        }
        if (auto n = root["interfaces"]) {
            if (!n.IsSequence()) bad(n, "interfaces", "expected a list of interface names");
            for (const auto& e : n) {
                auto name = scalar(e, "interfaces");
                if (auto ok = validateIfName(name); !ok) bad(e, "interfaces", ok.error().message());
                c.interfaces.push_back(name);
            }
        }
        if (auto n = root["listen"]) {
            c.listen = scalar(n, "listen");
            auto colon = c.listen.rfind(':');
            unsigned port = 0;
            const std::string ps = colon == std::string::npos ? "" : c.listen.substr(colon + 1);
            auto [p, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), port);
            if (colon == std::string::npos || ec != std::errc() || p != ps.data() + ps.size() || port > 65535)
                bad(n, "listen", "expected address:port such as 0.0.0.0:9867, got '" + c.listen + "'");
        }
        if (auto n = root["drift_interval"]) c.driftInterval = duration(n, "drift_interval");
        if (auto n = root["metrics_interval"]) c.metricsInterval = duration(n, "metrics_interval");
        if (auto n = root["on_stop"]) {
            auto v = scalar(n, "on_stop");
            if (v == "revert") c.revertOnStop = true;
            else if (v == "keep") c.revertOnStop = false;
            else bad(n, "on_stop", "expected keep or revert, got '" + v + "'");
        }
        if (auto n = root["state_dir"]) c.stateDir = yamlcfg::absolutePath(n, "state_dir");
        if (auto n = root["run_dir"]) c.runDir = yamlcfg::absolutePath(n, "run_dir");
        if (auto n = root["bpf_dir"]) c.bpfDir = yamlcfg::absolutePath(n, "bpf_dir");
        if (auto n = root["proc_sys"]) c.procSys = yamlcfg::absolutePath(n, "proc_sys");
        if (auto n = root["bpf_accounting"]) {
            auto v = scalar(n, "bpf_accounting");
            if (v == "auto") c.bpfAccounting = BpfAccounting::kAuto;
            else if (v == "on") c.bpfAccounting = BpfAccounting::kOn;
            else if (v == "off") c.bpfAccounting = BpfAccounting::kOff;
            else bad(n, "bpf_accounting", "expected auto, on or off, got '" + v + "'");
        }
        if (auto n = root["bpf_max_softirq_rate"])  // NET_RX softirqs per second on one CPU
            c.bpfMaxSoftirqRate = yamlcfg::integer<std::uint64_t>(n, "bpf_max_softirq_rate", 100, 100000000);
        if (auto n = root["datapaths"]) {
            if (!n.IsSequence()) bad(n, "datapaths", "expected a list of telemetry socket paths (may be empty)");
            c.datapaths.clear();
            for (const auto& e : n) {
                auto path = yamlcfg::absolutePath(e, "datapaths");
                if (path.size() >= 108)
                    bad(e, "datapaths", "expected an absolute socket path shorter than 108 bytes, got '" + path + "'");
                c.datapaths.push_back(path);
            }
        }
        if (auto n = root["metrics_interfaces"]) {
            const std::string what = "expected managed, all, or a list of interface name globs such as [eth*, ens1f0]";
            auto& sel = c.metricsInterfaces;
            if (n.IsScalar()) {
                const auto v = n.Scalar();
                if (v == "managed") sel.kind = InterfaceSelection::Kind::kManaged;
                else if (v == "all") sel.kind = InterfaceSelection::Kind::kAll;
                else bad(n, "metrics_interfaces", what + ", got '" + v + "'");
            } else if (n.IsSequence() && n.size() > 0) {
                sel.kind = InterfaceSelection::Kind::kGlobs;
                for (const auto& e : n) {
                    auto g = scalar(e, "metrics_interfaces");
                    if (g.empty() || g.size() > 15 || g.find('/') != std::string::npos)
                        bad(e, "metrics_interfaces", "'" + g + "' is not an interface name glob");
                    sel.globs.push_back(g);
                }
            } else {
                bad(n, "metrics_interfaces", what);
            }
        }
        if (auto n = root["http_threads"])
            bad(n, "http_threads", "no longer used: one non-blocking thread serves every connection (see http_max_connections, http_timeout)");
        if (auto n = root["http_max_connections"])
            c.httpMaxConnections = yamlcfg::integer<std::size_t>(n, "http_max_connections", 16, 65536);
        if (auto n = root["http_timeout"]) c.httpTimeout = duration(n, "http_timeout");
        if (auto n = root["web_config"]) c.webConfig = yamlcfg::absolutePath(n, "web_config");
    } catch (const yamlcfg::ConfigError& e) {
        return yamlcfg::located(file, e.mark, e.key, e.what);
    } catch (const YAML::Exception& e) {
        return yamlcfg::located(file, e.mark, "", "malformed YAML: " + e.msg);
    }
    return c;
}

Result<DaemonConfig> loadDaemonConfig(const std::string& path, bool mustExist) {
    auto text = yamlcfg::readDocumentFile(path);
    if (!text) {
        if (!mustExist && text.error().code == ENOENT) return DaemonConfig{};
        return failWith(text.error());
    }
    return parseDaemonConfig(*text, path);
}

}  // namespace rxtune
