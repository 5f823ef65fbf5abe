#include "core/slots.hpp"

#include <catch2/catch.hpp>

#include <csignal>

#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace rxtune;

namespace {
struct Facts {
    int rx = 0;
    std::vector<std::string> names;
};
inline constexpr Slot<Facts> kFacts{"test.facts"};
inline constexpr Slot<int> kCount{"test.count"};
inline constexpr Slot<std::string> kSameNameOtherType{"test.facts"};
}  // namespace

TEST_CASE("slots: a value is read back through its typed key, absent ones read as null", "[slots]") {
    Slots s;
    CHECK(s.empty());
    CHECK(s.get(kFacts) == nullptr);
    s.set(kFacts, Facts{4, {"eth0"}});
    s.set(kCount, 7);
    REQUIRE(s.get(kFacts) != nullptr);
    CHECK(s.get(kFacts)->rx == 4);
    CHECK(*s.get(kCount) == 7);
    CHECK(s.has("test.count"));
    CHECK(s.size() == 2);
    s.emplace(kCount) += 1;
    CHECK(*s.get(kCount) == 8);
    s.erase("test.count");
    CHECK(s.get(kCount) == nullptr);
    CHECK(s.emplace(kCount) == 0);
}

TEST_CASE("slots: copies are deep and copyFrom takes one name of any type", "[slots]") {
    Slots a;
    a.set(kFacts, Facts{1, {"a"}});
    Slots b = a;
    b.get(kFacts)->names.push_back("b");
    CHECK(a.get(kFacts)->names.size() == 1);
    CHECK(b.get(kFacts)->names.size() == 2);
    Slots c;
    c.set(kCount, 3);
    c.copyFrom(b, "test.facts");
    c.copyFrom(b, "test.absent");
    CHECK(c.get(kFacts)->names.size() == 2);
    CHECK(*c.get(kCount) == 3);
    CHECK(!c.has("test.absent"));
    b.get(kFacts)->rx = 9;
    CHECK(c.get(kFacts)->rx == 1);
}

TEST_CASE("slots: reading a name as a type other than its owner's stops the program", "[slots]") {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::signal(SIGABRT, SIG_DFL);  // the child dies of it; Catch's handler would report a failure of its own
        Slots s;
        s.set(kFacts, Facts{});
        (void)s.get(kSameNameOtherType);
        _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGABRT);
}
