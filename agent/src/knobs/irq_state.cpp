#include "knobs/irq_state.hpp"

#include <set>

#include "inventory/irqbalance_reader.hpp"
#include "knobs/registry.hpp"
#include "sys/atomic_file.hpp"
#include "sys/files.hpp"

namespace rxtune {

std::string pinnedIrqsText(const Journal* applied) {
    std::set<int> irqs;
    if (applied) {
        Journal j = *applied;
        recoverKeys(j);
        for (const auto& s : j.applied)
            if (s.key.family == Family::kIrq && s.key.queue >= 0) irqs.insert(s.key.queue);
    }
    std::string out;
    for (int n : irqs) out += std::to_string(n) + "\n";
    return out;
}

Result<PinnedIrqsPublished> publishPinnedIrqs(const std::string& runDir, const JournalStore& store, const FileTree& root,
                                              ProcessSignals& signals) {
    auto j = store.load();
    if (!j) return failWith(j.error());
    const std::string text = pinnedIrqsText(*j ? &**j : nullptr);
    const std::string file = runDir + "/pinned-irqs";
    auto now = readFileIfExists(file);
    const bool exists = now && *now;
    const std::string before = exists ? **now : std::string();  // absent: nothing was pinned
    PinnedIrqsPublished out;
    if (exists && before == text) return out;
    if (auto d = makeDirectories(runDir); !d) return failWith(d.error());
    if (auto w = writeFileAtomic(file, text, false); !w) return failWith(w.error());
    out.changed = before != text;
    if (!out.changed) return out;
    for (int pid : irqbalanceAskingRxtune(root)) {
        if (auto r = signals.hangUp(pid, "irqbalance"); r) out.told.push_back(pid);
        else out.warnings.push_back("irqbalance (pid " + std::to_string(pid) + ") not told to rescan: " + r.error().message());
    }
    return out;
}

}  // namespace rxtune
