// libFuzzer target: the journal loader (what revert and a crashed apply's recovery read) turns any
// text into a journal or an error, never crashes, and never hands revert a path outside sys/ and
// proc/. The input's first line, where there is one, is the completion mark.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/text.hpp"
#include "state/journal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    std::optional<std::string_view> mark;
    if (auto nl = text.find('\n'); nl != std::string_view::npos) {
        mark = text.substr(0, nl);
        text.remove_prefix(nl + 1);
    }
    auto j = rxtune::parseJournal(text, mark, "journal.json");
    if (!j) return 0;
    for (const auto& o : j->originals) {
        if (!(o.path.starts_with("sys/") || o.path.starts_with("proc/"))) std::abort();
        for (const auto& part : rxtune::splitOn(o.path, '/'))
            if (part.empty() || part == "." || part == "..") std::abort();
    }
    return 0;
}
