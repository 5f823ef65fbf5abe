#include "core/irqbalance.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace rxtune {

namespace {

std::string unquote(std::string_view v) {
    std::string out;
    char quote = 0;
    for (char c : v) {
        if (quote) {
            if (c == quote) quote = 0;
            else out += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

std::map<std::string, std::string> parseEnvironmentFile(std::string_view text) {
    std::map<std::string, std::string> out;
    for (const auto& raw : splitOn(text, '\n')) {
        std::string line = trimmed(raw);
        if (line.empty() || line[0] == '#') continue;
        if (line.starts_with("export ")) line = trimmed(line.substr(7));
        const auto eq = line.find('=');
        if (eq == std::string::npos || eq == 0) continue;
        const std::string key = line.substr(0, eq);
        if (!std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) continue;
        std::string value = line.substr(eq + 1);
        // A comment after an unquoted value.
        if (!value.empty() && value[0] != '"' && value[0] != '\'')
            if (auto hash = value.find(" #"); hash != std::string::npos) value = value.substr(0, hash);
        out[key] = unquote(trimmed(value));
    }
    return out;
}

std::vector<std::string> splitArguments(std::string_view text, char sep) {
    std::vector<std::string> out;
    std::string cur;
    char quote = 0;
    bool any = false;
    for (char c : text) {
        if (quote) {
            if (c == quote) quote = 0;
            else cur += c;
            continue;
        }
        const bool split = sep == ' ' ? (c == ' ' || c == '\t' || c == '\n') : c == sep;
        if (split) {
            // A NUL-separated command line keeps its empty words; blanks between words do not count.
            if (any || sep != ' ') out.push_back(cur);
            cur.clear();
            any = false;
        } else if (sep == ' ' && (c == '\'' || c == '"')) {
            quote = c;
            any = true;
        } else {
            cur += c;
            any = true;
        }
    }
    if (any) out.push_back(cur);
    return out;
}

void applyIrqbalanceConfig(const std::map<std::string, std::string>& env, const std::vector<std::string>& args,
                           const CpuSet& isolatedOrNohz, IrqbalanceFacts& out) {
    auto value = [&](const char* key) {
        auto it = env.find(key);
        return it == env.end() ? std::string() : trimmed(it->second);
    };
    const std::string mask = value("IRQBALANCE_BANNED_CPUS"), list = value("IRQBALANCE_BANNED_CPULIST");
    if (!mask.empty()) {
        if (auto m = CpuSet::parseMask(mask)) {
            out.bannedCpus = *m;
            out.bannedCpusFrom = "IRQBALANCE_BANNED_CPUS";
        } else {
            out.notes.push_back("IRQBALANCE_BANNED_CPUS '" + mask + "' is not a CPU mask");
        }
        if (!list.empty()) out.notes.push_back("IRQBALANCE_BANNED_CPULIST is ignored: IRQBALANCE_BANNED_CPUS is set and wins");
    } else if (!list.empty()) {
        if (auto l = CpuSet::parseList(list)) {
            out.bannedCpus = *l;
            out.bannedCpusFrom = "IRQBALANCE_BANNED_CPULIST";
        } else {
            out.notes.push_back("IRQBALANCE_BANNED_CPULIST '" + list + "' is not a CPU list");
        }
    } else {
        out.bannedCpus = isolatedOrNohz;
        out.bannedCpusFrom = "isolated/nohz_full";
    }
    if (!out.bannedCpusFrom.empty() && out.bannedCpusFrom != "isolated/nohz_full" && !(isolatedOrNohz - out.bannedCpus).empty())
        out.notes.push_back("isolated/nohz_full CPUs " + (isolatedOrNohz - out.bannedCpus).toList() + " are not banned: " +
                            out.bannedCpusFrom + " replaces irqbalance's own banning of them");
    auto takeIrq = [&](const std::string& v) {
        unsigned n = 0;
        if (parseUnsigned(v, n)) out.bannedIrqs.push_back(n);
        else out.notes.push_back("--banirq '" + v + "' is not an IRQ number");
    };
    auto takeInterval = [&](const std::string& v) {
        unsigned n = 0;
        if (parseUnsigned(v, n) && n >= 1) out.interval = n;  // irqbalance refuses 0 and exits
        else out.notes.push_back("--interval '" + v + "' is not a number of seconds");
    };
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        const bool next = i + 1 < args.size();
        if (a.starts_with("--banirq=")) takeIrq(a.substr(9));
        else if ((a == "--banirq" || a == "-i") && next) takeIrq(args[++i]);
        else if (a.starts_with("--policyscript=")) out.policyScript = a.substr(15);
        else if ((a == "--policyscript" || a == "-l") && next) out.policyScript = args[++i];
        else if (a.starts_with("--interval=")) takeInterval(a.substr(11));
        else if ((a == "--interval" || a == "-t") && next) takeInterval(args[++i]);
        else if (a.size() > 2 && a.starts_with("-t") && a[2] != '-') takeInterval(a.substr(2));
    }
    std::sort(out.bannedIrqs.begin(), out.bannedIrqs.end());
    out.bannedIrqs.erase(std::unique(out.bannedIrqs.begin(), out.bannedIrqs.end()), out.bannedIrqs.end());
}

}  // namespace rxtune
