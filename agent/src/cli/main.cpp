// rxtune: the one-shot command line. Creates the real OS objects and hands them down.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/detect_output.hpp"
#include "knobs/registry.hpp"
#include "cli/reload.hpp"
#include "cli/status.hpp"
#include "cli/tune_commands.hpp"
#include "daemon/daemon.hpp"
#include "core/paths.hpp"
#include "inventory/snapshot.hpp"
#include "sys/file_tree.hpp"
#include "sys/netlink.hpp"

#ifndef RXTUNE_VERSION
#define RXTUNE_VERSION "0.0.0"
#endif

namespace {

int reportError(const rxtune::Error& e) {
    std::cerr << "rxtune: " << e.message() << "\n";
    return 1;
}

int runDetect(const std::vector<std::string>& interfaces, bool asJson) {
    for (const auto& name : interfaces)
        if (auto ok = rxtune::validateIfName(name); !ok) return reportError(ok.error());
    rxtune::FileTree fs("/");
    auto nl = rxtune::Netlink::open();
    if (!nl) return reportError(nl.error());
    auto snap = rxtune::detectSnapshot(fs, **nl, interfaces);
    if (!snap) return reportError(snap.error());
    // Render completely before writing so that an error never leaves half a document on stdout.
    std::string text;
    if (asJson) {
        text = rxtune::toJson(*snap).dump(2) + "\n";
    } else {
        std::ostringstream os;
        rxtune::printTable(*snap, os);
        text = os.str();
    }
    std::cout << text << std::flush;
    return std::cout ? 0 : 1;
}

// --state-dir and friends: absolute and not empty, as the daemon's configuration keys.
const CLI::Validator kAbsolutePath(
    [](std::string& s) {
        auto ok = rxtune::validateAbsolutePath(s);
        return ok ? std::string() : ok.error().detail;
    },
    "ABSOLUTE PATH");

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"rxtune: spread receive work of single-queue NICs over the right CPUs, safely"};
    app.set_version_flag("--version", std::string("rxtune ") + RXTUNE_VERSION);
    app.require_subcommand(1);

    std::vector<std::string> interfaces;
    bool asJson = false;
    auto* detect = app.add_subcommand("detect", "Show NICs, queues, IRQs, CPUs and current steering (read-only)");
    detect->add_option("-i,--interface", interfaces, "Only this interface (repeatable)");
    detect->add_flag("--json", asJson, "One JSON document with keys host and interfaces");

    rxtune::TuneOptions tune;
    auto addTuneOptions = [&](CLI::App* sub, bool withProfile) {
        if (withProfile) {
            sub->add_option("-p,--profile", tune.profile, "Profile name or path")->capture_default_str();
            sub->add_option("-i,--interface", tune.interfaces, "Steer this interface (repeatable; overrides the profile's match)");
            sub->add_option("--sample-ms", tune.sampleMs, "steering: mode: auto: how long to measure before deciding")
                ->capture_default_str()
                ->check(CLI::Range(100u, 60000u));
        }
        sub->add_flag("--json", tune.json, "JSON output");
        sub->add_option("--state-dir", tune.stateDir, "Where the journal of original values lives")->capture_default_str()->check(kAbsolutePath);
        sub->add_option("--run-dir", tune.runDir, "Where the lock file lives")->capture_default_str()->check(kAbsolutePath);
        sub->add_option("--bpf-dir", tune.bpfDir, "Where XDP steering is pinned (on a bpffs)")->capture_default_str()->check(kAbsolutePath);
    };
    auto* plan = app.add_subcommand("plan", "Show what apply would change (exit 0: nothing, 2: changes pending)");
    addTuneOptions(plan, true);
    plan->add_flag("--explain", tune.explain, "Say why each CPU was chosen or left out");
    auto* apply = app.add_subcommand("apply", "Apply a profile: journaled, all or nothing, idempotent");
    addTuneOptions(apply, true);
    auto* verify = app.add_subcommand("verify", "Check the applied settings for drift (exit 3: drift)");
    addTuneOptions(verify, false);
    auto* revert = app.add_subcommand("revert", "Restore every value rxtune changed, then clear the journal");
    addTuneOptions(revert, false);

    rxtune::StatusOptions st;
    auto* status = app.add_subcommand("status", "Where receive work happens now, and what rxtune does about it (read-only)");
    status->add_option("--interval", st.intervalMs, "Sampling interval in milliseconds")
        ->capture_default_str()
        ->check(CLI::Range(100u, 60000u));
    status->add_flag("--watch", st.watch, "Redraw in place every interval until interrupted");
    status->add_flag("--json", st.json, "One JSON document per sample, one per line");
    status->add_option("--count", st.count, "Samples to take (default: 1, or until interrupted with --watch)");
    status->add_option("--state-dir", st.stateDir, "Where the journal of original values lives")->capture_default_str()->check(kAbsolutePath);
    status->add_option("--run-dir", st.runDir, "Where the daemon keeps its status")->capture_default_str()->check(kAbsolutePath);
    status->add_option("--bpf-dir", st.bpfDir, "Where XDP steering is pinned (on a bpffs)")->capture_default_str()->check(kAbsolutePath);

    std::string configPath = "/etc/rxtune/rxtune.yaml";
    auto* daemon = app.add_subcommand("daemon", "Run the agent: keep the profile applied, serve Prometheus metrics");
    auto* configOpt = daemon->add_option("-c,--config", configPath, "Daemon configuration")->capture_default_str();
    std::string webConfigFile;
    daemon->add_option("--web.config.file", webConfigFile,
                       "The scrape endpoint's TLS and basic auth, in exporter-toolkit's web config format (overrides web_config)")
        ->check(CLI::ExistingFile);

    rxtune::ReloadOptions rl;
    auto* reload = app.add_subcommand("reload", "Ask the running daemon to reload its configuration and profile; wait for its answer "
                                                "(exit 0: reloaded, 1: refused or no daemon, 2: no answer)");
    reload->add_option("--run-dir", rl.runDir, "The daemon's run_dir (its pid file and answers)")->capture_default_str()->check(kAbsolutePath);
    reload->add_option("--timeout", rl.timeoutMs, "How long to wait for the answer, in milliseconds")
        ->capture_default_str()
        ->check(CLI::Range(100u, 600000u));

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    if (detect->parsed()) return runDetect(interfaces, asJson);
    if (plan->parsed()) return rxtune::runPlan(tune);
    if (apply->parsed()) return rxtune::runApply(tune);
    if (verify->parsed()) return rxtune::runVerify(tune);
    if (revert->parsed()) return rxtune::runRevert(tune);
    if (daemon->parsed()) {
        // Read again at each reload: absolute, whatever the working directory is then.
        if (!webConfigFile.empty()) webConfigFile = std::filesystem::absolute(webConfigFile).lexically_normal().string();
        return rxtune::runDaemon(configPath, configOpt->count() > 0, webConfigFile);
    }
    if (status->parsed()) return rxtune::runStatus(st);
    if (reload->parsed()) return rxtune::runReload(rl);
    return 1;
}
