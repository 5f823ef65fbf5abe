#include "config.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include <arpa/inet.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <yaml-cpp/yaml.h>

#include "core/paths.hpp"
#include "profile/yaml_config.hpp"
#include "fanout.hpp"

namespace rxtune::dp {

namespace {

using yamlcfg::bad;
using yamlcfg::boolean;
using yamlcfg::requireKeys;
using yamlcfg::scalar;

unsigned number(const YAML::Node& n, const std::string& key, unsigned lo, unsigned hi) {
    return yamlcfg::integer<unsigned>(n, key, lo, hi);
}

std::vector<unsigned> numbers(const YAML::Node& n, const std::string& key, unsigned lo, unsigned hi) {
    if (!n.IsSequence()) bad(n, key, "expected a list of integers");
    std::vector<unsigned> out;
    for (const auto& e : n) out.push_back(number(e, key, lo, hi));
    return out;
}

std::vector<std::string> strings(const YAML::Node& n, const std::string& key) {
    if (!n.IsSequence()) bad(n, key, "expected a list of strings");
    std::vector<std::string> out;
    for (const auto& e : n) out.push_back(scalar(e, key));
    return out;
}

bool validCidr(const std::string& s) {
    auto slash = s.find('/');
    if (slash == std::string::npos) return false;
    const std::string addr = s.substr(0, slash), len = s.substr(slash + 1);
    unsigned bits = 0;
    auto [p, ec] = std::from_chars(len.data(), len.data() + len.size(), bits);
    if (ec != std::errc() || p != len.data() + len.size() || len.empty()) return false;
    unsigned char buf[16];
    if (inet_pton(AF_INET, addr.c_str(), buf) == 1) return bits <= 32;
    if (inet_pton(AF_INET6, addr.c_str(), buf) == 1) return bits <= 128;
    return false;
}

}  // namespace

Result<std::array<uint8_t, 6>> parseMac(const std::string& text) {
    std::array<uint8_t, 6> mac{};
    auto bad = [&] { return fail(EINVAL, "parse", "MAC address", "expected six hex bytes such as 02:00:00:00:00:01, got '" + text + "'"); };
    if (text.size() != 17) return bad();
    for (size_t i = 0; i < 6; ++i) {
        if (i > 0 && text[3 * i - 1] != ':') return bad();
        auto [p, ec] = std::from_chars(text.data() + 3 * i, text.data() + 3 * i + 2, mac[i], 16);
        if (ec != std::errc() || p != text.data() + 3 * i + 2) return bad();
    }
    if (mac[0] & 1) return fail(EINVAL, "parse", "MAC address", "'" + text + "' is a multicast address");
    if (mac == std::array<uint8_t, 6>{}) return fail(EINVAL, "parse", "MAC address", "all-zero address");
    return mac;
}

std::string stableMac(const std::string& name) {
    uint32_t h = 2166136261u;  // FNV-1a: stable across builds and restarts
    for (unsigned char c : name) h = (h ^ c) * 16777619u;
    char buf[18];
    std::snprintf(buf, sizeof buf, "02:72:78:%02x:%02x:%02x", (h >> 16) & 0xff, (h >> 8) & 0xff, h & 0xff);
    return buf;
}

bool isVdev(const std::string& device) { return device.rfind("net_", 0) == 0; }

std::string portNameOf(const std::string& device) {
    return device.substr(0, device.find(','));
}

std::optional<std::string> kernelInterfaceOf(const std::string& device) {
    if (device.rfind("net_af_packet", 0) != 0 && device.rfind("net_af_xdp", 0) != 0) return std::nullopt;
    std::stringstream ss(device);
    std::string part;
    std::getline(ss, part, ',');
    while (std::getline(ss, part, ','))
        if (part.rfind("iface=", 0) == 0) return part.substr(6);
    return std::nullopt;
}

Result<DpConfig> parseDpConfig(const std::string& text, const std::string& file) {
    DpConfig c;
    c.file = file;
    try {
        YAML::Node root = yamlcfg::loadDocument(text, "configuration");
        requireKeys(root, "", {"eal", "file_prefix", "nic", "rx_cpu", "workers", "tap", "ring_size", "burst",
                               "mbufs", "reta_size", "tx_mode", "idle_sleep_us", "prefetch_next_mbufs"});
        if (auto n = root["eal"]) c.eal = strings(n, "eal");
        if (auto n = root["file_prefix"]) c.filePrefix = scalar(n, "file_prefix");
        if (auto n = root["nic"]) {
            requireKeys(n, "nic", {"device", "fix_checksums", "mtu"});
            if (auto d = n["device"]) c.nic = scalar(d, "nic.device");
            if (auto d = n["fix_checksums"]) c.fixChecksums = boolean(d, "nic.fix_checksums");
            if (auto d = n["mtu"]) c.mtu = number(d, "nic.mtu", 68, 9600);
        }
        if (auto n = root["rx_cpu"]) c.rxCpu = number(n, "rx_cpu", 0, CpuSet::kMaxCpus - 1);
        if (auto n = root["workers"]) {
            requireKeys(n, "workers", {"cpus", "weights"});
            if (auto d = n["cpus"]) {
                c.workerCpus = numbers(d, "workers.cpus", 0, CpuSet::kMaxCpus - 1);
                if (c.workerCpus.empty() || c.workerCpus.size() > kMaxWorkers)
                    bad(d, "workers.cpus", "expected 1 to " + std::to_string(kMaxWorkers) + " CPUs (one per worker)");
            }
            if (auto d = n["weights"]) c.weights = numbers(d, "workers.weights", 0, 1000);
        }
        if (auto n = root["tap"]) {
            requireKeys(n, "tap", {"name", "mac", "addresses", "device", "backend", "vhost_net"});
            if (auto d = n["device"]) c.exceptionDevice = scalar(d, "tap.device");
            if (auto d = n["backend"]) {
                const auto v = scalar(d, "tap.backend");
                if (v == "auto") c.tapBackend = TapBackend::kAuto;
                else if (v == "tap") c.tapBackend = TapBackend::kTap;
                else if (v == "virtio-user") c.tapBackend = TapBackend::kVirtioUser;
                else bad(d, "tap.backend", "expected auto, tap or virtio-user, got '" + v + "'");
            }
            if (auto d = n["vhost_net"]) {
                c.vhostNet = yamlcfg::absolutePath(d, "tap.vhost_net");
                if (c.vhostNet.find_first_of(", ") != std::string::npos)
                    bad(d, "tap.vhost_net", "expected an absolute path with no commas or spaces, got '" + c.vhostNet + "'");
            }
            if (auto d = n["name"]) {
                c.tapName = scalar(d, "tap.name");
                if (auto ok = validateIfName(c.tapName); !ok) bad(d, "tap.name", ok.error().message());
            }
            if (auto d = n["mac"]) {
                c.tapMac = scalar(d, "tap.mac");
                if (auto ok = parseMac(c.tapMac); !ok) bad(d, "tap.mac", ok.error().message());
            }
            if (auto d = n["addresses"]) {
                c.tapAddresses = strings(d, "tap.addresses");
                size_t i = 0;
                for (const auto& e : d) {
                    if (!validCidr(c.tapAddresses[i]))
                        bad(e, "tap.addresses", "expected an address with a prefix length such as 10.0.0.1/24, got '" +
                                                    c.tapAddresses[i] + "'");
                    ++i;
                }
            }
        }
        if (auto n = root["ring_size"]) c.ringSize = number(n, "ring_size", 64, 65536);
        if (auto n = root["burst"]) c.burst = number(n, "burst", 1, 256);
        if (auto n = root["mbufs"]) c.mbufs = number(n, "mbufs", 1024, 4194304);
        if (auto n = root["reta_size"]) c.retaSize = number(n, "reta_size", 1, kMaxRetaSize);
        if (auto n = root["tx_mode"]) {
            auto v = scalar(n, "tx_mode");
            if (v == "ring") c.txMode = TxMode::kRing;
            else if (v == "lock") c.txMode = TxMode::kLock;
            else bad(n, "tx_mode", "expected lock or ring, got '" + v + "'");
        }
        if (auto n = root["idle_sleep_us"]) c.idleSleepUs = number(n, "idle_sleep_us", 0, 100000);
        if (auto n = root["prefetch_next_mbufs"]) {
            const auto text = scalar(n, "prefetch_next_mbufs");
            auto v = parsePrefetch(text);
            if (!v) bad(n, "prefetch_next_mbufs", "expected auto, on or off, got '" + text + "'");
            c.prefetchNextMbufs = *v;
        }
    } catch (const yamlcfg::ConfigError& e) {
        return yamlcfg::located(file, e.mark, e.key, e.what);
    } catch (const YAML::Exception& e) {
        return yamlcfg::located(file, e.mark, "", "malformed YAML: " + e.msg);
    }
    return c;
}

Result<DpConfig> loadDpConfig(const std::string& path) {
    auto text = yamlcfg::readDocumentFile(path);
    if (!text) return failWith(text.error());
    return parseDpConfig(*text, path);
}

Result<void> validateDpConfig(DpConfig& c, const CpuSet& allowed) {
    auto invalid = [](const std::string& key, const std::string& what) { return fail(EINVAL, "config", key, what); };
    if (c.nic.empty())
        return invalid("nic.device", "no NIC port: give a vdev such as net_af_packet0,iface=eth1 or a PCI address");
    if (c.nic.find(' ') != std::string::npos) return invalid("nic.device", "must not contain spaces: '" + c.nic + "'");
    if (isVdev(c.nic) && c.nic.rfind("net_af_packet", 0) == 0 && !kernelInterfaceOf(c.nic))
        return invalid("nic.device", "an af_packet port needs iface=<interface>: '" + c.nic + "'");
    if (auto ifname = kernelInterfaceOf(c.nic)) {
        if (auto ok = validateIfName(*ifname); !ok) return invalid("nic.device", ok.error().message());
        if (*ifname == c.tapName) return invalid("tap.name", "the TAP cannot have the NIC interface's name '" + *ifname + "'");
    }
    if (c.filePrefix.empty() || c.filePrefix.find('/') != std::string::npos)
        return invalid("file_prefix", "expected a plain name, got '" + c.filePrefix + "'");
    if (auto ok = validateIfName(c.tapName); !ok) return invalid("tap.name", ok.error().message());
    if (!c.exceptionDevice.empty()) {
        if (!isVdev(c.exceptionDevice) && c.exceptionDevice.rfind("virtio_user", 0) != 0)
            return invalid("tap.device", "expected a vdev (net_..., virtio_user...), got '" + c.exceptionDevice + "'");
        if (c.exceptionDevice.find(' ') != std::string::npos) return invalid("tap.device", "must not contain spaces");
        if (!c.tapAddresses.empty()) return invalid("tap.addresses", "addresses need the TAP; tap.device replaces it");
        if (c.tapBackend != TapBackend::kAuto) return invalid("tap.backend", "tap.device names the kernel side already");
    }
    if (c.tapMac.empty()) c.tapMac = stableMac(c.tapName);
    else if (auto ok = parseMac(c.tapMac); !ok) return invalid("tap.mac", ok.error().message());
    for (const auto& a : c.tapAddresses)
        if (!validCidr(a)) return invalid("tap.addresses", "expected an address with a prefix length, got '" + a + "'");

    if (allowed.empty()) return invalid("cpus", "this process may run on no CPU");
    if (!c.rxCpu) c.rxCpu = allowed.cpus().front();
    auto checkCpu = [&](unsigned cpu, const std::string& key) -> Result<void> {
        if (!allowed.contains(cpu))
            return invalid(key, "CPU " + std::to_string(cpu) + " is not one this process may use (allowed: " +
                                    allowed.toList() + "; see its cpuset)");
        return {};
    };
    if (auto ok = checkCpu(*c.rxCpu, "rx_cpu"); !ok) return ok;
    if (c.workerCpus.empty()) {
        // Default: one worker on every other allowed CPU, or one beside the RX core on a 1-CPU host.
        for (unsigned cpu : (allowed - CpuSet::of({*c.rxCpu})).cpus())
            if (c.workerCpus.size() < kMaxWorkers) c.workerCpus.push_back(cpu);
        if (c.workerCpus.empty()) c.workerCpus.push_back(*c.rxCpu);
    }
    if (c.workerCpus.size() > kMaxWorkers)
        return invalid("workers.cpus", "at most " + std::to_string(kMaxWorkers) + " workers (TAP queues)");
    for (unsigned cpu : c.workerCpus)
        if (auto ok = checkCpu(cpu, "workers.cpus"); !ok) return ok;
    if (c.weights.empty()) c.weights.assign(c.workerCpus.size(), 1);
    if (c.weights.size() != c.workerCpus.size())
        return invalid("workers.weights", std::to_string(c.weights.size()) + " weights for " +
                                              std::to_string(c.workerCpus.size()) + " workers");
    if (auto reta = buildReta(c.weights, c.retaSize); !reta) return invalid("reta_size", reta.error().message());
    if (c.ringSize & (c.ringSize - 1)) return invalid("ring_size", "must be a power of two, got " + std::to_string(c.ringSize));
    if (c.burst > c.ringSize) return invalid("burst", "larger than ring_size");
    return {};
}

std::optional<Prefetch> parsePrefetch(std::string_view v) {
    if (v == "auto") return Prefetch::kAuto;
    if (v == "on" || v == "true") return Prefetch::kOn;
    if (v == "off" || v == "false") return Prefetch::kOff;
    return std::nullopt;
}

bool cpuHasPrefetchw() {
#if defined(__x86_64__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 8)) != 0;  // 3DNowPrefetch: PREFETCHW
#elif defined(__aarch64__)
    return true;  // PRFM PSTL1KEEP (__builtin_prefetch(p, 1, 3)) is in every ARMv8-A core
#else
    return false;
#endif
}

PrefetchChoice choosePrefetch(const DpConfig& c, const CpuSet& rxLlc, bool cpuHas) {
    if (c.prefetchNextMbufs == Prefetch::kOff) return {false, "prefetch_next_mbufs: off"};
    if (!cpuHas) return {false, "this CPU has no PREFETCHW"};
    if (c.prefetchNextMbufs == Prefetch::kOn) return {true, "prefetch_next_mbufs: on"};
    if (rxLlc.empty()) return {false, "auto: the RX core's last-level cache is unknown (no sysfs cacheinfo)"};
    if (auto across = workersAcrossLlc(c, rxLlc); !across.empty())
        return {true, "auto: workers on " + across.toList() + " do not share the RX core's last-level cache"};
    return {false, "auto: every worker shares the RX core's last-level cache (" + rxLlc.toList() + ")"};
}

CpuSet workersAcrossLlc(const DpConfig& c, const CpuSet& rxLlc) {
    CpuSet out;
    if (rxLlc.empty()) return out;
    for (unsigned cpu : c.workerCpus)
        if (!rxLlc.contains(cpu)) out.add(cpu);
    return out;
}

std::string acrossLlcWarning(const DpConfig& c, const CpuSet& rxLlc) {
    const CpuSet across = workersAcrossLlc(c, rxLlc);
    if (across.empty() || !c.rxCpu) return "";
    return "workers on CPUs " + across.toList() + " do not share the RX core's last-level cache (CPU " +
           std::to_string(*c.rxCpu) + " shares it with " + rxLlc.toList() +
           "): every packet handed to them costs the RX core a cross-cache transfer; workers on " + rxLlc.toList() +
           " are cheaper for it";
}

Result<ExceptionPath> chooseExceptionPath(const DpConfig& c, const std::function<Result<void>()>& vhostProbe) {
    const std::string queues = std::to_string(c.workerCpus.size());
    if (!c.exceptionDevice.empty()) {
        const bool virtio = c.exceptionDevice.rfind("virtio_user", 0) == 0;
        if (virtio)
            if (auto ok = vhostProbe(); !ok)
                return fail(ok.error().code, "check", "tap.device", "a virtio-user device, but " + ok.error().message());
        return ExceptionPath{virtio ? "virtio-user" : "device", c.exceptionDevice, portNameOf(c.exceptionDevice),
                             "tap.device: " + c.exceptionDevice};
    }
    ExceptionPath tap{"tap", "net_tap_" + c.tapName + ",iface=" + c.tapName + ",mac=" + c.tapMac, "net_tap_" + c.tapName, ""};
    if (c.tapBackend == TapBackend::kTap) {
        tap.why = "tap.backend: tap";
        return tap;
    }
    auto probed = vhostProbe();
    if (!probed) {
        if (c.tapBackend == TapBackend::kVirtioUser)
            return fail(probed.error().code, "check", "tap.backend", "virtio-user, but " + probed.error().message());
        tap.why = "virtio-user not possible: " + probed.error().message();
        return tap;
    }
    // vhost-kernel: virtio-user makes a kernel TAP named iface and moves frames through vhost-net.
    const std::string port = "virtio_user_" + c.tapName;
    return ExceptionPath{"virtio-user",
                         port + ",path=" + c.vhostNet + ",queues=" + queues + ",queue_size=512,iface=" + c.tapName + ",mac=" + c.tapMac,
                         port, std::string(c.tapBackend == TapBackend::kAuto ? "auto: " : "") + c.vhostNet + " is a vhost device"};
}

}  // namespace rxtune::dp
