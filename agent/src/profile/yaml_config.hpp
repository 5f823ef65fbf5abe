// The one set of YAML rules for everything rxtune reads (profiles, the daemon's configuration,
// rxtune-dp's): a located error thrown from deep in a parse and turned into
// `file:line:col: key: what` at the top, one boolean, number and duration syntax, unique keys in
// every mapping, and no empty documents.
#pragma once

#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/paths.hpp"
#include "core/result.hpp"
#include "sys/files.hpp"

namespace rxtune::yamlcfg {

struct ConfigError {
    YAML::Mark mark;
    std::string key, what;
};

[[noreturn]] inline void bad(const YAML::Node& n, const std::string& key, const std::string& what) {
    throw ConfigError{n.Mark(), key, what};
}

inline std::string scalar(const YAML::Node& n, const std::string& key) {
    if (!n.IsScalar()) bad(n, key, "expected a string");
    return n.Scalar();
}

// YAML 1.2's booleans only: true or false. (yes/no/on/off are YAML 1.1 and read as strings by
// every 1.2 tool; accepting them in one file and not in the next was a trap.)
inline bool boolean(const YAML::Node& n, const std::string& key) {
    if (!n.IsScalar()) bad(n, key, "expected true or false");
    const std::string& s = n.Scalar();
    if (s == "true") return true;
    if (s == "false") return false;
    bad(n, key, "expected true or false, got '" + s + "'");
}

// An integer from lo to hi (both included); anything else is a located error naming the range.
template <class T>
T integer(const YAML::Node& n, const std::string& key, T lo, T hi) {
    const std::string s = scalar(n, key);
    T v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi)
        bad(n, key, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" + s + "'");
    return v;
}

// A finite decimal number and what follows it ("15s" -> 15, "s"); nan and inf are errors, since
// every range check against NaN passes.
inline double finite(const YAML::Node& n, const std::string& key, const std::string& s, std::string& rest,
                     const std::string& expected) {
    const char* begin = s.c_str();
    char* end = nullptr;
    const double d = std::strtod(begin, &end);
    if (s.empty() || end == begin || !std::isfinite(d)) bad(n, key, "expected " + expected + ", got '" + s + "'");
    rest = end;
    return d;
}

// 0.6, or "60%"; from 0 to 1.
inline double fraction(const YAML::Node& n, const std::string& key) {
    std::string v = scalar(n, key), rest;
    const bool percent = !v.empty() && v.back() == '%';
    if (percent) v.pop_back();
    double d = finite(n, key, v, rest, "a fraction such as 0.6 or 60%");
    if (!rest.empty()) bad(n, key, "expected a fraction such as 0.6 or 60%, got '" + n.Scalar() + "'");
    if (percent) d /= 100;
    if (d < 0 || d > 1) bad(n, key, "must be between 0 and 1 (0% and 100%), got '" + n.Scalar() + "'");
    return d;
}

// "15s", "500ms", "5m" or a bare number of seconds, from lo to hi seconds.
inline double seconds(const YAML::Node& n, const std::string& key, double lo, double hi) {
    const std::string v = scalar(n, key);
    std::string unit;
    double d = finite(n, key, v, unit, "a duration such as 15s, 500ms or 5m");
    if (unit == "ms") d /= 1000;
    else if (unit == "m") d *= 60;
    else if (!unit.empty() && unit != "s") bad(n, key, "unknown unit '" + unit + "' (use ms, s or m)");
    if (d < lo || d > hi) {
        auto num = [](double x) {
            std::string t = std::to_string(x);
            t.erase(t.find_last_not_of('0') + 1);
            if (!t.empty() && t.back() == '.') t.pop_back();
            return t;
        };
        bad(n, key, "must be from " + num(lo) + " to " + num(hi) + " seconds, got '" + v + "'");
    }
    return d;
}

// Every key of the mapping n must be one of `keys`; the error lists them.
inline void requireKeys(const YAML::Node& n, const std::string& where, const std::set<std::string>& keys) {
    if (!n.IsMap()) bad(n, where, "expected a mapping");
    for (const auto& kv : n) {
        const auto k = kv.first.as<std::string>();
        if (keys.count(k)) continue;
        std::string list;
        for (const auto& a : keys) list += (list.empty() ? "" : ", ") + a;
        bad(kv.first, where.empty() ? k : where + "." + k, "unknown key (expected one of: " + list + ")");
    }
}

// The limits every configuration document holds to (README "Limits of a configuration file").
// yaml-cpp parses an alias as a second reference to its anchor's node, so parsing is linear in the
// text, but every walk that follows reaches an aliased node once per use: ten lines of nested
// aliases ("billion laughs") hold 9^10 nodes. The first walk below counts nodes the way every later
// reader reaches them and stops at kMaxNodes, so no later walk can visit more.
constexpr std::size_t kMaxDocumentBytes = 1 << 20;  // 1 MiB
constexpr unsigned kMaxDepth = 64;                  // nested mappings and sequences
constexpr std::size_t kMaxNodes = 100000;           // nodes visited, an alias counted at each use

namespace detail {

// The walk keeps the keys that lead to the node on a stack and spells the path out only for an
// error: at 100000 visits, building it at each one was most of the walk's cost.
struct Walk {
    std::size_t visited = 0;
    std::vector<const std::string*> keys;
    std::string path() const {
        std::string p;
        for (const std::string* k : keys) p += (p.empty() ? "" : ".") + *k;
        return p;
    }
};

// yaml-cpp keeps both entries of a key given twice and lookups see the last: YAML forbids it.
inline void checkNode(const YAML::Node& n, unsigned depth, Walk& w) {
    if (++w.visited > kMaxNodes)
        bad(n, w.path(), "the document has more than " + std::to_string(kMaxNodes) +
                             " nodes once its aliases are expanded (each use of an alias counts its whole anchor)");
    if (depth > kMaxDepth) bad(n, w.path(), "nested more than " + std::to_string(kMaxDepth) + " levels deep");
    if (n.IsSequence()) {
        for (const auto& e : n) checkNode(e, depth + 1, w);
        return;
    }
    if (!n.IsMap()) return;
    static const std::string kComplexKey;
    // Most mappings are small: a linear look among the keys seen so far costs less than a hash
    // set, which takes over from the 32nd key (a 1 MiB mapping of 100000 keys stays linear).
    constexpr std::size_t kLinear = 32;
    std::vector<std::pair<const std::string*, YAML::Mark>> seen;
    std::unordered_map<std::string_view, YAML::Mark> many;
    for (const auto& kv : n) {
        const std::string* k = kv.first.IsScalar() ? &kv.first.Scalar() : &kComplexKey;
        w.keys.push_back(k);
        if (kv.first.IsScalar()) {
            const YAML::Mark* before = nullptr;
            if (seen.size() < kLinear) {
                for (const auto& [other, mark] : seen)
                    if (*other == *k) before = &mark;
                if (!before) seen.emplace_back(k, kv.first.Mark());
                if (seen.size() == kLinear)
                    for (const auto& [key, mark] : seen) many.emplace(*key, mark);
            } else if (auto [it, fresh] = many.emplace(*k, kv.first.Mark()); !fresh) {
                before = &it->second;
            }
            if (before)
                bad(kv.first, w.path(), "duplicate key: already given on line " + std::to_string(before->line + 1) +
                                            " (a key may appear once in a mapping)");
        } else {
            checkNode(kv.first, depth + 1, w);  // a complex key is walked and counted too
        }
        checkNode(kv.second, depth + 1, w);
        w.keys.pop_back();
    }
}

}  // namespace detail

// Unique keys in every mapping, at most kMaxDepth levels and kMaxNodes nodes (aliases expanded).
inline void requireUniqueKeys(const YAML::Node& n) {
    detail::Walk w;
    detail::checkNode(n, 0, w);
}

// The document of a configuration file: at most kMaxDocumentBytes, parsed, within the limits
// above, keys unique everywhere, and not empty (0 bytes or comments only is almost always a
// truncated write or a wrong path, never an intended no-op).
inline YAML::Node loadDocument(const std::string& text, const std::string& what) {
    if (text.size() > kMaxDocumentBytes)
        throw ConfigError{YAML::Mark::null_mark(), "",
                          what + " of " + std::to_string(text.size()) + " bytes: the limit is " +
                              std::to_string(kMaxDocumentBytes) + " bytes"};
    YAML::Node root = YAML::Load(text);
    if (root.IsNull())
        throw ConfigError{root.Mark(), "", "empty " + what + " (no settings at all: a truncated write or a wrong path?)"};
    requireUniqueKeys(root);
    return root;
}

// A path-valued key: absolute and not empty (an empty state_dir once put the journal at
// /journal.json). The value as given.
inline std::string absolutePath(const YAML::Node& n, const std::string& key) {
    const std::string v = scalar(n, key);
    if (auto ok = validateAbsolutePath(v); !ok) bad(n, key, ok.error().detail);
    return v;
}

// A configuration file's text, read up to one byte past kMaxDocumentBytes (so that loadDocument
// refuses it) however large the file, pipe or device behind the path is.
inline Result<std::string> readDocumentFile(const std::string& path) { return readFileBounded(path, kMaxDocumentBytes); }

inline std::string where(const std::string& file, const YAML::Mark& m) {
    // An empty document has no position; name the file alone.
    if (m.line < 0) return file;
    return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

inline tl::unexpected<Error> located(const std::string& file, const YAML::Mark& m, const std::string& key,
                                     const std::string& what) {
    const std::string at = where(file, m);
    return fail(EINVAL, key.empty() ? at : at + ": " + key, "", what);
}

}  // namespace rxtune::yamlcfg
