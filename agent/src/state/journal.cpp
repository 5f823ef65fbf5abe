#include "state/journal.hpp"


#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "sys/atomic_file.hpp"
#include "sys/files.hpp"

namespace rxtune {

using json = nlohmann::json;


const Original* Journal::original(const std::string& path) const {
    for (const auto& o : originals)
        if (o.path == path) return &o;
    return nullptr;
}

JournalStore::JournalStore(std::string dir) : dir_(std::move(dir)) {}

namespace {

// An integer field, or def when absent; a number that is not an integer of T's range (2.5, -1 for
// an unsigned, 1e30) is a damaged journal: converting it would be undefined behaviour (the fuzzer
// found `"version": 2222...2`).
template <class T>
T integerField(const json& j, const char* key, T def) {
    auto it = j.find(key);
    if (it == j.end()) return def;
    if (it->is_number_unsigned()) {
        const auto v = it->get<std::uint64_t>();
        if (v <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(v);
    } else if (it->is_number_integer()) {
        const auto v = it->get<std::int64_t>();
        if (v >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
            (v < 0 || static_cast<std::uint64_t>(v) <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
            return static_cast<T>(v);
    }
    throw json::type_error::create(302, std::string("'") + key + "' is not an integer in range", it.operator->());
}

// An entry's typed key, where it has one (a journal of the build before has none: its key is then
// recovered from the path, knobs/registry.cpp's recoverKeys). family "" marks "not stored".
KnobKey keyField(const json& entry) {
    KnobKey k;
    k.family.clear();
    auto it = entry.find("key");
    if (it == entry.end()) return k;
    const json& j = *it;
    k.family = j.at("family").get<std::string>();
    if (k.family.empty()) throw json::type_error::create(302, "a key without its family", &j);
    k.device = j.value("device", "");
    k.name = j.value("name", "");
    k.queue = integerField<int>(j, "queue", -1);
    k.tx = j.value("tx", false);
    k.cpu = integerField<int>(j, "cpu", -1);
    k.irq = integerField<int>(j, "irq", -1);
    return k;
}

}  // namespace

Result<Journal> parseJournal(std::string_view text, std::optional<std::string_view> mark, const std::string& path) {
    // revert writes each original back to its path: one that could leave the FileTree's root
    // (absolute, or through "..") or reach beyond the kernel's files is refused with the journal.
    auto checkedPath = [&](const std::string& p) -> bool {
        if (!(p.starts_with("sys/") || p.starts_with("proc/"))) return false;
        for (const auto& part : splitOn(p, '/'))
            if (part.empty() || part == "." || part == "..") return false;
        return true;
    };
    try {
        json j = json::parse(text);
        if (!j.contains("version")) throw json::out_of_range::create(403, "key 'version' not found", &j);
        if (integerField<int>(j, "version", 0) != 1) return fail(EINVAL, "parse", path, "unknown journal version");
        Journal out;
        out.state = j.at("state").get<std::string>();
        out.generation = integerField<std::uint64_t>(j, "generation", 0);
        out.pid = integerField<long>(j, "pid", 0);
        out.profile = j.value("profile", "");
        out.appliedAt = j.value("applied_at", "");
        // The completion mark of this very generation says the apply finished.
        if (mark) {
            try {
                json m = json::parse(*mark);
                if (m.is_object() && m.contains("generation") && integerField<std::uint64_t>(m, "generation", 0) == out.generation) {
                    out.state = "applied";
                    out.appliedAt = m.at("applied_at").get<std::string>();
                }
            } catch (const json::exception&) {
                // Torn by a power cut (it is never fsynced): the apply reads as interrupted.
            }
        }
        for (const auto& o : j.at("originals")) {
            Original e{o.at("id"), o.at("path"), ValueKind::kWord, o.at("value"), keyField(o)};
            if (!parseValueKind(o.at("kind").get<std::string>(), e.kind))
                return fail(EINVAL, "parse", path, "unknown value kind");
            if (!checkedPath(e.path)) return fail(EINVAL, "parse", path, "original of '" + e.id + "' at a path outside sys/ and proc/: '" + e.path + "'");
            out.originals.push_back(std::move(e));
        }
        for (const auto& s : j.at("applied")) {
            Setting st;
            st.id = s.at("id");
            st.path = s.at("path");
            st.desired = s.at("desired");
            st.key = keyField(s);
            if (!parseValueKind(s.at("kind").get<std::string>(), st.kind))
                return fail(EINVAL, "parse", path, "unknown value kind");
            if (!checkedPath(st.path)) return fail(EINVAL, "parse", path, "setting '" + st.id + "' at a path outside sys/ and proc/: '" + st.path + "'");
            out.applied.push_back(std::move(st));
        }
        return out;
    } catch (const json::exception& e) {
        // A torn journal cannot happen (rename is atomic); a damaged one is reported, never ignored.
        return fail(EINVAL, "parse", path, std::string("damaged journal: ") + e.what());
    }
}

Result<std::optional<Journal>> JournalStore::load() const {
    auto text = readFileIfExists(path());
    if (!text) return failWith(text.error());
    if (!*text) return std::optional<Journal>{};
    auto mark = readFileIfExists(markPath());
    std::optional<std::string_view> markText;
    if (mark && *mark) markText = **mark;
    auto j = parseJournal(**text, markText, path());
    if (!j) return failWith(j.error());
    return std::optional<Journal>(std::move(*j));
}

namespace {

// A JSON string. The journal's texts are sysfs and procfs contents: printable ASCII with newlines
// and tabs, escaped here; anything else (other control bytes, UTF-8) goes through the JSON
// library, which escapes it the same way and refuses what is not UTF-8 (a journal the parser could
// not read back would lose the originals it holds). Returns false for such a value.
bool appendString(std::string& out, std::string_view s) {
    const bool plain = std::all_of(s.begin(), s.end(), [](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return (c >= 0x20 && c < 0x80) || c == '\n' || c == '\t';
    });
    if (!plain) {
        try {
            out += json(std::string(s)).dump();
            return true;
        } catch (const json::type_error&) {  // 316: invalid UTF-8
            return false;
        }
    }
    out += '"';
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default: out += c;
        }
    }
    out += '"';
    return true;
}

}  // namespace

// Written by hand, one entry per line: with thousands of devices the journal holds thousands of
// entries, and a JSON document built in memory first cost more than the fsync (the apply waits
// for it before its first write). JournalStore::load reads it with the JSON parser.
Result<void> JournalStore::save(const Journal& jr) const {
    std::string out;
    out.reserve(256 + 160 * (jr.originals.size() + jr.applied.size()));
    bool ok = true;
    auto field = [&](const char* key, std::string_view value, const char* after) {
        out += '"';
        out += key;
        out += "\": ";
        ok = appendString(out, value) && ok;
        out += after;
    };
    out += "{\n \"version\": 1,\n ";
    field("state", jr.state, ",\n ");
    out += "\"generation\": " + std::to_string(jr.generation) + ",\n \"pid\": " + std::to_string(jr.pid) + ",\n ";
    field("profile", jr.profile, ",\n ");
    field("applied_at", jr.appliedAt, ",\n \"originals\": [");
    // The typed key: its family and the fields it uses (the others are their defaults).
    auto appendKey = [&](const KnobKey& k) {
        out += "\"key\": {";
        field("family", k.family, "");
        if (!k.device.empty()) {
            out += ", ";
            field("device", k.device, "");
        }
        if (!k.name.empty()) {
            out += ", ";
            field("name", k.name, "");
        }
        if (k.queue >= 0) out += ", \"queue\": " + std::to_string(k.queue);
        if (k.tx) out += ", \"tx\": true";
        if (k.cpu >= 0) out += ", \"cpu\": " + std::to_string(k.cpu);
        if (k.irq >= 0) out += ", \"irq\": " + std::to_string(k.irq);
        out += '}';
    };
    // One entry per line: id, path, kind, the entry's value under `valueKey` and its key.
    auto entries = [&](const auto& items, const char* valueKey, const auto& valueOf) {
        for (size_t i = 0; i < items.size(); ++i) {
            out += i ? ",\n  {" : "\n  {";
            field("id", items[i].id, ", ");
            field("path", items[i].path, ", ");
            field("kind", toString(items[i].kind), ", ");
            field(valueKey, valueOf(items[i]), ", ");
            appendKey(items[i].key);
            out += '}';
        }
        out += items.empty() ? "]" : "\n ]";
    };
    entries(jr.originals, "value", [](const Original& o) -> const std::string& { return o.value; });
    out += ",\n \"applied\": [";
    entries(jr.applied, "desired", [](const Setting& a) -> const std::string& { return a.desired; });
    out += "\n}\n";
    if (!ok) return fail(EINVAL, "save", path(), "a value is not valid UTF-8; nothing was written");
    return writeFileAtomic(path(), out, true);
}

Result<void> JournalStore::markApplied(std::uint64_t generation, const std::string& at) const {
    return writeFileAtomic(markPath(), json{{"generation", generation}, {"applied_at", at}}.dump() + "\n", false);
}

Result<void> JournalStore::remove() const {
    // The mark first: a mark without a journal is nothing; a journal without its mark is an
    // interrupted apply, which is still safe.
    return removeFilesDurable({markPath(), path()}, dir_);
}

}  // namespace rxtune
