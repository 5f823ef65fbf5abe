// The daemon as the integration tests run it: in a test namespace, with its own configuration,
// state and run directories.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "support.hpp"

namespace rxtune::itest {

// A daemon running inside a test namespace with its own config, state and run directories.
class Daemon {
public:
    // wrapper: commands run between `ip netns exec NS` and rxtune (setpriv with a capability set).
    // profile: its text; empty: RPS over the v* devices.
    // args: more of the daemon's command line (after --config).
    Daemon(const NetNs& ns, const std::string& configYaml, int port, std::vector<std::string> wrapper = {}, const std::string& profile = "",
           const std::vector<std::string>& args = {})
        : ns_(ns), port_(port) {
        std::ofstream(dir_ / "profile.yaml") << (!profile.empty() ? profile
                                                                  : "include: single-queue-gateway\n"
                                                                    "match:\n  interfaces: ['v*']\n  virtual: include\n"
                                                                    "steering:\n  mode: rps\n");
        writeConfig(configYaml);
        std::vector<std::string> argv = wrapper;
        for (const auto& x : {rxtuneBin(), std::string("daemon"), std::string("--config"), (dir_ / "rxtune.yaml").string()})
            argv.push_back(x);
        argv.insert(argv.end(), args.begin(), args.end());
        proc_ = std::make_unique<Background>(ns_, argv, dir_ / "log");
    }
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    void writeConfig(const std::string& extra) {
        std::ofstream(dir_ / "rxtune.yaml") << "profile: " << (dir_ / "profile.yaml").string() << "\n"
                                            << "listen: 127.0.0.1:" << port_ << "\n"
                                            << "state_dir: " << (dir_ / "state").string() << "\n"
                                            << "run_dir: " << (dir_ / "run").string() << "\n"
                                            << extra;
    }
    void writeRawConfig(const std::string& text) { std::ofstream(dir_ / "rxtune.yaml") << text; }
    std::string metrics() const {
        return ns_.exec({"curl", "-s", "--max-time", "5", "http://127.0.0.1:" + std::to_string(port_) + "/metrics"}).out;
    }
    // Serving metrics and done with its first reconcile (the endpoint comes up before it).
    bool ready() const;
    void signal(int sig) const { proc_->signal(sig); }
    bool alive() { return !proc_->exited(); }
    int wait() { return proc_->wait(); }
    pid_t pid() const { return proc_->pid(); }
    std::string log() const { return slurp(dir_ / "log"); }
    const std::filesystem::path& dir() const { return dir_; }

private:
    const NetNs& ns_;
    int port_;
    TempDir tmp_;  // declared before proc_: the process is killed before its directory goes
    const std::filesystem::path& dir_ = tmp_.path;
    std::unique_ptr<Background> proc_;
};

inline bool Daemon::ready() const { return sample(metrics(), "rxtune_last_apply_timestamp_seconds") > 0; }

}  // namespace rxtune::itest
