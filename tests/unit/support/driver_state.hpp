// The fake driver's state a revert or an undo must give back: rings and coalescing of every link.
#pragma once

#include <sstream>
#include <string>

#include "fixture.hpp"

namespace rxtune::test {

inline std::string driverState(FakeNetlink& nl) {
    std::ostringstream out;
    const auto links = nl.links().value();
    for (const auto& l : links)
        for (const char* m : {"rings", "coalesce"}) {
            auto v = nl.ethtoolGet({m, 0, 0, 0, {}}, l.name).value();
            out << l.name << " " << m << ":";
            for (const auto& [k, x] : v.values) out << " " << k << "=" << x;
            out << "\n";
        }
    return out.str();
}

}  // namespace rxtune::test
