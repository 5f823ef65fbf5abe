#include "state/journal.hpp"


#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "sys/atomic_file.hpp"
#include "sys/files.hpp"

namespace rxtune {

using Json = nlohmann::json;  // not `json`: cli/detect_output.cpp's is the ordered one (a unity build joins them)


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
T integerField(const Json& j, const char* key, T def) {
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
    throw Json::type_error::create(302, std::string("'") + key + "' is not an integer in range", it.operator->());
}

// An entry's typed key, where it has one (a journal of the build before has none: its key is then
// recovered from the path, knobs/registry.cpp's recoverKeys). family "" marks "not stored".
KnobKey keyField(const Json& entry) {
    KnobKey k;
    k.family.clear();
    auto it = entry.find("key");
    if (it == entry.end()) return k;
    const Json& j = *it;
    k.family = j.at("family").get<std::string>();
    if (k.family.empty()) throw Json::type_error::create(302, "a key without its family", &j);
    k.device = j.value("device", "");
    k.name = j.value("name", "");
    k.queue = integerField<int>(j, "queue", -1);
    k.tx = j.value("tx", false);
    k.cpu = integerField<int>(j, "cpu", -1);
    k.irq = integerField<int>(j, "irq", -1);
    k.napi = integerField<int>(j, "napi", -1);
    return k;
}

// revert writes each original back to its path: one that could leave the FileTree's root
// (absolute, or through "..") or reach beyond the kernel's files is refused with the journal.
bool checkedPath(const std::string& p) {
    if (!(p.starts_with("sys/") || p.starts_with("proc/"))) return false;
    for (const auto& part : splitOn(p, '/'))
        if (part.empty() || part == "." || part == "..") return false;
    return true;
}

// The completion mark of this very generation says the apply finished.
void applyMark(Journal& out, std::optional<std::string_view> mark) {
    if (!mark) return;
    try {
        Json m = Json::parse(*mark);
        if (m.is_object() && m.contains("generation") && integerField<std::uint64_t>(m, "generation", 0) == out.generation) {
            out.state = "applied";
            out.appliedAt = m.at("applied_at").get<std::string>();
        }
    } catch (const Json::exception&) {
        // Torn by a power cut (it is never fsynced): the apply reads as interrupted.
    }
}

// An integer of T's range, as integerField takes it: false for anything else.
template <class T>
bool fits(std::uint64_t v, T& out) {
    if (v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
    out = static_cast<T>(v);
    return true;
}
template <class T>
bool fits(std::int64_t v, T& out) {
    if (v >= 0) return fits(static_cast<std::uint64_t>(v), out);
    if (v < static_cast<std::int64_t>(std::numeric_limits<T>::min())) return false;
    out = static_cast<T>(v);
    return true;
}

// The journal read straight into its structs (nlohmann's SAX interface), without the document
// tree parseJournalReference builds: with thousands of entries the tree and its conversion were
// half of a verify. It takes the journal only in the shape its writer gives it, each key once
// and of its type, and every check passed (version, kinds, paths); anything else (damage, an
// unknown key, a journal another build wrote differently) makes it give up, and the reference
// parser reads the text again, so what is accepted, what is refused and every message are the
// reference's by construction; where it takes a text, tests/fuzz/journal_fuzz.cpp checks that the
// reference reads the very same journal from it.
class JournalReader {
public:
    using number_integer_t = Json::number_integer_t;
    using number_unsigned_t = Json::number_unsigned_t;
    using number_float_t = Json::number_float_t;
    using string_t = Json::string_t;
    using binary_t = Json::binary_t;

    // True when the whole text was a journal of the writer's shape that passes every check.
    bool complete() const { return level_ == kDone; }
    Journal take() { return std::move(out_); }

    bool null() { return false; }
    bool binary(binary_t&) { return false; }
    bool number_float(number_float_t, const string_t&) { return false; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

    bool boolean(bool v) {
        if (take(kTx) == kNone) return false;
        key_.tx = v;
        return true;
    }
    bool number_unsigned(number_unsigned_t v) { return integer(v); }
    bool number_integer(number_integer_t v) { return integer(v); }

    bool string(string_t& v) {
        switch (take(kNone)) {
            case kState: out_.state = std::move(v); return true;
            case kProfile: out_.profile = std::move(v); return true;
            case kAppliedAt: out_.appliedAt = std::move(v); return true;
            case kNetns: out_.netns = std::move(v); return true;
            case kId: id_ = std::move(v); return true;
            case kPath: path_ = std::move(v); return true;
            case kKind: return parseValueKind(v, kind_);
            case kValue: value_ = std::move(v); return true;
            case kFamily: key_.family = std::move(v); return !key_.family.empty();
            case kDevice: key_.device = std::move(v); return true;
            case kName: key_.name = std::move(v); return true;
            default: return false;
        }
    }

    bool start_object(std::size_t) {
        if (level_ == kBefore) {
            level_ = kTop;
        } else if (level_ == kArray && slot_ == kNone) {
            level_ = kEntry;
            seen_ = 0;
            key_ = KnobKey{};
            key_.family.clear();
        } else if (level_ == kEntry && slot_ == kKey) {
            level_ = kKeyObject;
            slot_ = kNone;
            key_.family.clear();
        } else {
            return false;
        }
        return true;
    }

    bool key(string_t& k) {
        static constexpr std::pair<std::string_view, Slot> kTopKeys[] = {
            {"version", kVersion}, {"state", kState}, {"generation", kGeneration}, {"pid", kPid},
            {"profile", kProfile}, {"applied_at", kAppliedAt}, {"netns", kNetns}, {"originals", kOriginals}, {"applied", kApplied}};
        static constexpr std::pair<std::string_view, Slot> kEntryKeys[] = {
            {"id", kId}, {"path", kPath}, {"kind", kKind}, {"key", kKey}};
        static constexpr std::pair<std::string_view, Slot> kKeyKeys[] = {
            {"family", kFamily}, {"device", kDevice}, {"name", kName}, {"queue", kQueue},
            {"tx", kTx}, {"cpu", kCpu}, {"irq", kIrq}, {"napi", kNapi}};
        auto find = [&](const auto& table) {
            for (const auto& [name, slot] : table)
                if (name == k) return slot;
            return kNone;
        };
        Slot s = kNone;
        if (level_ == kTop) s = find(kTopKeys);
        else if (level_ == kEntry) s = k == (inApplied_ ? "desired" : "value") ? kValue : find(kEntryKeys);
        else if (level_ == kKeyObject) s = find(kKeyKeys);
        const auto bit = 1u << s;
        if (s == kNone || (seen_ & bit)) return false;  // unknown, or said twice: the reference decides
        seen_ |= bit;
        slot_ = s;
        return true;
    }

    bool end_object() {
        if (level_ == kKeyObject) {
            level_ = kEntry;
            return (seen_ & (1u << kFamily)) != 0;
        }
        if (level_ == kEntry) {
            level_ = kArray;
            constexpr auto need = (1u << kId) | (1u << kPath) | (1u << kKind) | (1u << kValue);
            if ((seen_ & need) != need || !checkedPath(path_)) return false;
            if (inApplied_) {
                Setting s;
                s.id = std::move(id_);
                s.path = std::move(path_);
                s.kind = kind_;
                s.desired = std::move(value_);
                s.key = std::move(key_);
                out_.applied.push_back(std::move(s));
            } else {
                out_.originals.push_back(Original{std::move(id_), std::move(path_), kind_, std::move(value_), std::move(key_)});
            }
            return true;
        }
        if (level_ == kTop) {
            level_ = kDone;
            constexpr auto need = (1u << kVersion) | (1u << kState) | (1u << kOriginals) | (1u << kApplied);
            return (seen_ & need) == need && version_ == 1;
        }
        return false;
    }

    bool start_array(std::size_t) {
        if (level_ != kTop || (slot_ != kOriginals && slot_ != kApplied)) return false;
        inApplied_ = slot_ == kApplied;
        topSeen_ = seen_;
        slot_ = kNone;
        level_ = kArray;
        return true;
    }

    bool end_array() {
        if (level_ != kArray) return false;
        level_ = kTop;
        seen_ = topSeen_;
        return true;
    }

private:
    enum Level { kBefore, kTop, kArray, kEntry, kKeyObject, kDone };
    // What the value after a key goes to; a bit each in seen_ (the keys of the object being read).
    enum Slot : unsigned {
        kNone, kVersion, kState, kGeneration, kPid, kProfile, kAppliedAt, kNetns, kOriginals, kApplied,
        kId, kPath, kKind, kValue, kKey, kFamily, kDevice, kName, kQueue, kTx, kCpu, kIrq, kNapi };

    // The slot a value fills, cleared; kNone where a value of this kind does not belong (`only`
    // names the one slot that may take it, kNone: any).
    Slot take(Slot only) {
        const Slot s = slot_;
        slot_ = kNone;
        return only == kNone || s == only ? s : kNone;
    }

    template <class N>
    bool integer(N v) {
        switch (take(kNone)) {
            case kVersion: return fits(v, version_);
            case kGeneration: return fits(v, out_.generation);
            case kPid: return fits(v, out_.pid);
            case kQueue: return fits(v, key_.queue);
            case kCpu: return fits(v, key_.cpu);
            case kIrq: return fits(v, key_.irq);
            case kNapi: return fits(v, key_.napi);
            default: return false;
        }
    }

    Journal out_;
    Level level_ = kBefore;
    Slot slot_ = kNone;
    unsigned seen_ = 0, topSeen_ = 0;
    bool inApplied_ = false;
    int version_ = 0;
    std::string id_, path_, value_;
    ValueKind kind_ = ValueKind::kWord;
    KnobKey key_;
};

}  // namespace

Result<Journal> parseJournalReference(std::string_view text, std::optional<std::string_view> mark, const std::string& path) {
    try {
        Json j = Json::parse(text);
        if (!j.contains("version")) throw Json::out_of_range::create(403, "key 'version' not found", &j);
        if (integerField<int>(j, "version", 0) != 1) return fail(EINVAL, "parse", path, "unknown journal version");
        Journal out;
        out.state = j.at("state").get<std::string>();
        out.generation = integerField<std::uint64_t>(j, "generation", 0);
        out.pid = integerField<long>(j, "pid", 0);
        out.profile = j.value("profile", "");
        out.appliedAt = j.value("applied_at", "");
        out.netns = j.value("netns", "");
        applyMark(out, mark);
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
    } catch (const Json::exception& e) {
        // A torn journal cannot happen (rename is atomic); a damaged one is reported, never ignored.
        return fail(EINVAL, "parse", path, std::string("damaged journal: ") + e.what());
    }
}

std::optional<Journal> parseJournalFast(std::string_view text, std::optional<std::string_view> mark) {
    JournalReader reader;
    if (!Json::sax_parse(text, &reader) || !reader.complete()) return std::nullopt;
    Journal out = reader.take();
    applyMark(out, mark);
    return out;
}

Result<Journal> parseJournal(std::string_view text, std::optional<std::string_view> mark, const std::string& path) {
    auto j = [&]() -> Result<Journal> {
        if (auto fast = parseJournalFast(text, mark)) return std::move(*fast);
        return parseJournalReference(text, mark, path);
    }();
    if (j) j->source = path;
    return j;
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
            out += Json(std::string(s)).dump();
            return true;
        } catch (const Json::type_error&) {  // 316: invalid UTF-8
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
    // Written only where known: the journals of earlier releases, and what they read, stay as they were.
    if (!jr.netns.empty()) {
        field("applied_at", jr.appliedAt, ",\n ");
        field("netns", jr.netns, ",\n \"originals\": [");
    } else {
        field("applied_at", jr.appliedAt, ",\n \"originals\": [");
    }
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
        if (k.napi >= 0) out += ", \"napi\": " + std::to_string(k.napi);
        out += '}';
    };
    // One entry per line: id, path, kind, the entry's value under `valueKey` and its key.
    auto entries = [&](const auto& items, const char* valueKey, const auto& valueOf) {
        for (size_t i = 0; i < items.size(); ++i) {
            out += i ? ",\n  {" : "\n  {";
            field("id", items[i].id, ", ");
            field("path", items[i].path, ", ");
            field("kind", toString(items[i].kind), ", ");
            field(valueKey, valueOf(items[i]), "");
            // An entry without a key (family "": not recovered yet) is written without one, as
            // the reader takes it; {"family": ""} would make the whole journal unreadable.
            if (!items[i].key.family.empty()) {
                out += ", ";
                appendKey(items[i].key);
            }
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
    return writeFileAtomic(markPath(), Json{{"generation", generation}, {"applied_at", at}}.dump() + "\n", false);
}

Result<void> JournalStore::remove() const {
    // The mark first: a mark without a journal is nothing; a journal without its mark is an
    // interrupted apply, which is still safe.
    return removeFilesDurable({markPath(), path()}, dir_);
}

}  // namespace rxtune
