#include "web/web_endpoint.hpp"

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <set>
#include <tuple>

#include "core/digest.hpp"
#include "sys/files.hpp"
#include "web/auth_guard.hpp"

namespace rxtune {

namespace {

// Go's crypto/tls names for the TLS 1.0-1.2 suites exporter-toolkit takes, with their IANA codes.
struct SuiteName {
    const char* name;
    unsigned code;
};
constexpr SuiteName kSuites[] = {
    {"TLS_RSA_WITH_AES_128_CBC_SHA", 0x002f},          {"TLS_RSA_WITH_AES_256_CBC_SHA", 0x0035},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", 0x009c},       {"TLS_RSA_WITH_AES_256_GCM_SHA384", 0x009d},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", 0xc009},  {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", 0xc00a},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", 0xc013},    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", 0xc014},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", 0xc02b}, {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", 0xc02c},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 0xc02f}, {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 0xc030},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca8}, {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca9},
};

constexpr std::pair<const char*, const char*> kGroups[] = {
    {"CurveP256", "GROUP-SECP256R1"}, {"CurveP384", "GROUP-SECP384R1"}, {"CurveP521", "GROUP-SECP521R1"}, {"X25519", "GROUP-X25519"}};

unsigned suiteCode(const unsigned char id[2]) { return static_cast<unsigned>(id[0]) << 8 | id[1]; }

std::string goName(unsigned code) {
    for (const auto& s : kSuites)
        if (s.code == code) return s.name;
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%04x", code);
    return buf;
}

struct Credentials {
    gnutls_certificate_credentials_t c = nullptr;
    Credentials() { gnutls_certificate_allocate_credentials(&c); }
    ~Credentials() { gnutls_certificate_free_credentials(c); }
    Credentials(const Credentials&) = delete;
    Credentials& operator=(const Credentials&) = delete;
};

gnutls_datum_t datum(const std::string& s) {
    return {reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())), static_cast<unsigned>(s.size())};
}

std::string utc(long long t) {
    char buf[32];
    const std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

Result<std::string> readNamed(const std::string& file, const char* key, const std::string& path) {
    auto r = readFileBounded(path, 1 << 20);
    if (!r) return fail(r.error().code, file + ": tls_server_config." + key, path,
                        std::string("cannot be read: ") + std::strerror(r.error().code ? r.error().code : EIO));
    return *r;
}

// Where a PEM came from, for an error: the key and the file, or the inline key.
struct PemSource {
    std::string key, what;
};
PemSource sourceOf(const char* fileKey, const char* inlineKey, const std::string& path) {
    if (!path.empty()) return {fileKey, path};
    return {inlineKey, "(inline)"};
}

// The certificate and its key as GnuTLS will serve them: they match, and the certificate is valid now.
Result<long long> checkPair(const std::string& file, const TlsServerConfig& cfg, const WebTls& tls) {
    const std::string where = file + ": tls_server_config.";
    const PemSource c = sourceOf("cert_file", "cert", cfg.certFile), k = sourceOf("key_file", "key", cfg.keyFile),
                    caSrc = sourceOf("client_ca_file", "client_ca", cfg.clientCaFile);
    Credentials cred;
    gnutls_datum_t cert = datum(tls.certPem), key = datum(tls.keyPem);
    if (int rc = gnutls_certificate_set_x509_key_mem(cred.c, &cert, &key, GNUTLS_X509_FMT_PEM); rc < 0) {
        if (rc == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
            return fail(0, where + k.key, k.what, "is not the key of " + c.key + " " + c.what);
        return fail(0, where + c.key, c.what + " and " + k.key + " " + k.what,
                    std::string("not a PEM certificate and its PEM key: ") + gnutls_strerror(rc));
    }
    gnutls_x509_crt_t crt = nullptr;
    gnutls_x509_crt_init(&crt);
    const int rc = gnutls_x509_crt_import(crt, &cert, GNUTLS_X509_FMT_PEM);
    const long long notBefore = rc < 0 ? 0 : gnutls_x509_crt_get_activation_time(crt);
    const long long notAfter = rc < 0 ? 0 : gnutls_x509_crt_get_expiration_time(crt);
    gnutls_x509_crt_deinit(crt);
    if (rc < 0) return fail(0, where + c.key, c.what, std::string("not a PEM certificate: ") + gnutls_strerror(rc));
    const long long now = static_cast<long long>(std::time(nullptr));
    if (notAfter <= now) return fail(0, where + c.key, c.what, "the certificate expired at " + utc(notAfter));
    if (notBefore > now) return fail(0, where + c.key, c.what, "the certificate is not valid before " + utc(notBefore));
    if (!tls.clientCaPem.empty()) {
        gnutls_datum_t ca = datum(tls.clientCaPem);
        if (gnutls_certificate_set_x509_trust_mem(cred.c, &ca, GNUTLS_X509_FMT_PEM) <= 0)
            return fail(0, where + caSrc.key, caSrc.what, "holds no PEM certificate");
    }
    return notAfter;
}

}  // namespace

Result<std::string> tlsPriorities(const TlsServerConfig& tls, const std::string& file) {
    const std::string where = file + ": tls_server_config.";
    std::string p = "NORMAL:-VERS-ALL";
    static constexpr const char* kVers[] = {"VERS-TLS1.0", "VERS-TLS1.1", "VERS-TLS1.2", "VERS-TLS1.3"};
    for (int v = static_cast<int>(tls.minVersion); v <= static_cast<int>(tls.maxVersion); ++v) p += std::string(":+") + kVers[v];
    if (tls.preferServerCipherSuites) p += ":%SERVER_PRECEDENCE";
    if (!tls.curvePreferences.empty()) {
        p += ":-GROUP-ALL";
        for (const auto& c : tls.curvePreferences)
            for (const auto& [go, group] : kGroups)
                if (c == go) p += std::string(":+") + group;
    }
    // Go's cipher_suites name TLS 1.0-1.2 suites (TLS 1.3's are not configurable there). GnuTLS
    // takes key exchanges, ciphers and MACs: the listed suites' parts are enabled, and the suites
    // those parts make together must be exactly the listed ones.
    std::set<unsigned> wanted;
    for (const auto& name : tls.cipherSuites)
        for (const auto& s : kSuites)
            if (name == s.name) wanted.insert(s.code);
    if (!wanted.empty()) {
        std::vector<std::string> parts[3];  // kx, cipher, mac
        std::set<unsigned> known;
        for (std::size_t i = 0;; ++i) {
            unsigned char id[2];
            gnutls_kx_algorithm_t kx;
            gnutls_cipher_algorithm_t cipher;
            gnutls_mac_algorithm_t mac;
            gnutls_protocol_t minVer;
            if (!gnutls_cipher_suite_info(i, id, &kx, &cipher, &mac, &minVer)) break;
            if (!wanted.count(suiteCode(id))) continue;
            known.insert(suiteCode(id));
            for (auto [list, name] : {std::pair{&parts[0], gnutls_kx_get_name(kx)}, {&parts[1], gnutls_cipher_get_name(cipher)},
                                      {&parts[2], gnutls_mac_get_name(mac)}})
                if (name && std::find(list->begin(), list->end(), name) == list->end()) list->push_back(name);
        }
        for (unsigned code : wanted)
            if (!known.count(code))
                return fail(0, where + "cipher_suites", goName(code), "GnuTLS does not offer this suite");
        p += ":-KX-ALL:-CIPHER-ALL:-MAC-ALL";
        for (const auto& list : parts)
            for (const auto& name : list) p += ":+" + name;
    }
    gnutls_priority_t prio = nullptr;
    const char* errPos = nullptr;
    if (int rc = gnutls_priority_init(&prio, p.c_str(), &errPos); rc < 0)
        return fail(0, where + "min_version", p, std::string("GnuTLS refuses these settings: ") + gnutls_strerror(rc));
    std::string extra;
    for (unsigned i = 0;; ++i) {
        unsigned sidx = 0;
        const int rc = gnutls_priority_get_cipher_suite_index(prio, i, &sidx);
        if (rc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) break;
        if (rc < 0) continue;
        unsigned char id[2];
        gnutls_protocol_t minVer;
        if (!gnutls_cipher_suite_info(sidx, id, nullptr, nullptr, nullptr, &minVer) || minVer >= GNUTLS_TLS1_3) continue;
        if (!wanted.empty() && !wanted.count(suiteCode(id))) extra += (extra.empty() ? "" : ", ") + goName(suiteCode(id));
    }
    gnutls_priority_deinit(prio);
    if (!extra.empty())
        return fail(0, where + "cipher_suites", file,
                    "GnuTLS cannot enable exactly these suites: their key exchanges, ciphers and MACs also make " + extra +
                        " (list those too, or fewer)");
    return p;
}

Result<std::shared_ptr<const WebEndpoint>> prepareWebEndpoint(const WebConfig& cfg) {
    auto ep = std::make_shared<WebEndpoint>();
    ep->file = cfg.file;
    ep->headers = cfg.headers;
    ep->users = cfg.basicAuthUsers;
    ep->warnings = cfg.warnings;
    int cost = 0;  // the highest configured: newer exporter-toolkit releases do the same
    for (const auto& [user, hash] : ep->users) cost = std::max(cost, bcryptCost(hash));
    if (!ep->users.empty()) ep->decoy = decoyHash(cost);
    Digest digest;  // what a change on disk is compared by
    if (!cfg.file.empty()) {
        auto text = readFileBounded(cfg.file, 1 << 20);
        if (!text) return fail(text.error().code, "read", cfg.file);
        digest.add(*text);
        ep->files.push_back(cfg.file);
    }
    if (cfg.tls) {
        const TlsServerConfig& t = *cfg.tls;
        auto tls = std::make_unique<WebTls>();
        // A file where given (read now, and again on every change), else the inline PEM.
        for (auto [key, path, inlinePem, out] : {std::tuple{"cert_file", &t.certFile, &t.certPem, &tls->certPem},
                                                 {"key_file", &t.keyFile, &t.keyPem, &tls->keyPem},
                                                 {"client_ca_file", &t.clientCaFile, &t.clientCaPem, &tls->clientCaPem}}) {
            if (path->empty()) {
                *out = *inlinePem;
                continue;
            }
            auto pem = readNamed(cfg.file, key, *path);
            if (!pem) return failWith(pem.error());
            *out = std::move(*pem);
        }
        auto notAfter = checkPair(cfg.file, t, *tls);
        if (!notAfter) return failWith(notAfter.error());
        tls->notAfter = *notAfter;
        auto prio = tlsPriorities(t, cfg.file);
        if (!prio) return failWith(prio.error());
        tls->priorities = std::move(*prio);
        tls->clientAuth = t.clientAuth;
        tls->clientAllowedSans = t.clientAllowedSans;
        for (const auto* f : {&t.certFile, &t.keyFile, &t.clientCaFile})
            if (!f->empty()) ep->files.push_back(*f);
        digest.add(tls->certPem).add(tls->keyPem).add(tls->clientCaPem);
        ep->tls = std::move(tls);
    }
    if (!cfg.file.empty()) ep->digest = digest.hex();
    return std::shared_ptr<const WebEndpoint>(std::move(ep));
}

std::shared_ptr<const WebEndpoint> plainWebEndpoint() { return std::make_shared<const WebEndpoint>(); }

bool sameTls(const WebEndpoint& a, const WebEndpoint& b) {
    if (!a.tls || !b.tls) return !a.tls && !b.tls;
    const WebTls &x = *a.tls, &y = *b.tls;
    return x.certPem == y.certPem && x.keyPem == y.keyPem && x.clientCaPem == y.clientCaPem && x.priorities == y.priorities &&
           x.clientAuth == y.clientAuth && x.clientAllowedSans == y.clientAllowedSans;
}

}  // namespace rxtune
