#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include <yaml-cpp/yaml.h>

#include "profile/daemon_config.hpp"
#include "web/web_config.hpp"

using namespace rxtune;
namespace fs = std::filesystem;

namespace {

fs::path source() {
    const char* s = std::getenv("RXTUNE_SOURCE");
    REQUIRE(s != nullptr);
    return s;
}

std::vector<YAML::Node> docs(const std::string& file) { return YAML::LoadAllFromFile((source() / "packaging/kubernetes" / file).string()); }

YAML::Node kind(const std::vector<YAML::Node>& all, const std::string& k) {
    for (const auto& d : all)
        if (d["kind"].as<std::string>() == k) return d;
    FAIL("no " << k);
    return {};
}

}  // namespace

TEST_CASE("the Kubernetes manifests parse and agree with the daemon and the package", "[packaging]") {
    auto cm = kind(docs("configmap.yaml"), "ConfigMap");
    auto ds = kind(docs("daemonset.yaml"), "DaemonSet");
    auto sm = docs("servicemonitor.yaml");

    // The ConfigMap's rxtune.yaml is a valid daemon config naming a shipped profile.
    auto cfg = parseDaemonConfig(cm["data"]["rxtune.yaml"].as<std::string>(), "configmap.yaml");
    REQUIRE(cfg);
    CHECK(fs::exists(source() / "profiles" / (cfg->profile + ".yaml")));
    const std::string port = cfg->listen.substr(cfg->listen.rfind(':') + 1);

    const auto pod = ds["spec"]["template"];
    CHECK(pod["spec"]["hostNetwork"].as<bool>());
    CHECK(pod["metadata"]["annotations"]["prometheus.io/port"].as<std::string>() == port);
    const auto c = pod["spec"]["containers"][0];
    CHECK(c["ports"][0]["containerPort"].as<std::string>() == port);
    CHECK(c["livenessProbe"]["httpGet"]["port"].as<std::string>() == port);
    CHECK(c["livenessProbe"]["httpGet"]["path"].as<std::string>() == "/metrics");
    CHECK(c["command"][0].as<std::string>() == "/usr/sbin/rxtune");
    // The image `make image` builds and tests/package/test_image.sh runs (it reads this manifest).
    CHECK(c["image"].as<std::string>() == "localhost/rxtune:" RXTUNE_VERSION);
    CHECK(c["imagePullPolicy"].as<std::string>() == "Never");
    // bpf() with CAP_BPF (runtimes' default seccomp profiles want CAP_SYS_ADMIN for it).
    CHECK(c["securityContext"]["seccompProfile"]["type"].as<std::string>() == "Unconfined");
    CHECK(c["command"][3].as<std::string>() == "/etc/rxtune/rxtune.yaml");
    CHECK_FALSE(c["securityContext"]["privileged"].as<bool>());
    CHECK(c["securityContext"]["capabilities"]["add"][0].as<std::string>() == "NET_ADMIN");

    std::set<std::string> mounts, hostPaths;
    for (const auto& m : c["volumeMounts"]) mounts.insert(m["mountPath"].as<std::string>());
    for (const auto& v : pod["spec"]["volumes"])
        if (v["hostPath"]) hostPaths.insert(v["hostPath"]["path"].as<std::string>());
    CHECK(cfg->procSys == "/host/proc/sys");  // runc mounts nothing inside /proc
    CHECK(mounts == std::set<std::string>{"/etc/rxtune", "/sys", cfg->procSys, cfg->stateDir, cfg->runDir});
    CHECK(hostPaths == std::set<std::string>{"/sys", "/proc/sys", "/var/lib/rxtune", "/run/rxtune"});

    REQUIRE(sm.size() == 2);
    CHECK(sm[0]["spec"]["ports"][0]["port"].as<std::string>() == port);
    CHECK(sm[1]["spec"]["endpoints"][0]["port"].as<std::string>() == c["ports"][0]["name"].as<std::string>());
}

TEST_CASE("the TLS manifests: the Secret's web config, the DaemonSet patch and the HTTPS ServiceMonitor agree", "[packaging][web]") {
    auto all = docs("web-tls.yaml");
    auto secret = kind(all, "Secret");
    auto sm = kind(all, "ServiceMonitor");
    auto patch = YAML::LoadFile((source() / "packaging/kubernetes/daemonset-tls.patch.yaml").string());
    auto base = kind(docs("daemonset.yaml"), "DaemonSet");

    const auto c = patch["spec"]["template"]["spec"]["containers"][0];
    CHECK(c["name"].as<std::string>() == base["spec"]["template"]["spec"]["containers"][0]["name"].as<std::string>());
    const auto cmd = c["command"].as<std::vector<std::string>>();
    REQUIRE(cmd.size() == 6);
    CHECK(cmd[4] == "--web.config.file");
    const fs::path webFile = cmd[5];
    CHECK(c["volumeMounts"][0]["mountPath"].as<std::string>() == webFile.parent_path().string());

    // What the projected volume holds: web.yml from rxtune-web, tls.crt and tls.key from rxtune-tls.
    std::set<std::string> files;
    for (const auto& src : patch["spec"]["template"]["spec"]["volumes"][0]["projected"]["sources"])
        for (const auto& item : src["secret"]["items"]) files.insert(item["path"].as<std::string>());
    CHECK(files == std::set<std::string>{"web.yml", "tls.crt", "tls.key"});

    // The web config parses as the daemon reads it there, and names the projected files.
    auto web = parseWebConfig(secret["stringData"]["web.yml"].as<std::string>(), webFile.string());
    REQUIRE(web);
    REQUIRE(web->tls);
    CHECK(web->tls->certFile == (webFile.parent_path() / "tls.crt").string());
    CHECK(web->tls->keyFile == (webFile.parent_path() / "tls.key").string());

    CHECK(sm["metadata"]["name"].as<std::string>() == "rxtune");  // replaces servicemonitor.yaml's
    CHECK(sm["spec"]["endpoints"][0]["scheme"].as<std::string>() == "https");
    CHECK(sm["spec"]["endpoints"][0]["tlsConfig"]["ca"]["secret"]["name"].as<std::string>() == "rxtune-tls");
    // The kubelet's probes only connect once the endpoint wants TLS.
    CHECK(c["livenessProbe"]["tcpSocket"]["port"].as<int>() == 9867);
}
