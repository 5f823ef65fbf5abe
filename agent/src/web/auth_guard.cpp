#include "web/auth_guard.hpp"

#include <arpa/inet.h>
#include <crypt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "web/web_config.hpp"

namespace rxtune {

namespace {

std::array<unsigned char, 32> sha256(const std::string& s) {
    std::array<unsigned char, 32> out{};
    gnutls_hash_fast(GNUTLS_DIG_SHA256, s.data(), s.size(), out.data());
    return out;
}

double threadCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::pair<bool, double> timedBcrypt(const std::string& hash, const std::string& password) {
    const double start = threadCpuSeconds();
    const bool ok = checkPassword(hash, password);
    return {ok, threadCpuSeconds() - start};
}

}  // namespace

const char* toString(AuthResult r) {
    switch (r) {
        case AuthResult::kOk: return "ok";
        case AuthResult::kRemembered: return "remembered";
        case AuthResult::kWrongPassword: return "wrong_password";
        case AuthResult::kUnknownUser: return "unknown_user";
        case AuthResult::kNoCredentials: return "no_credentials";
        case AuthResult::kThrottled: return "throttled";
    }
    return "unknown";
}

int bcryptCost(std::string_view hash) {
    if (!isBcryptHash(hash)) return 0;
    return (hash[4] - '0') * 10 + (hash[5] - '0');
}

std::string decoyHash(int cost) {
    // A salt from libxcrypt, and a digest of bcrypt's alphabet that no password was hashed into:
    // crypt(3) spends the cost's rounds on any password before the comparison fails. (libxcrypt's
    // own salt also keeps libcrypt linked where ASan's crypt_r interceptor would stand in for it.)
    static constexpr char kAlphabet[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    char setting[CRYPT_GENSALT_OUTPUT_SIZE];
    if (!::crypt_gensalt_rn("$2y$", static_cast<unsigned long>(std::clamp(cost, 4, 31)), nullptr, 0, setting, sizeof setting)) return "";
    unsigned char random[31];
    gnutls_rnd(GNUTLS_RND_NONCE, random, sizeof random);
    std::string h = setting;
    for (unsigned char r : random) h.push_back(kAlphabet[r % 64]);
    h.back() = kAlphabet[random[30] % 16 * 4];  // bcrypt's base64 keeps 4 bits of the digest's last character
    return h;
}

std::string clientKey(const void* addr, std::size_t len) {
    char text[INET6_ADDRSTRLEN] = {};
    const auto* sa = static_cast<const sockaddr*>(addr);
    if (!sa || len < sizeof(sa_family_t)) return "?";
    if (sa->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
        inet_ntop(AF_INET, &static_cast<const sockaddr_in*>(addr)->sin_addr, text, sizeof text);
        return text;
    }
    if (sa->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
        const in6_addr& a = static_cast<const sockaddr_in6*>(addr)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(&a)) {
            inet_ntop(AF_INET, a.s6_addr + 12, text, sizeof text);
            return text;
        }
        in6_addr prefix{};
        std::memcpy(prefix.s6_addr, a.s6_addr, 8);
        inet_ntop(AF_INET6, &prefix, text, sizeof text);
        return std::string(text) + "/64";
    }
    return "?";
}

Authenticator::Authenticator(AuthBudget budget, Checker check) : budget_(budget), check_(check ? std::move(check) : Checker(timedBcrypt)) {}

bool Authenticator::trusted(const std::string& key, double now) const {
    auto it = clients_.find(key);
    return it != clients_.end() && it->second.trustedUntil > now;
}

Authenticator::Client& Authenticator::client(const std::string& key, double now) {
    if (auto it = clients_.find(key); it != clients_.end()) return it->second;
    if (clients_.size() >= budget_.maxAddresses) {
        // Room for the newcomer: the untrusted address that asked longest ago goes (a trusted one
        // only when every one is trusted).
        const auto rank = [now](const auto& kv) { return std::pair{kv.second.trustedUntil > now, kv.second.lastAsked}; };
        const auto victim =
            std::min_element(clients_.begin(), clients_.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
        clients_.erase(victim);
    }
    Client& c = clients_[key];
    c.refilledAt = now;
    return c;
}

double Authenticator::share(Pool pool, double now) {
    if (countedAt_ < 0 || now - countedAt_ >= 0.25 || now < countedAt_) {
        active_ = {};
        for (const auto& [key, c] : clients_)
            if (c.lastAsked >= now - budget_.activeSeconds) ++active_[c.trustedUntil > now ? kTrusted : kOther];
        countedAt_ = now;
    }
    const double cpu = pool == kTrusted ? budget_.trustedCpu : budget_.otherCpu;
    return cpu / static_cast<double>(std::max<std::size_t>(1, active_[pool]));
}

double Authenticator::estimate(const std::string& hash) const {
    auto it = costByBcryptCost_.find(bcryptCost(hash));
    return it == costByBcryptCost_.end() ? 0 : it->second;
}

void Authenticator::remember(const std::array<unsigned char, 32>& key) {
    if (!remembered_.insert(key).second) return;
    rememberedOrder_.push_back(key);
    if (rememberedOrder_.size() > budget_.maxRemembered) {
        remembered_.erase(rememberedOrder_.front());
        rememberedOrder_.pop_front();
    }
}

Authenticator::Outcome Authenticator::check(const std::map<std::string, std::string>& users, const std::string& decoy,
                                            const std::string& key, const std::string& user, const std::string& password, double now) {
    const auto it = users.find(user);
    const std::string& hash = it != users.end() ? it->second : decoy;
    // The user and the hash too: a remembered password stops passing when the hash changes.
    const auto digest = sha256(user + '\0' + hash + '\0' + password);
    Client& c = client(key, now);
    if (c.lastAsked < now - budget_.activeSeconds) countedAt_ = -1;  // one more address takes a share now
    c.lastAsked = now;
    if (it != users.end() && remembered_.count(digest)) {
        c.trustedUntil = now + budget_.trustSeconds;
        return {AuthResult::kRemembered};
    }
    const double need = estimate(hash);
    const double rate = share(c.trustedUntil > now ? kTrusted : kOther, now);
    if (c.fresh) {
        c.fresh = false;
        // A newcomer gets one check's worth if the newcomers' bucket has it, else starts empty.
        const double cap = std::max(need, budget_.newcomerCpu * budget_.burstSeconds);
        newcomerTokens_ = newcomerAt_ < 0 ? cap : std::min(cap, newcomerTokens_ + std::max(0.0, now - newcomerAt_) * budget_.newcomerCpu);
        newcomerAt_ = now;
        c.tokens = 0;
        if (newcomerTokens_ >= need) {
            newcomerTokens_ -= need;
            c.tokens = need;
        }
    } else {
        // A debt (a check dearer than estimated) is paid back first.
        c.tokens = std::min(std::max(need, rate * budget_.burstSeconds), c.tokens + std::max(0.0, now - c.refilledAt) * rate);
    }
    c.refilledAt = now;
    if (c.tokens < need) return {AuthResult::kThrottled, rate > 0 ? (need - c.tokens) / rate : budget_.activeSeconds};
    const auto [ok, cpu] = check_(hash, password);
    spent_ += cpu;
    c.tokens -= cpu;  // what it really cost: a check dearer than estimated is paid back before the next
    double& est = costByBcryptCost_[bcryptCost(hash)];
    est = est == 0 ? cpu : 0.7 * est + 0.3 * cpu;
    if (it == users.end()) return {AuthResult::kUnknownUser};
    if (!ok) return {AuthResult::kWrongPassword};
    remember(digest);
    if (c.trustedUntil <= now) {
        // Trusted from now on, with a full bucket: the next rotation's check need not wait.
        c.trustedUntil = now + budget_.trustSeconds;
        countedAt_ = -1;
        c.tokens = std::max(c.tokens, std::max(need, share(kTrusted, now) * budget_.burstSeconds));
    }
    return {AuthResult::kOk};
}

}  // namespace rxtune
