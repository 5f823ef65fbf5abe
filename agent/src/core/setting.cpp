#include "core/setting.hpp"

#include "core/cpuset.hpp"
#include "core/text.hpp"

namespace rxtune {

const char* toString(ValueKind k) {
    switch (k) {
        case ValueKind::kCpuMask: return "cpumask";
        case ValueKind::kInteger: return "integer";
        case ValueKind::kNumbers: return "numbers";
        case ValueKind::kWord: return "word";
        case ValueKind::kXdp: return "xdp";
        case ValueKind::kCpuList: return "cpulist";
    }
    return "word";
}

bool parseValueKind(const std::string& s, ValueKind& out) {
    for (ValueKind k : {ValueKind::kCpuMask, ValueKind::kInteger, ValueKind::kNumbers, ValueKind::kWord, ValueKind::kXdp, ValueKind::kCpuList})
        if (s == toString(k)) {
            out = k;
            return true;
        }
    return false;
}

std::string normalise(ValueKind kind, const std::string& v) {
    switch (kind) {
        case ValueKind::kCpuMask: {
            auto set = CpuSet::parseMask(v);
            return set ? set->toMask() : trimmed(v);
        }
        case ValueKind::kInteger:
        case ValueKind::kNumbers: return joinFields(v);
        case ValueKind::kWord: return trimmed(v);
        case ValueKind::kXdp: return joinFields(v);  // specs are written in one canonical order
        case ValueKind::kCpuList: {
            auto set = CpuSet::parseList(v);
            return set ? set->toList() : trimmed(v);
        }
    }
    return trimmed(v);
}

bool sameValue(ValueKind kind, const std::string& a, const std::string& b) {
    if (kind == ValueKind::kCpuMask) {
        auto x = CpuSet::parseMask(a), y = CpuSet::parseMask(b);
        if (x && y) return *x == *y;
    }
    if (kind == ValueKind::kCpuList) {
        auto x = CpuSet::parseList(a), y = CpuSet::parseList(b);
        if (x && y) return *x == *y;
    }
    return normalise(kind, a) == normalise(kind, b);
}

size_t Plan::pendingCount() const {
    size_t n = 0;
    for (const auto& s : settings) n += s.pending() ? 1 : 0;
    return n;
}

}  // namespace rxtune
