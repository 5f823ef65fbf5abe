#include "knobs/irq_state.hpp"

#include <set>

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

Result<void> publishPinnedIrqs(const std::string& runDir, const JournalStore& store) {
    auto j = store.load();
    if (!j) return failWith(j.error());
    const std::string text = pinnedIrqsText(*j ? &**j : nullptr);
    if (auto d = makeDirectories(runDir); !d) return failWith(d.error());
    return writeFileAtomic(runDir + "/pinned-irqs", text, false);
}

}  // namespace rxtune
