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

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equalsLower(std::string_view t, std::string_view lowerWord) {
    if (t.size() != lowerWord.size()) return false;
    for (size_t i = 0; i < t.size(); ++i)
        if (lower(t[i]) != lowerWord[i]) return false;
    return true;
}

// The flow handlers' names (irq_set_chip_and_handler_name), as x86 joins them to the hwirq.
constexpr std::string_view kHandlers[] = {"edge", "level", "fasteoi", "simple", "percpu", "percpu_devid", "edge_eoi", "level_eoi",
                                          "bad", "untracked"};

bool isHandler(std::string_view name) {
    for (auto h : kHandlers)
        if (equalsLower(name, h)) return true;
    return false;
}

// What ends the chip columns of a line (kernel/irq/proc.c, show_interrupts): where the kernel
// has GENERIC_IRQ_SHOW_LEVEL (arm64, riscv, ...), a column of its own, "Edge" or "Level";
// elsewhere (x86) the flow handler's name joined to the hwirq: "49152-edge", "23-fasteoi", or
// "-edge" where the IRQ has no domain.
enum class Trigger { kNone, kLevelColumn, kJoined };
Trigger triggerOf(std::string_view t) {
    if (equalsLower(t, "edge") || equalsLower(t, "level")) return Trigger::kLevelColumn;
    const auto dash = t.rfind('-');
    return dash != std::string_view::npos && isHandler(t.substr(dash + 1)) ? Trigger::kJoined : Trigger::kNone;
}

// After the counts: the chip's name (one column, or more where the chip prints a device name with
// spaces), the hwirq, the trigger (above), on GENERIC_IRQ_SHOW_LEVEL kernels the handler's name
// as "-name" where it has one, then the actions, ", "-separated (names without spaces). Lines
// with no trigger (IPIs: "Local timer interrupts") are chip text alone. The first trigger counts:
// an action may end in "-edge", a chip's name does not.
void splitChipAndActions(std::string_view rest, InterruptLine& line) {
    auto tokens = splitWs(rest);
    size_t firstAction = tokens.size();
    for (size_t i = 0; i < tokens.size(); ++i) {
        const Trigger t = triggerOf(tokens[i]);
        if (t == Trigger::kNone) continue;
        firstAction = i + 1;
        if (t == Trigger::kLevelColumn && firstAction < tokens.size() && tokens[firstAction].size() > 1 && tokens[firstAction][0] == '-' &&
            isHandler(tokens[firstAction].substr(1)))
            ++firstAction;
        break;
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
