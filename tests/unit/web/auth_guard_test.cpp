#include <catch2/catch.hpp>

#include <string>

#include "../support/bcrypt.hpp"
#include "web/auth_guard.hpp"
#include "web/web_config.hpp"

using namespace rxtune;

TEST_CASE("Basic credentials: the scheme in any case, standard padded base64, the password after the first colon", "[web]") {
    using P = std::pair<std::string, std::string>;
    CHECK(parseBasicAuth("Basic cHJvbWV0aGV1czpzM2NyZXQ=") == P{"prometheus", "s3cret"});
    CHECK(parseBasicAuth("basic cHJvbWV0aGV1czpzM2NyZXQ=") == P{"prometheus", "s3cret"});
    CHECK(parseBasicAuth("BASIC   cHJvbWV0aGV1czpzM2NyZXQ=  ") == P{"prometheus", "s3cret"});
    CHECK(parseBasicAuth("Basic dTpwOnE=") == P{"u", "p:q"});
    CHECK(parseBasicAuth("Basic dTo=") == P{"u", ""});
    CHECK(parseBasicAuth("Basic Ong=") == P{"", "x"});
    for (const char* bad : {"", "Basic", "Basic ", "Bearer cHJvbWV0aGV1czpzM2NyZXQ=", "Basicx cHJvbWV0aGV1czpzM2NyZXQ=",
                            "Basic cHJvbWV0aGV1czpzM2NyZXQ", "Basic dQ==", "Basic d=o=", "Basic !!!!", "Basic cHJv bWV0"}) {
        INFO(bad);
        CHECK_FALSE(parseBasicAuth(bad));
    }
}

TEST_CASE("the header a client sends reads back", "[web]") {
    CHECK(basicAuthHeader("prometheus", "s3cret") == "Basic cHJvbWV0aGV1czpzM2NyZXQ=");  // as curl -u sends it
    CHECK(basicAuthHeader("u", "p:q") == "Basic dTpwOnE=");
    CHECK(basicAuthHeader("u", "") == "Basic dTo=");
    for (const auto& [u, p] : {std::pair<std::string, std::string>{"a", "b"}, {"ab", "cd"}, {"user", std::string("\0\xff:x", 4)}})
        CHECK(parseBasicAuth(basicAuthHeader(u, p)) == std::pair{u, p});
}

TEST_CASE("a decoy hash is bcrypt of the cost asked, and no password matches it", "[web]") {
    for (int cost : {4, 10, 12}) {
        const std::string d = decoyHash(cost);
        CHECK(isBcryptHash(d));
        CHECK(bcryptCost(d) == cost);
    }
    const std::string d = decoyHash(4);
    CHECK_FALSE(checkPassword(d, ""));
    CHECK_FALSE(checkPassword(d, "rxtune"));
    CHECK(decoyHash(4) != d);  // a salt of its own each time
    CHECK(bcryptCost("$1$abc") == 0);
}

namespace {

// bcrypt stood in for: a hash "H<n>" takes the password "s3cret", each check costs 50 ms of CPU.
struct Fake {
    int checks = 0;
    Authenticator auth;
    explicit Fake(AuthBudget b = {})
        : auth(b, [this](const std::string& hash, const std::string& password) {
              ++checks;
              return std::pair{hash[0] == 'H' && password == "s3cret", 0.05};
          }) {}
    AuthResult ask(const std::map<std::string, std::string>& users, const std::string& client, const std::string& user,
                   const std::string& password, double now) {
        return auth.check(users, "D", client, user, password, now).result;
    }
};

}  // namespace

TEST_CASE("a right password is remembered while the user's hash is unchanged, across reloads", "[web]") {
    Fake f;
    const std::map<std::string, std::string> v1 = {{"prometheus", "H1"}};
    CHECK(f.ask(v1, "10.0.0.1", "prometheus", "s3cret", 100) == AuthResult::kOk);
    CHECK(f.checks == 1);
    CHECK(f.ask(v1, "10.0.0.1", "prometheus", "s3cret", 100) == AuthResult::kRemembered);
    CHECK(f.ask(v1, "10.0.0.9", "prometheus", "s3cret", 100) == AuthResult::kRemembered);  // from anywhere
    CHECK(f.checks == 1);
    // A reload that keeps the hash (another user added): still remembered.
    const std::map<std::string, std::string> v2 = {{"prometheus", "H1"}, {"grafana", "H7"}};
    CHECK(f.ask(v2, "10.0.0.1", "prometheus", "s3cret", 101) == AuthResult::kRemembered);
    CHECK(f.checks == 1);
    // A new hash for the user: checked again; the old one's memory does not pass.
    const std::map<std::string, std::string> v3 = {{"prometheus", "H2"}};
    CHECK(f.ask(v3, "10.0.0.1", "prometheus", "s3cret", 102) == AuthResult::kOk);
    CHECK(f.checks == 2);
    // The user removed: refused, as an unknown user, at a bcrypt's cost.
    const std::map<std::string, std::string> v4 = {{"grafana", "H7"}};
    CHECK(f.ask(v4, "10.0.0.1", "prometheus", "s3cret", 200) == AuthResult::kUnknownUser);
    CHECK(f.checks == 3);
    CHECK(f.ask(v3, "10.0.0.1", "prometheus", "wrong", 300) == AuthResult::kWrongPassword);
}

TEST_CASE("guesses from other addresses do not spend the scraper's bcrypt budget; the flood is throttled", "[web]") {
    const std::map<std::string, std::string> users = {{"prometheus", "H1"}};
    for (const bool trustedBefore : {true, false}) {
        INFO((trustedBefore ? "the scraper authenticated before the reload" : "a scraper never seen before"));
        Fake f;
        double t = 1000;
        if (trustedBefore) REQUIRE(f.ask({{"prometheus", "H0"}}, "10.0.0.1", "prometheus", "s3cret", t) == AuthResult::kOk);
        // Three attackers at 1,500 guesses a second each (a guess each 2/3 ms) for 20 s; the
        // scraper comes with the new hash's password every second from the 5th, each time after
        // a reload that changed the hash again (nothing remembered helps).
        int throttled = 0, refusedScrapes = 0, scrapes = 0, version = 1;
        const int start = f.checks;
        for (int step = 0; step < 30000; ++step) {
            t += 1.0 / 1500;
            for (const char* a : {"10.0.1.1", "10.0.1.2", "10.0.1.3"})
                throttled += f.ask(users, a, "prometheus", "guess" + std::to_string(step), t) == AuthResult::kThrottled;
            if (step >= 7500 && step % 1500 == 0) {
                const std::map<std::string, std::string> now = {{"prometheus", "H" + std::to_string(++version)}};
                ++scrapes;
                refusedScrapes += f.ask(now, "10.0.0.1", "prometheus", "s3cret", t) != AuthResult::kOk;
            }
        }
        CHECK(scrapes == 15);
        CHECK(refusedScrapes == 0);
        CHECK(throttled > 80000);
        // The bcrypt CPU over the 20 s: the shares and the newcomers' start, no more.
        const AuthBudget b;
        CHECK(f.auth.cpuSpent() <= (b.trustedCpu + b.otherCpu + b.newcomerCpu) * 20 + 1.0);
        CHECK(f.checks - start > 20);  // the attackers are checked too, at their share
    }
}

TEST_CASE("an address that spent its share is told when to come back; its share is the pool's over the active addresses", "[web]") {
    Fake f;
    const std::map<std::string, std::string> users = {{"prometheus", "H1"}};
    double t = 0;
    auto o = f.auth.check(users, "D", "10.0.0.5", "prometheus", "x", t);
    CHECK(o.result == AuthResult::kWrongPassword);  // a newcomer's first check
    o = f.auth.check(users, "D", "10.0.0.5", "prometheus", "y", t);
    CHECK(o.result == AuthResult::kThrottled);
    CHECK(o.retryAfter > 0);
    CHECK(o.retryAfter <= 1.01);  // 50 ms of debt and 50 ms for the next check, at 0.1 CPU s/s
    t += o.retryAfter + 0.05;
    CHECK(f.ask(users, "10.0.0.5", "prometheus", "z", t) == AuthResult::kWrongPassword);
}

TEST_CASE("addresses that churn get no more than the newcomers' part; the table of addresses is bounded", "[web]") {
    AuthBudget b;
    b.maxAddresses = 64;
    Fake f(b);
    const std::map<std::string, std::string> users = {{"prometheus", "H1"}};
    double t = 0;
    int checked = 0;
    for (int i = 0; i < 10000; ++i) {  // 10,000 addresses, a new one every millisecond, for 10 s
        t += 0.001;
        checked += f.ask(users, "10.1." + std::to_string(i / 256) + "." + std::to_string(i % 256), "nobody", "x", t) ==
                   AuthResult::kUnknownUser;
    }
    CHECK(checked > 0);
    CHECK(f.auth.cpuSpent() <= b.newcomerCpu * 10 + b.newcomerCpu * b.burstSeconds + 0.05 + (b.otherCpu * 10));
    // A trusted address keeps its trust through the churn (the table drops untrusted ones first).
    Fake g(b);
    REQUIRE(g.ask(users, "10.0.0.1", "prometheus", "s3cret", 0) == AuthResult::kOk);
    for (int i = 0; i < 1000; ++i) g.ask(users, "10.2.0." + std::to_string(i % 250) + std::to_string(i), "nobody", "x", 1 + i * 0.001);
    CHECK(g.auth.trusted("10.0.0.1", 2));
}
