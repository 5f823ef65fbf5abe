// The kernel's side of threaded NAPI on a fixture tree, for the unit tests of families and apply.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "sys/file_tree.hpp"
#include "sys/napi_threads.hpp"
#include "fixture.hpp"

namespace rxtune::test {

// The kernel's side of threaded NAPI on a fixture tree: writing 1 to `threaded` starts one
// kthread per RX queue (proc/<pid>/comm and status), 0 stops them; affinity lives in status.
class FakeThreads final : public NapiThreads {
public:
    explicit FakeThreads(const TempTree& tree) : tree_(tree), fs_(tree.path().string()) {}
    Result<std::vector<NapiInfo>> of(const std::string& ifname) override {
        sync(ifname);
        auto found = scanNapiThreads(fs_, ifname);
        if (!found) return failWith(found.error());
        for (auto& n : *found)
            if (auto a = readTaskAffinity(fs_, n.pid)) n.affinity = *a;
        return found;
    }
    Result<void> setAffinity(int pid, const CpuSet& cpus) override {
        ++calls;
        if (failWith_) return fail(EINVAL, "sched_setaffinity", "pid " + std::to_string(pid));
        writeStatus(pid, "napi", cpus);
        return {};
    }
    int calls = 0;
    bool failWith_ = false;

private:
    void writeStatus(int pid, const std::string& name, const CpuSet& cpus) const {
        tree_.put("proc/" + std::to_string(pid) + "/status",
                  "Name:\t" + name + "\nPPid:\t2\nCpus_allowed:\t" + cpus.toMask() + "\n");
    }
    void sync(const std::string& ifname) const {
        auto t = fs_.read("sys/class/net/" + ifname + "/threaded");
        const bool on = t && trimmed(*t) == "1";
        auto existing = scanNapiThreads(fs_, ifname);
        if (on && existing && existing->empty()) {
            tree_.put("proc/900/comm", "napi/" + ifname + "-8193\n");
            writeStatus(900, "napi/" + ifname + "-8193", CpuSet::parseList("0-19").value());
        }
        if (!on && existing)
            for (const auto& n : *existing) std::filesystem::remove_all(tree_.path() / "proc" / std::to_string(n.pid));
    }
    const TempTree& tree_;
    FileTree fs_;
};

}  // namespace rxtune::test
