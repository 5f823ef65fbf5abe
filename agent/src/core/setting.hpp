// Setting (one knob: where, current, desired) and Plan (the ordered settings one apply carries out).
#pragma once

#include <optional>
#include <string>

#include <vector>

#include "core/cpuset.hpp"
#include "core/knob.hpp"

namespace rxtune {

// One value type per kernel format; equality is always on the normalised form.
enum class ValueKind { kCpuMask, kInteger, kNumbers, kWord, kXdp, kCpuList };  // kCpuList: "0-3,8"  // kXdp: an XdpSpec, "" = none
const char* toString(ValueKind k);
bool parseValueKind(const std::string& s, ValueKind& out);

// "0000,0000000f" == "f" for masks; "4096\t131072" == "4096 131072" for numbers.
bool sameValue(ValueKind kind, const std::string& a, const std::string& b);
// The form stored in plans and the journal ("0-3" style is not used: masks stay masks).
std::string normalise(ValueKind kind, const std::string& v);

struct Setting {
    std::string id;    // "sysctl net.core.rmem_max", "eth0 rx-0 rps_cpus", "cpu3 governor"
    std::string path;  // FileTree-relative
    ValueKind kind = ValueKind::kWord;
    std::string current;
    std::string desired;
    std::string why;
    std::string raw;  // `current` as the bytes read (what revert puts back); empty: apply reads it again
    KnobKey key;      // what id and path were built from (knobs/registry)
    bool pending() const { return !sameValue(kind, current, desired); }
};

struct Skip {
    std::string id;
    std::string reason;
};

// Something the plan cannot do itself but the operator may want to (e.g. run rxtune-dp).
struct Advice {
    std::string interface;
    std::string text;
};

struct Plan {
    std::string profile;
    std::vector<std::string> profileFiles;
    std::vector<std::string> interfaces;  // the interfaces the plan steers
    std::vector<Setting> settings;        // every desired setting, in apply order
    std::vector<Skip> skipped;            // what cannot be applied here, and why
    std::vector<Advice> advice;           // not applied by rxtune; does not count as pending
    std::vector<std::string> explanation; // per interface and CPU: chosen or left out, and why
    // CPUs the kernel quietly leaves out of an RPS mask (not housekeeping: isolated, nohz_full).
    // A mask touching none of them is stored as written, so apply need not read it back.
    std::optional<CpuSet> rpsDropped;
    size_t pendingCount() const;
};

}  // namespace rxtune
