#include "core/cpuset.hpp"

#include <algorithm>
#include <bit>
#include <charconv>

namespace rxtune {

namespace {

std::string_view trimSpace(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

Result<unsigned> parseCpuId(std::string_view s, std::string_view whole) {
    unsigned v = 0;
    if (s.empty()) return fail(EINVAL, "parse cpulist", std::string(whole), "empty CPU number");
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
        // Appended rather than `"'" + std::string(s)`: GCC 12 at -O3 reports a -Wrestrict false
        // positive (GCC bug 105329) for a literal prepended to a string.
        std::string what(s);
        what.insert(0, 1, '\'');
        what += "' is not a CPU number";
        return fail(EINVAL, "parse cpulist", std::string(whole), what);
    }
    if (v >= CpuSet::kMaxCpus)
        return fail(ERANGE, "parse cpulist", std::string(whole),
                    "CPU " + std::string(s) + " exceeds the kernel limit of " + std::to_string(CpuSet::kMaxCpus));
    return v;
}

}  // namespace

CpuSet CpuSet::of(std::initializer_list<unsigned> cpus) {
    CpuSet s;
    for (unsigned c : cpus) s.add(c);
    return s;
}

CpuSet CpuSet::range(unsigned first, unsigned last) {
    CpuSet s;
    for (unsigned c = first; c <= last; ++c) s.add(c);
    return s;
}

Result<CpuSet> CpuSet::parseMask(std::string_view text) {
    const std::string whole(text);
    std::string_view s = trimSpace(text);
    if (s.empty()) return fail(EINVAL, "parse cpumask", whole, "empty mask");
    // Split into comma groups; the last group holds CPUs 0-31.
    std::vector<std::string_view> groups;
    size_t start = 0;
    while (true) {
        size_t comma = s.find(',', start);
        groups.push_back(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    if (groups.size() > kMaxCpus / 32)
        return fail(ERANGE, "parse cpumask", whole, "mask wider than " + std::to_string(kMaxCpus) + " CPUs");
    CpuSet out;
    const size_t n = groups.size();
    for (size_t gi = 0; gi < n; ++gi) {
        std::string_view g = groups[gi];
        if (g.empty()) return fail(EINVAL, "parse cpumask", whole, "empty group between commas");
        if (g.size() > 8) return fail(EINVAL, "parse cpumask", whole, "group '" + std::string(g) + "' has more than 8 hex digits");
        std::uint32_t v = 0;
        for (char c : g) {
            int d = hexDigit(c);
            if (d < 0) return fail(EINVAL, "parse cpumask", whole, std::string("'") + c + "' is not a hex digit");
            v = (v << 4) | static_cast<std::uint32_t>(d);
        }
        const size_t groupIndex = n - 1 - gi;  // 0 = lowest 32 CPUs
        for (unsigned bit = 0; bit < 32; ++bit)
            if (v & (1u << bit)) out.add(static_cast<unsigned>(groupIndex * 32 + bit));
    }
    return out;
}

Result<CpuSet> CpuSet::parseList(std::string_view text) {
    const std::string whole(text);
    std::string_view s = trimSpace(text);
    CpuSet out;
    if (s.empty()) return out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t comma = s.find(',', start);
        std::string_view item = s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        if (item.empty()) return fail(EINVAL, "parse cpulist", whole, "empty item between commas");
        // Optional stride "a-b:used/group" as the kernel's bitmap_parselist accepts.
        unsigned used = 0, group = 0;
        if (size_t colon = item.find(':'); colon != std::string_view::npos) {
            std::string_view stride = item.substr(colon + 1);
            item = item.substr(0, colon);
            size_t slash = stride.find('/');
            if (slash == std::string_view::npos)
                return fail(EINVAL, "parse cpulist", whole, "stride '" + std::string(stride) + "' is not used/group");
            auto u = parseCpuId(stride.substr(0, slash), whole);
            if (!u) return failWith(u.error());
            auto g = parseCpuId(stride.substr(slash + 1), whole);
            if (!g) return failWith(g.error());
            used = *u;
            group = *g;
            if (group == 0 || used == 0 || used > group)
                return fail(EINVAL, "parse cpulist", whole, "stride '" + std::string(stride) + "' needs 0 < used <= group");
        }
        size_t dash = item.find('-');
        auto lo = parseCpuId(item.substr(0, dash), whole);
        if (!lo) return failWith(lo.error());
        unsigned hi = *lo;
        if (dash != std::string_view::npos) {
            auto h = parseCpuId(item.substr(dash + 1), whole);
            if (!h) return failWith(h.error());
            hi = *h;
            if (hi < *lo)
                return fail(EINVAL, "parse cpulist", whole, "range '" + std::string(item) + "' ends before it starts");
        } else if (group != 0) {
            return fail(EINVAL, "parse cpulist", whole, "a stride needs a range");
        }
        for (unsigned c = *lo; c <= hi; ++c)
            if (group == 0 || (c - *lo) % group < used) out.add(c);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

std::string CpuSet::toMask() const { return toMask(0); }

std::string CpuSet::toMask(unsigned nrCpus) const {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto all = cpus();
    const unsigned highest = all.empty() ? 0 : all.back() + 1;
    // Fixed width as the kernel prints it (never narrower than the set itself), or minimal.
    const unsigned width = nrCpus ? std::max(nrCpus, highest) : std::max(1u, highest);
    const unsigned groups = (width + 31) / 32;
    std::string out;
    bool leading = true;
    for (unsigned gi = groups; gi-- > 0;) {
        std::uint32_t v = 0;
        const size_t w = gi / 2;
        if (w < words_.size()) v = static_cast<std::uint32_t>(words_[w] >> ((gi % 2) * 32));
        unsigned digits = 8;
        if (leading) {
            if (nrCpus != 0) {
                digits = (std::min(width - gi * 32, 32u) + 3) / 4;
            } else {
                digits = 1;
                for (unsigned d = 8; d > 1; --d)
                    if (v >> ((d - 1) * 4)) {
                        digits = d;
                        break;
                    }
            }
        }
        if (!leading) out += ',';
        for (unsigned d = digits; d-- > 0;) out += kHex[(v >> (d * 4)) & 0xf];
        leading = false;
    }
    return out;
}

std::string CpuSet::toList() const {
    std::string out;
    auto all = cpus();
    for (size_t i = 0; i < all.size();) {
        size_t j = i;
        while (j + 1 < all.size() && all[j + 1] == all[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(all[i]);
        if (j > i) out += '-' + std::to_string(all[j]);
        i = j + 1;
    }
    return out;
}

void CpuSet::add(unsigned cpu) {
    size_t w = cpu / 64;
    if (words_.size() <= w) words_.resize(w + 1, 0);
    words_[w] |= std::uint64_t{1} << (cpu % 64);
}

void CpuSet::remove(unsigned cpu) {
    size_t w = cpu / 64;
    if (w < words_.size()) words_[w] &= ~(std::uint64_t{1} << (cpu % 64));
    trim();
}

bool CpuSet::contains(unsigned cpu) const {
    size_t w = cpu / 64;
    return w < words_.size() && (words_[w] >> (cpu % 64)) & 1;
}

bool CpuSet::empty() const { return words_.empty(); }

unsigned CpuSet::count() const {
    unsigned n = 0;
    for (auto w : words_) n += static_cast<unsigned>(std::popcount(w));
    return n;
}

std::vector<unsigned> CpuSet::cpus() const {
    std::vector<unsigned> out;
    for (size_t w = 0; w < words_.size(); ++w)
        for (unsigned b = 0; b < 64; ++b)
            if ((words_[w] >> b) & 1) out.push_back(static_cast<unsigned>(w * 64 + b));
    return out;
}

CpuSet CpuSet::operator|(const CpuSet& o) const {
    CpuSet r = *this;
    if (r.words_.size() < o.words_.size()) r.words_.resize(o.words_.size(), 0);
    for (size_t i = 0; i < o.words_.size(); ++i) r.words_[i] |= o.words_[i];
    return r;
}

CpuSet CpuSet::operator&(const CpuSet& o) const {
    CpuSet r;
    r.words_.resize(std::min(words_.size(), o.words_.size()));
    for (size_t i = 0; i < r.words_.size(); ++i) r.words_[i] = words_[i] & o.words_[i];
    r.trim();
    return r;
}

CpuSet CpuSet::operator-(const CpuSet& o) const {
    CpuSet r = *this;
    for (size_t i = 0; i < std::min(r.words_.size(), o.words_.size()); ++i) r.words_[i] &= ~o.words_[i];
    r.trim();
    return r;
}

bool CpuSet::operator==(const CpuSet& o) const { return words_ == o.words_; }

void CpuSet::trim() {
    while (!words_.empty() && words_.back() == 0) words_.pop_back();
}

}  // namespace rxtune
