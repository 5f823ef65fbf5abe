// libFuzzer target: the journal loader (what revert and a crashed apply's recovery read) turns any
// text into a journal or an error, never crashes, and never hands revert a path outside sys/ and
// proc/; and where its fast reader (straight into the structs) takes a text, the reference reader
// (a JSON document tree, which decides every other text) reads the very same journal from it.
// The input's first line, where there is one, is the completion mark.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/text.hpp"
#include "state/journal.hpp"

namespace {

bool same(const rxtune::Journal& a, const rxtune::Journal& b) {
    auto sameOriginal = [](const rxtune::Original& x, const rxtune::Original& y) {
        return x.id == y.id && x.path == y.path && x.kind == y.kind && x.value == y.value && x.key == y.key;
    };
    auto sameSetting = [](const rxtune::Setting& x, const rxtune::Setting& y) {
        return x.id == y.id && x.path == y.path && x.kind == y.kind && x.desired == y.desired && x.key == y.key &&
               x.current == y.current && x.why == y.why && x.raw == y.raw;
    };
    if (a.state != b.state || a.generation != b.generation || a.pid != b.pid || a.profile != b.profile ||
        a.appliedAt != b.appliedAt || a.originals.size() != b.originals.size() || a.applied.size() != b.applied.size())
        return false;
    for (std::size_t i = 0; i < a.originals.size(); ++i)
        if (!sameOriginal(a.originals[i], b.originals[i])) return false;
    for (std::size_t i = 0; i < a.applied.size(); ++i)
        if (!sameSetting(a.applied[i], b.applied[i])) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    std::optional<std::string_view> mark;
    if (auto nl = text.find('\n'); nl != std::string_view::npos) {
        mark = text.substr(0, nl);
        text.remove_prefix(nl + 1);
    }
    auto j = rxtune::parseJournal(text, mark, "journal.json");
    if (auto fast = rxtune::parseJournalFast(text, mark)) {
        auto reference = rxtune::parseJournalReference(text, mark, "journal.json");
        if (!reference || !same(*fast, *reference)) std::abort();
    }
    if (!j) return 0;
    for (const auto& o : j->originals) {
        if (!(o.path.starts_with("sys/") || o.path.starts_with("proc/"))) std::abort();
        for (const auto& part : rxtune::splitOn(o.path, '/'))
            if (part.empty() || part == "." || part == "..") std::abort();
    }
    return 0;
}
