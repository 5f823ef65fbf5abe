#include "profile/section.hpp"

#include <algorithm>

namespace rxtune {

namespace {

std::vector<ProfileSection>& table() {
    static std::vector<ProfileSection> t;
    return t;
}

}  // namespace

SectionRegistration::SectionRegistration(std::vector<ProfileSection> sections) {
    auto& t = table();
    for (auto& s : sections) {
        // The same file linked twice (a static library that took the objects in, and the whole
        // archive beside it) registers once.
        if (std::any_of(t.begin(), t.end(), [&](const ProfileSection& o) { return o.path() == s.path(); })) continue;
        t.push_back(std::move(s));
    }
    // By path: the loader's "expected one of" lists and its merge order do not follow link order.
    std::sort(t.begin(), t.end(), [](const ProfileSection& a, const ProfileSection& b) { return a.path() < b.path(); });
}

const std::vector<ProfileSection>& profileSections() { return table(); }

}  // namespace rxtune
