// A test that cannot run on this machine says why and is counted as skipped, not passed: the run
// ends with a line that names each (Catch2 2.13 has no SKIP). Use it as
//     if (cannot) return skipBecause("needs two CPUs");
#pragma once

#include <string>

namespace rxtune::test {

// Records the current test case as skipped, with the reason (also shown as a warning).
void skipBecause(const std::string& why);

}  // namespace rxtune::test
