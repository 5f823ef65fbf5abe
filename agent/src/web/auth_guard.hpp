// Basic auth for the scrape endpoint: the credentials a request carries (RFC 7617), checked against
// the users in force now, and who may spend bcrypt's CPU time doing it.
//
// bcrypt is slow on purpose, so the time spent on it is budgeted, in CPU seconds, and shared so
// that no client can spend another's: addresses that authenticated before (trusted: Prometheus
// after a rotation) share one part; the other addresses active now share a second part equally;
// an address not seen before starts with what a third part (the newcomers') can give it. A
// request whose address has too little left is refused unchecked (429), never queued behind the
// others' guesses. A right password is remembered (by its SHA-256 with the user and the hash) and
// passes without bcrypt for as long as the user's hash is unchanged, across reloads. An unknown
// user costs a bcrypt of the highest configured cost, so that the time taken does not say which
// users exist.
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "web/basic_auth.hpp"

namespace rxtune {

enum class AuthResult { kOk, kRemembered, kWrongPassword, kUnknownUser, kNoCredentials, kThrottled };
inline constexpr AuthResult kAuthResults[] = {AuthResult::kOk, AuthResult::kRemembered, AuthResult::kWrongPassword,
                                              AuthResult::kUnknownUser, AuthResult::kNoCredentials, AuthResult::kThrottled};
const char* toString(AuthResult r);  // the metric's label: "ok", "remembered", "wrong_password", ...
inline bool granted(AuthResult r) { return r == AuthResult::kOk || r == AuthResult::kRemembered; }

// The bcrypt cost of a hash ($2y$10$...: 10), or 0 when it is not bcrypt.
int bcryptCost(std::string_view hash);
// A bcrypt hash nobody knows the password of, with `cost`: checking a password against it costs
// what checking a real one of that cost does. Computes no hash.
std::string decoyHash(int cost);

struct AuthBudget {
    double trustedCpu = 0.25;   // CPU seconds a second, shared by the addresses that authenticated before
    double otherCpu = 0.25;     // shared equally by the other addresses active now
    double newcomerCpu = 0.10;  // what addresses not seen before start with, together
    double burstSeconds = 4;    // each address's bucket holds this long's share (at least one check)
    double activeSeconds = 10;  // an address is active (takes a share) this long after it last asked
    double trustSeconds = 86400;
    std::size_t maxAddresses = 4096;
    std::size_t maxRemembered = 256;
};

class Authenticator {
public:
    // The check itself: whether `password` matches `hash`, and the CPU seconds it took.
    using Checker = std::function<std::pair<bool, double>(const std::string& hash, const std::string& password)>;
    explicit Authenticator(AuthBudget budget = {}, Checker check = nullptr);  // null: bcrypt, timed on this thread's CPU clock

    struct Outcome {
        AuthResult result;
        double retryAfter = 0;  // with kThrottled: seconds until this address may try again
    };
    // `client`: the address's key (clientKey); `decoy`: the hash an unknown user is checked against.
    Outcome check(const std::map<std::string, std::string>& users, const std::string& decoy, const std::string& client,
                  const std::string& user, const std::string& password, double now);

    // bcrypt CPU seconds spent so far (every check), for the bound's tests and the log.
    double cpuSpent() const { return spent_; }
    bool trusted(const std::string& client, double now) const;

private:
    enum Pool { kTrusted, kOther };
    struct Client {
        double tokens = 0, refilledAt = 0, lastAsked = -1e18, trustedUntil = -1;
        bool fresh = true;  // its first tokens come from the newcomers' bucket
    };
    Client& client(const std::string& key, double now);
    double share(Pool pool, double now);
    double estimate(const std::string& hash) const;
    void remember(const std::array<unsigned char, 32>& key);

    AuthBudget budget_;
    Checker check_;
    std::map<std::string, Client> clients_;
    double newcomerTokens_ = 0, newcomerAt_ = -1;
    std::map<int, double> costByBcryptCost_;  // measured CPU seconds of one check, by the hash's cost
    std::set<std::array<unsigned char, 32>> remembered_;
    std::deque<std::array<unsigned char, 32>> rememberedOrder_;
    std::array<std::size_t, 2> active_{};
    double countedAt_ = -1;
    double spent_ = 0;
};

// The budget's key for a peer address: an IPv4 address, or an IPv6 address's /64 (one host's
// usual share); an IPv4-mapped IPv6 address is its IPv4 address.
std::string clientKey(const void* sockaddr, std::size_t len);

}  // namespace rxtune
