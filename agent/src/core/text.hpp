// Small text helpers for kernel files: trimming, splitting, integer parsing.
#pragma once

#include <charconv>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace rxtune {

std::string trimmed(std::string_view s);
std::vector<std::string> splitLines(std::string_view s);        // non-empty lines
std::vector<std::string> splitFields(std::string_view s);       // on any whitespace
std::vector<std::string> splitOn(std::string_view s, char sep);  // keeps empty parts
std::string joinFields(std::string_view s);                     // "a\tb  c\n" -> "a b c"
std::string unescapeMount(std::string_view s);                  // "\040" -> " " as in mountinfo
std::string rounded(double v);                                  // 752000.4 -> "752000" (for log lines)
std::string isoUtc(std::time_t t);                              // "2026-11-30T15:00:00Z" (the journal's times)

template <class T>
bool parseUnsigned(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

bool parseSigned(std::string_view s, std::int64_t& out);

}  // namespace rxtune
