// "Billion laughs" in YAML: `levels` anchors, each a list of nine aliases of the one before, and
// `use: *last` as the one key a reader looks at. 10 levels hold 9^10 (3.5 billion) nodes.
#pragma once

#include <string>

namespace rxtune::test {

inline std::string aliasBomb(unsigned levels, const std::string& use) {
    std::string y = "l0: &l0 [x, x, x, x, x, x, x, x, x]\n";
    for (unsigned i = 1; i < levels; ++i) {
        const std::string prev = "*l" + std::to_string(i - 1);
        y += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
        for (int k = 0; k < 9; ++k) y += (k ? ", " : "") + prev;
        y += "]\n";
    }
    return y + use + ": *l" + std::to_string(levels - 1) + "\n";
}

// The same bomb where a reader looks first: under the one key it knows, so that no unknown-key
// check can end the walk before it starts.
inline std::string nestedAliasBomb(unsigned levels, const std::string& key) {
    std::string y = key + ":\n  - &l0 [x, x, x, x, x, x, x, x, x]\n";
    for (unsigned i = 1; i < levels; ++i) {
        const std::string prev = "*l" + std::to_string(i - 1);
        y += "  - &l" + std::to_string(i) + " [";
        for (int k = 0; k < 9; ++k) y += (k ? ", " : "") + prev;
        y += "]\n";
    }
    return y;
}

}  // namespace rxtune::test
