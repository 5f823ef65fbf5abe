#if __has_include(<catch2/catch_all.hpp>)
// Catch2 3 (Debian 13): the main is ours to write, the listener's base renamed.
#include <catch2/catch_all.hpp>
int main(int argc, char** argv) { return Catch::Session().run(argc, argv); }
using ListenerBase = Catch::EventListenerBase;
#else
// Catch2 2 (Debian 12).
#define CATCH_CONFIG_MAIN
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>
using ListenerBase = Catch::TestEventListenerBase;
#endif

#include <iostream>
#include <mutex>
#include <vector>

#include "../support/skips.hpp"

namespace {

std::mutex skipsLock;
std::vector<std::string>& skips() {
    static std::vector<std::string> all;
    return all;
}

// The run's closing line for the skipped: how many, which and why.
struct SkipReport : ListenerBase {
    using ListenerBase::ListenerBase;
    void testRunEnded(const Catch::TestRunStats&) override {
        std::lock_guard<std::mutex> hold(skipsLock);
        std::cout << "skipped: " << skips().size() << " test case(s)" << (skips().empty() ? "" : ":") << "\n";
        for (const auto& s : skips()) std::cout << "  skipped " << s << "\n";
    }
};

}  // namespace

CATCH_REGISTER_LISTENER(SkipReport)

namespace rxtune::test {

void skipBecause(const std::string& why) {
    WARN("skipped: " << why);
    std::lock_guard<std::mutex> hold(skipsLock);
    skips().push_back("'" + Catch::getResultCapture().getCurrentTestName() + "': " + why);
}

}  // namespace rxtune::test
