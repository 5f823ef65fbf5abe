#include "knobs/family.hpp"

#include <bit>

namespace rxtune {

const SysctlValue* findSysctl(const Topology& host, const std::string& key) {
    for (const auto& v : host.sysctls)
        if (v.key == key) return &v;
    return nullptr;
}

std::uint32_t flowTableSize(std::uint32_t entries) { return entries <= 1 ? entries : std::bit_ceil(entries); }

Result<std::string> KnobFamily::read(const KnobIo& io, const KnobKey&, const std::string& path) const { return io.fs.read(path); }

Result<void> KnobFamily::write(const KnobIo& io, const KnobKey&, const std::string& path, const std::string& value) const {
    return io.fs.write(path, value);
}

bool KnobFamily::exists(const KnobIo& io, const KnobKey&, const std::string& path) const { return io.fs.exists(path); }

bool KnobFamily::writable(const KnobIo& io, const KnobKey&, const std::string& path) const { return io.fs.writable(path); }

std::string KnobFamily::where(const KnobIo& io, const KnobKey&, const std::string& path) const { return io.fs.full(path); }

Setting makeSetting(const KnobFamily& f, KnobKey key, ValueKind kind, std::string current, std::string desired, std::string why,
                    std::string raw) {
    Setting s;
    s.id = f.id(key);
    s.path = f.path(key);
    s.kind = kind;
    s.current = std::move(current);
    s.desired = std::move(desired);
    s.why = std::move(why);
    s.raw = std::move(raw);
    s.key = std::move(key);
    return s;
}

}  // namespace rxtune
