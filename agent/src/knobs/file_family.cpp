// A plain file under the tree that no family claims: what a journal entry of an unknown path
// (or a test's made-up knob) is read and written as.
#include "knobs/registry.hpp"

namespace rxtune {

namespace {

class FileFamily final : public KnobFamily {
public:
    std::string_view name() const override { return "file"; }
    std::string id(const KnobKey& k) const override { return k.name; }
    std::string path(const KnobKey& k) const override { return k.name; }
    std::optional<KnobKey> keyOf(std::string_view, std::string_view) const override { return std::nullopt; }
};

}  // namespace

const KnobFamily& fileFamily() {
    static const FileFamily f;
    return f;
}

}  // namespace rxtune
