#include "inventory/interrupts.hpp"

#include <charconv>

namespace rxtune {

namespace {

std::vector<std::string_view> splitWs(std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
        size_t j = i;
        while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

bool parseU64(std::string_view s, std::uint64_t& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size();
}

// The kernel pads the chip/hwirq columns; the action list is the comma-separated tail.
// Action names never contain spaces, and chip columns end with a trigger type such as
// "-edge"/"-level" (or are a bare chip name for IPI lines, which have no actions).
void splitChipAndActions(std::string_view rest, InterruptLine& line) {
    auto tokens = splitWs(rest);
    size_t firstAction = tokens.size();
    for (size_t i = 0; i < tokens.size(); ++i) {
        std::string_view t = tokens[i];
        if (t.ends_with("-edge") || t.ends_with("-level") || t.ends_with("-fasteoi") || t == "edge" ||
            t == "level")
            firstAction = i + 1;
    }
    if (firstAction == tokens.size() && !tokens.empty()) {
        // No trigger token: IPI descriptions ("Local timer interrupts") are all chip text.
        firstAction = tokens.size();
    }
    std::string chip;
    for (size_t i = 0; i < firstAction && i < tokens.size(); ++i) {
        if (!chip.empty()) chip += ' ';
        chip += tokens[i];
    }
    line.chip = std::move(chip);
    std::string action;
    for (size_t i = firstAction; i < tokens.size(); ++i) {
        std::string_view t = tokens[i];
        bool endsWithComma = t.ends_with(',');
        if (endsWithComma) t.remove_suffix(1);
        if (!action.empty()) action += ' ';
        action += t;
        if (endsWithComma) {
            line.actions.push_back(std::move(action));
            action.clear();
        }
    }
    if (!action.empty()) line.actions.push_back(std::move(action));
}

}  // namespace

Result<InterruptTable> parseInterrupts(std::string_view text) {
    InterruptTable table;
    size_t pos = 0;
    bool header = true;
    unsigned lineNo = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++lineNo;
        if (splitWs(line).empty()) continue;
        const std::string where = "/proc/interrupts line " + std::to_string(lineNo);
        if (header) {
            for (auto t : splitWs(line)) {
                std::uint64_t id = 0;
                if (!t.starts_with("CPU") || !parseU64(t.substr(3), id) || id >= 65536)
                    return fail(EINVAL, "parse", where, "header column '" + std::string(t) + "' is not CPUn");
                table.cpus.push_back(static_cast<unsigned>(id));
            }
            header = false;
            continue;
        }
        size_t colon = line.find(':');
        if (colon == std::string_view::npos) return fail(EINVAL, "parse", where, "no ':' after the IRQ id");
        InterruptLine il;
        auto idToks = splitWs(line.substr(0, colon));
        if (idToks.size() != 1) return fail(EINVAL, "parse", where, "bad IRQ id");
        il.id = std::string(idToks[0]);
        std::uint64_t n = 0;
        if (parseU64(idToks[0], n)) {
            if (n > 0xffffffffu) return fail(ERANGE, "parse", where, "IRQ number out of range");
            il.numeric = true;
            il.irq = static_cast<unsigned>(n);
        }
        std::string_view rest = line.substr(colon + 1);
        // Count columns come first; stop at the first non-number or after one per CPU.
        size_t i = 0;
        while (il.counts.size() < table.cpus.size()) {
            while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
            size_t j = i;
            while (j < rest.size() && rest[j] != ' ' && rest[j] != '\t') ++j;
            if (j == i) break;
            std::uint64_t v = 0;
            if (!parseU64(rest.substr(i, j - i), v)) break;
            il.counts.push_back(v);
            i = j;
        }
        if (il.numeric && il.counts.size() != table.cpus.size())
            return fail(EINVAL, "parse", where,
                        "IRQ " + il.id + " has " + std::to_string(il.counts.size()) + " counts for " +
                            std::to_string(table.cpus.size()) + " CPUs");
        splitChipAndActions(rest.substr(i), il);
        table.lines.push_back(std::move(il));
    }
    if (header) return fail(EINVAL, "parse", "/proc/interrupts", "no CPU header line");
    return table;
}

}  // namespace rxtune
