// CpuSet: a set of CPU ids with the kernel's two text formats (hex mask and cpulist).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace rxtune {

class CpuSet {
public:
    // The kernel's NR_CPUS ceiling; larger ids are rejected so that hostile
    // input cannot make us allocate without bound.
    static constexpr unsigned kMaxCpus = 8192;

    CpuSet() = default;
    static CpuSet of(std::initializer_list<unsigned> cpus);
    static CpuSet range(unsigned first, unsigned last);  // inclusive

    // "0000,0000000f", "f", "ff,00000000\n": 32-bit groups separated by commas.
    static Result<CpuSet> parseMask(std::string_view text);
    // "0-3,8,10-11", "0-15:2/4", "" (empty set); surrounding whitespace ignored.
    static Result<CpuSet> parseList(std::string_view text);

    // Minimal kernel mask: "f", "1,00000000"; "0" for the empty set.
    std::string toMask() const;
    // Mask zero-padded to the width the kernel prints for nrCpus bits.
    std::string toMask(unsigned nrCpus) const;
    // Compact cpulist: "0-3,8"; "" for the empty set.
    std::string toList() const;

    void add(unsigned cpu);
    void remove(unsigned cpu);
    bool contains(unsigned cpu) const;
    bool empty() const;
    unsigned count() const;
    std::vector<unsigned> cpus() const;

    CpuSet operator|(const CpuSet& o) const;
    CpuSet operator&(const CpuSet& o) const;
    CpuSet operator-(const CpuSet& o) const;
    bool operator==(const CpuSet& o) const;

private:
    void trim();
    std::vector<std::uint64_t> words_;  // bit i of word w is CPU 64*w+i; no trailing zero words
};

}  // namespace rxtune
