#include "bpf/xdp_spec.hpp"

#include "core/text.hpp"

namespace rxtune {

std::string XdpSpec::str() const {
    return "cpus=" + cpus.toList() + " mode=" + (mode == XdpMode::kNative ? "native" : "generic") +
           " qsize=" + std::to_string(qsize);
}

Result<XdpSpec> XdpSpec::parse(const std::string& text) {
    XdpSpec s;
    bool haveCpus = false;
    for (const auto& f : splitFields(text)) {
        auto eq = f.find('=');
        if (eq == std::string::npos) return fail(EINVAL, "parse", "xdp spec", "'" + f + "' is not key=value");
        const std::string k = f.substr(0, eq), v = f.substr(eq + 1);
        if (k == "cpus") {
            auto c = CpuSet::parseList(v);
            if (!c || c->empty()) return fail(EINVAL, "parse", "xdp spec", "bad cpus '" + v + "'");
            s.cpus = *c;
            haveCpus = true;
        } else if (k == "mode") {
            if (v == "generic") s.mode = XdpMode::kGeneric;
            else if (v == "native") s.mode = XdpMode::kNative;
            else return fail(EINVAL, "parse", "xdp spec", "bad mode '" + v + "'");
        } else if (k == "qsize") {
            if (!parseUnsigned(v, s.qsize) || s.qsize == 0) return fail(EINVAL, "parse", "xdp spec", "bad qsize '" + v + "'");
        } else {
            return fail(EINVAL, "parse", "xdp spec", "unknown key '" + k + "'");
        }
    }
    if (!haveCpus) return fail(EINVAL, "parse", "xdp spec", "no cpus");
    return s;
}

}  // namespace rxtune
