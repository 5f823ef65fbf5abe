// /proc/irq as the kernel keeps it, on a fixture tree, for the IRQ family's and the daemon's tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "core/cpuset.hpp"
#include "sys/file_tree.hpp"

namespace rxtune::test {

// A write to smp_affinity_list moves effective_affinity_list to the list's first CPU: at once, or,
// `lazy`, at the IRQ's next interrupt (fire()), as an x86 MSI vector without interrupt remapping
// does. A managed IRQ refuses the write with EIO (each refusal counted).
class KernelIrqTree final : public FileTree {
public:
    explicit KernelIrqTree(std::string root, std::set<unsigned> managed = {}, bool lazy = false)
        : FileTree(std::move(root)), managed_(std::move(managed)), lazy_(lazy) {}
    int refusals = 0;

    Result<void> write(const std::string& rel, const std::string& value) override {
        if (!rel.starts_with("proc/irq/") || !rel.ends_with("/smp_affinity_list")) return FileTree::write(rel, value);
        const unsigned irq = static_cast<unsigned>(std::stoul(rel.substr(9)));
        if (managed_.count(irq)) {
            ++refusals;
            return fail(EIO, "write", full(rel));
        }
        auto set = CpuSet::parseList(value);
        if (!set || set->empty()) return fail(EINVAL, "write", full(rel));
        if (auto r = FileTree::write(rel, set->toList()); !r) return r;
        return lazy_ ? Result<void>() : moveEffective(irq, *set);
    }

    // The IRQ's next interrupt: served where it is effective now (sys/kernel/irq/N/per_cpu_count
    // counts it), then a pending move lands; `moves`: false for a controller that never moves it.
    void fire(unsigned irq, bool moves = true) {
        const std::string dir = "proc/irq/" + std::to_string(irq) + "/";
        const auto at = CpuSet::parseList(read(dir + "effective_affinity_list").value()).value();
        auto& counts = served_[irq];
        for (unsigned cpu : at.cpus()) ++counts[cpu];
        std::string text;
        const unsigned last = counts.rbegin()->first;
        for (unsigned cpu = 0; cpu <= last; ++cpu) text += (cpu ? "," : "") + std::to_string(counts[cpu]);
        const std::filesystem::path count = full("sys/kernel/irq/" + std::to_string(irq) + "/per_cpu_count");
        std::filesystem::create_directories(count.parent_path());
        std::ofstream(count, std::ios::trunc) << text << "\n";
        if (moves) (void)moveEffective(irq, CpuSet::parseList(read(dir + "smp_affinity_list").value()).value());
    }

private:
    Result<void> moveEffective(unsigned irq, const CpuSet& to) {
        return FileTree::write("proc/irq/" + std::to_string(irq) + "/effective_affinity_list", std::to_string(to.cpus().front()));
    }
    std::set<unsigned> managed_;
    bool lazy_;
    std::map<unsigned, std::map<unsigned, std::uint64_t>> served_;
};

}  // namespace rxtune::test
