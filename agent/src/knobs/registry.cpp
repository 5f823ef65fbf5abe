#include "knobs/registry.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rxtune {

namespace {

struct Registered {
    const KnobFamily* family;
    int rank;
};

// Filled while the program's static objects are made (each family's unit registers its own), read
// after: a function's static, so that it exists before the first registration, whichever unit's
// objects are made first.
std::vector<Registered>& registered() {
    static std::vector<Registered> r;
    return r;
}

[[noreturn]] void defect(const std::string& what) {
    std::fprintf(stderr, "rxtune: internal error: %s\n", what.c_str());
    std::abort();
}

}  // namespace

FamilyRegistration::FamilyRegistration(const KnobFamily& family, int rank) {
    auto& r = registered();
    for (const auto& x : r)
        if (x.family->name() == family.name() || x.rank == rank)
            defect("knob family '" + std::string(family.name()) + "' (rank " + std::to_string(rank) + ") registered beside '" +
                   std::string(x.family->name()) + "' (rank " + std::to_string(x.rank) + "): names and ranks are unique");
    if (family.name() == fileFamily().name()) defect("knob family 'file' is the registry's own");
    r.insert(std::upper_bound(r.begin(), r.end(), rank, [](int v, const Registered& x) { return v < x.rank; }), {&family, rank});
}

const std::vector<const KnobFamily*>& knobFamilies() {
    // Made at the first call, after every registration (none is made once main runs).
    static const std::vector<const KnobFamily*> table = [] {
        std::vector<const KnobFamily*> t;
        for (const auto& x : registered()) t.push_back(x.family);
        return t;
    }();
    return table;
}

const KnobFamily* findFamily(std::string_view name) {
    if (name == fileFamily().name()) return &fileFamily();
    for (const KnobFamily* k : knobFamilies())
        if (k->name() == name) return k;
    return nullptr;
}

const KnobFamily& familyOf(const KnobKey& k) {
    if (const KnobFamily* f = findFamily(k.family)) return *f;
    defect("a knob of family '" + k.family + "', which this build does not have (" + k.device + " " + k.name + ")");
}

KnobKey keyOfPath(std::string_view path, std::string_view id) {
    for (const bool tree : {false, true})
        for (const KnobFamily* k : knobFamilies())
            if (k->keysAreATree() == tree)
                if (auto key = k->keyOf(path, id)) return *key;
    KnobKey plain;
    plain.name = std::string(path);
    return plain;
}

Result<void> recoverKeys(Journal& j) {
    // A stored key stands where its family builds the same path from it; where it does not (a key
    // edited by hand), the path is what revert writes, and the key is read back from it as for a
    // journal of the build before. A family this build lacks is not guessed at.
    auto settle = [&](KnobKey& key, const std::string& path, const std::string& id) -> Result<void> {
        if (key.family.empty()) {
            key = keyOfPath(path, id);
            return {};
        }
        const KnobFamily* f = findFamily(key.family);
        if (!f)
            return fail(EPROTO, "read journal", j.source,
                        "entry '" + id + "' (/" + path + ") is of knob family '" + key.family +
                            "', which this build of rxtune does not have: revert with the build that wrote it, or remove the entry");
        if (f->path(key) != path) key = keyOfPath(path, id);
        return {};
    };
    for (auto& o : j.originals)
        if (auto r = settle(o.key, o.path, o.id); !r) return r;
    for (auto& s : j.applied)
        if (auto r = settle(s.key, s.path, s.id); !r) return r;
    return {};
}

}  // namespace rxtune
