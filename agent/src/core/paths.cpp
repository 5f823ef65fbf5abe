#include "core/paths.hpp"

namespace rxtune {

Result<std::string> validateIfName(std::string_view name) {
    const std::string n(name);
    if (name.empty()) return fail(EINVAL, "interface name", "''", "is empty");
    if (name.size() > 15) return fail(EINVAL, "interface name", "'" + n + "'", "is longer than 15 bytes");
    if (name == "." || name == "..") return fail(EINVAL, "interface name", "'" + n + "'", "is not a valid name");
    for (char c : name) {
        if (c == '/' || c == ':') return fail(EINVAL, "interface name", "'" + n + "'", std::string("contains '") + c + "'");
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\0')
            return fail(EINVAL, "interface name", "'" + n + "'", "contains whitespace or NUL");
    }
    return n;
}

Result<std::string> validateSysctlKey(std::string_view key) {
    const std::string k(key);
    if (key.empty()) return fail(EINVAL, "sysctl key", "''", "is empty");
    bool partEmpty = true;
    for (char c : key) {
        if (c == '.') {
            if (partEmpty) return fail(EINVAL, "sysctl key", k, "has an empty component");
            partEmpty = true;
            continue;
        }
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return fail(EINVAL, "sysctl key", k, std::string("contains '") + c + "'");
        partEmpty = false;
    }
    if (partEmpty) return fail(EINVAL, "sysctl key", k, "has an empty component");
    return k;
}

Result<std::string> validateAbsolutePath(std::string_view path) {
    const std::string p(path);
    if (path.empty()) return fail(EINVAL, "path", "''", "expected an absolute path, got an empty one");
    if (path.front() != '/') return fail(EINVAL, "path", "'" + p + "'", "expected an absolute path, got '" + p + "'");
    if (path.find('\0') != std::string_view::npos) return fail(EINVAL, "path", "'" + p + "'", "contains NUL");
    return p;
}

namespace paths {

std::string netClass() { return "sys/class/net"; }
std::string netDev(const std::string& ifname) { return netClass() + "/" + ifname; }

std::string netDevFile(const std::string& ifname, std::string_view file) {
    return netDev(ifname) + "/" + std::string(file);
}

std::string queuesDir(const std::string& ifname) { return netDev(ifname) + "/queues"; }

std::string queueRel(QueueDir dir, unsigned index, std::string_view file) {
    return std::string(dir == QueueDir::kRx ? "queues/rx-" : "queues/tx-") + std::to_string(index) + "/" + std::string(file);
}

std::string queueFile(const std::string& ifname, QueueDir dir, unsigned index, std::string_view file) {
    return netDev(ifname) + "/" + queueRel(dir, index, file);
}

std::string sysctl(const std::string& key) {
    std::string p = "proc/sys/";
    for (char c : key) p += (c == '.') ? '/' : c;
    return p;
}

std::string irqFile(unsigned irq, std::string_view file) {
    return "proc/irq/" + std::to_string(irq) + "/" + std::string(file);
}

std::string sysKernelIrqFile(unsigned irq, std::string_view file) {
    return "sys/kernel/irq/" + std::to_string(irq) + "/" + std::string(file);
}

std::string cpuDir(unsigned cpu) { return "sys/devices/system/cpu/cpu" + std::to_string(cpu); }

std::string nodeDir(unsigned node) { return "sys/devices/system/node/node" + std::to_string(node); }

}  // namespace paths
}  // namespace rxtune
