#include "web/web_config.hpp"

#include <crypt.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <tuple>

#include <yaml-cpp/yaml.h>

#include "profile/yaml_config.hpp"
#include "sys/files.hpp"

namespace rxtune {

namespace {

using yamlcfg::bad;
using yamlcfg::scalar;

constexpr std::pair<std::string_view, ClientAuth> kClientAuth[] = {
    {"NoClientCert", ClientAuth::kNoClientCert},
    {"RequestClientCert", ClientAuth::kRequestClientCert},
    {"RequireAnyClientCert", ClientAuth::kRequireAnyClientCert},
    {"VerifyClientCertIfGiven", ClientAuth::kVerifyClientCertIfGiven},
    {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerifyClientCert},
    {"RequireClientCert", ClientAuth::kRequireAnyClientCert}};  // exporter-toolkit's older name, kept by it

constexpr std::pair<std::string_view, TlsVersion> kVersions[] = {
    {"TLS10", TlsVersion::kTls10}, {"TLS11", TlsVersion::kTls11}, {"TLS12", TlsVersion::kTls12}, {"TLS13", TlsVersion::kTls13}};

constexpr std::string_view kCurves[] = {"CurveP256", "CurveP384", "CurveP521", "X25519"};

// exporter-toolkit's extra headers: these names only, some with a fixed set of values (compared
// as written: promtool 2.42, Debian 12's, refuses "DENY").
struct HeaderRule {
    std::string_view name;
    std::vector<std::string_view> values;  // empty: any value
};
const std::vector<HeaderRule>& headerRules() {
    static const std::vector<HeaderRule> rules = {
        {"Strict-Transport-Security", {}}, {"X-Content-Type-Options", {"nosniff"}},
        {"X-Frame-Options", {"deny", "sameorigin"}}, {"X-XSS-Protection", {}}, {"Content-Security-Policy", {}}};
    return rules;
}

template <class Table>
auto oneOf(const YAML::Node& n, const std::string& key, const Table& table) {
    const std::string v = scalar(n, key);
    std::string list;
    for (const auto& [name, value] : table) {
        if (name == v) return value;
        list += (list.empty() ? "" : ", ") + std::string(name);
    }
    bad(n, key, "expected one of " + list + ", got '" + v + "'");
}

// A list of strings; null is an empty list (as Go's YAML reads `key:`).
std::vector<std::string> strings(const YAML::Node& n, const std::string& key) {
    std::vector<std::string> out;
    if (n.IsNull()) return out;
    if (!n.IsSequence()) bad(n, key, "expected a list of strings");
    for (const auto& e : n) out.push_back(scalar(e, key));
    return out;
}

// A path as given, joined to the configuration file's directory when relative.
std::string pathOf(const YAML::Node& n, const std::string& key, const std::string& file) {
    const std::string v = scalar(n, key);
    if (v.empty() || v.front() == '/') return v;
    return (std::filesystem::path(file).parent_path() / v).lexically_normal().string();
}

void parseTls(const YAML::Node& t, const std::string& file, WebConfig& c) {
    const std::string p = "tls_server_config";
    if (t.IsNull()) return;
    yamlcfg::requireKeys(t, p, {"cert_file", "cert", "key_file", "key", "client_auth_type", "client_ca_file", "client_ca",
                                "client_allowed_sans", "cipher_suites", "curve_preferences", "min_version", "max_version",
                                "prefer_server_cipher_suites"});
    TlsServerConfig tls;
    bool clientAuthGiven = false;
    if (auto n = t["cert_file"]) tls.certFile = pathOf(n, p + ".cert_file", file);
    if (auto n = t["key_file"]) tls.keyFile = pathOf(n, p + ".key_file", file);
    if (auto n = t["client_ca_file"]) tls.clientCaFile = pathOf(n, p + ".client_ca_file", file);
    // Inline PEM (exporter-toolkit 0.10+): where the file is given too, the file is read, as there.
    for (auto [key, fileKey, pem, path] : {std::tuple{"cert", "cert_file", &tls.certPem, &tls.certFile},
                                           {"key", "key_file", &tls.keyPem, &tls.keyFile},
                                           {"client_ca", "client_ca_file", &tls.clientCaPem, &tls.clientCaFile}}) {
        auto n = t[key];
        if (!n) continue;
        std::string v = scalar(n, p + "." + key);
        if (v.empty()) continue;
        if (!path->empty()) {
            const YAML::Mark m = n.Mark();
            c.warnings.push_back(file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + p + "." + key +
                                 ": not used: " + fileKey + " is given too, and the file is what is read");
            continue;
        }
        *pem = std::move(v);
    }
    if (auto n = t["client_auth_type"]) {
        // "" is NoClientCert, as in exporter-toolkit.
        clientAuthGiven = !scalar(n, p + ".client_auth_type").empty();
        if (clientAuthGiven) tls.clientAuth = oneOf(n, p + ".client_auth_type", kClientAuth);
    }
    if (auto n = t["min_version"]) tls.minVersion = oneOf(n, p + ".min_version", kVersions);
    if (auto n = t["max_version"]) tls.maxVersion = oneOf(n, p + ".max_version", kVersions);
    if (auto n = t["prefer_server_cipher_suites"]) tls.preferServerCipherSuites = yamlcfg::boolean(n, p + ".prefer_server_cipher_suites");
    if (auto n = t["cipher_suites"]) {
        tls.cipherSuites = strings(n, p + ".cipher_suites");
        for (std::size_t i = 0; i < tls.cipherSuites.size(); ++i) {
            const auto& known = knownCipherSuites();
            if (std::find(known.begin(), known.end(), tls.cipherSuites[i]) != known.end()) continue;
            // Go's InsecureCipherSuites(): the RSA key exchange ones were in its secure list before Go 1.22.
            static constexpr std::string_view kInsecure[] = {
                "TLS_RSA_WITH_RC4_128_SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA", "TLS_RSA_WITH_AES_128_CBC_SHA",
                "TLS_RSA_WITH_AES_256_CBC_SHA", "TLS_RSA_WITH_AES_128_CBC_SHA256", "TLS_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
                "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"};
            if (std::find(std::begin(kInsecure), std::end(kInsecure), tls.cipherSuites[i]) != std::end(kInsecure))
                bad(n[i], p + ".cipher_suites", "'" + tls.cipherSuites[i] + "' is not offered: Go lists it as insecure, and exporter-toolkit "
                                                "built with Go 1.22 or later (Debian 13's) refuses it");
            bad(n[i], p + ".cipher_suites", "unknown cipher suite '" + tls.cipherSuites[i] + "' (Go's crypto/tls names, such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)");
        }
    }
    if (auto n = t["curve_preferences"]) {
        tls.curvePreferences = strings(n, p + ".curve_preferences");
        for (std::size_t i = 0; i < tls.curvePreferences.size(); ++i)
            if (std::find(std::begin(kCurves), std::end(kCurves), tls.curvePreferences[i]) == std::end(kCurves))
                bad(n[i], p + ".curve_preferences", "unknown curve '" + tls.curvePreferences[i] + "' (expected CurveP256, CurveP384, CurveP521 or X25519)");
    }
    if (auto n = t["client_allowed_sans"]) tls.clientAllowedSans = strings(n, p + ".client_allowed_sans");

    // TLS is on when any of its keys is given; then it needs a certificate and its key.
    if (!tls.hasCert() && !tls.hasKey() && !tls.hasClientCa() && !clientAuthGiven) {
        if (!tls.clientAllowedSans.empty()) bad(t["client_allowed_sans"], p + ".client_allowed_sans", "needs TLS with client certificates (cert_file, key_file, client_auth_type)");
        return;
    }
    if (!tls.hasCert()) bad(t, p + ".cert_file", "TLS needs a certificate: cert_file (or cert, inline) is missing or empty");
    if (!tls.hasKey()) bad(t, p + ".key_file", "TLS needs the certificate's key: key_file (or key, inline) is missing or empty");
    if (tls.minVersion > tls.maxVersion)
        bad(t["min_version"], p + ".min_version", std::string("is above max_version (") + toString(tls.maxVersion) + ")");
    const char* caKey = tls.clientCaFile.empty() && !tls.clientCaPem.empty() ? "client_ca" : "client_ca_file";
    if (tls.hasClientCa() && tls.clientAuth == ClientAuth::kNoClientCert)
        bad(t[caKey], p + "." + caKey, "a client CA is given but client_auth_type asks for no client certificate");
    // Where exporter-toolkit would verify client certificates against no CA at all (every
    // certificate refused), the file is refused instead.
    if (tls.verifiesClients() && !tls.hasClientCa())
        bad(t["client_auth_type"], p + ".client_auth_type", std::string(toString(tls.clientAuth)) + " verifies client certificates: client_ca_file is required (or client_ca, inline)");
    if (!tls.clientAllowedSans.empty() && tls.clientAuth != ClientAuth::kRequireAnyClientCert &&
        tls.clientAuth != ClientAuth::kRequireAndVerifyClientCert)
        bad(t["client_allowed_sans"], p + ".client_allowed_sans", "needs client_auth_type RequireAnyClientCert or RequireAndVerifyClientCert");
    // As exporter-toolkit, taken; but no CA checks the certificate, so anyone can make one that
    // names an allowed SAN.
    if (!tls.clientAllowedSans.empty() && tls.clientAuth == ClientAuth::kRequireAnyClientCert && !tls.hasClientCa()) {
        const YAML::Mark m = t["client_allowed_sans"].Mark();
        c.warnings.push_back(file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + p +
                             ".client_allowed_sans: with RequireAnyClientCert and no client_ca_file no certificate is verified, so "
                             "any self-signed certificate can claim these names: they authenticate nothing (use "
                             "RequireAndVerifyClientCert with client_ca_file)");
    }
    c.tls = std::move(tls);
}

void parseHttp(const YAML::Node& h, WebConfig& c) {
    const std::string p = "http_server_config";
    if (h.IsNull()) return;
    yamlcfg::requireKeys(h, p, {"http2", "headers"});
    if (auto n = h["http2"]) c.http2 = yamlcfg::boolean(n, p + ".http2");
    if (auto n = h["headers"]; n && !n.IsNull()) {
        if (!n.IsMap()) bad(n, p + ".headers", "expected a mapping of header names to values");
        for (const auto& kv : n) {
            const std::string name = scalar(kv.first, p + ".headers");
            const std::string value = scalar(kv.second, p + ".headers." + name);
            const auto& rules = headerRules();
            auto rule = std::find_if(rules.begin(), rules.end(), [&](const HeaderRule& r) { return r.name == name; });
            if (rule == rules.end()) {
                std::string list;
                for (const auto& r : rules) list += (list.empty() ? "" : ", ") + std::string(r.name);
                bad(kv.first, p + ".headers." + name, "this header can not be configured (expected one of: " + list + ")");
            }
            if (!rule->values.empty() &&
                std::find(rule->values.begin(), rule->values.end(), value) == rule->values.end()) {
                std::string list;
                for (auto v : rule->values) list += (list.empty() ? "" : ", ") + std::string(v);
                bad(kv.second, p + ".headers." + name, "expected one of " + list + ", got '" + value + "'");
            }
            c.headers.emplace_back(name, value);
        }
    }
}

void parseUsers(const YAML::Node& u, WebConfig& c) {
    if (u.IsNull()) return;
    if (!u.IsMap()) bad(u, "basic_auth_users", "expected a mapping of user names to bcrypt hashes");
    for (const auto& kv : u) {
        const std::string user = scalar(kv.first, "basic_auth_users");
        const std::string key = "basic_auth_users." + user;
        if (user.empty()) bad(kv.first, "basic_auth_users", "a user name may not be empty");
        // A ':' cannot be sent in basic auth's user-id (RFC 7617).
        if (user.find(':') != std::string::npos) bad(kv.first, key, "a user name may not contain ':'");
        const std::string hash = scalar(kv.second, key);
        if (!isBcryptHash(hash))
            bad(kv.second, key, "not a bcrypt hash ($2y$, $2b$ or $2a$, a cost from 04 to 31 and 53 characters; "
                                "make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`)");
        c.basicAuthUsers.emplace(user, hash);
    }
}

}  // namespace

const char* toString(ClientAuth a) {
    for (const auto& [name, value] : kClientAuth)
        if (value == a) return name.data();
    return "NoClientCert";
}

const char* toString(TlsVersion v) {
    for (const auto& [name, value] : kVersions)
        if (value == v) return name.data();
    return "TLS12";
}

const std::vector<std::string_view>& knownCipherSuites() {
    static const std::vector<std::string_view> names = {
        "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"};
    return names;
}

bool isBcryptHash(std::string_view h) {
    // ASCII classes by hand: std::isalnum follows the locale.
    auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
    auto b64 = [&](char ch) { return ch == '.' || ch == '/' || digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); };
    if (h.size() != 60 || !h.starts_with("$2") || (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') || h[3] != '$' || h[6] != '$')
        return false;
    if (!digit(h[4]) || !digit(h[5])) return false;
    const int cost = (h[4] - '0') * 10 + (h[5] - '0');
    return cost >= 4 && cost <= 31 && std::all_of(h.begin() + 7, h.end(), b64);
}

bool checkPassword(const std::string& hash, const std::string& password) {
    if (!isBcryptHash(hash)) return false;
    crypt_data data{};
    const char* got = ::crypt_r(password.c_str(), hash.c_str(), &data);
    if (!got || std::strlen(got) != hash.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < hash.size(); ++i) diff |= static_cast<unsigned char>(got[i] ^ hash[i]);
    return diff == 0;
}

Result<WebConfig> parseWebConfig(const std::string& text, const std::string& file) {
    WebConfig c;
    c.file = file;
    try {
        YAML::Node root = yamlcfg::loadDocument(text, "web configuration");
        yamlcfg::requireKeys(root, "", {"tls_server_config", "http_server_config", "basic_auth_users"});
        if (auto n = root["tls_server_config"]) parseTls(n, file, c);
        if (auto n = root["http_server_config"]) parseHttp(n, c);
        if (auto n = root["basic_auth_users"]) parseUsers(n, c);
    } catch (const yamlcfg::ConfigError& e) {
        return yamlcfg::located(file, e.mark, e.key, e.what);
    } catch (const YAML::Exception& e) {
        return yamlcfg::located(file, e.mark, "", "malformed YAML: " + e.msg);
    }
    return c;
}

Result<WebConfig> loadWebConfig(const std::string& file) {
    auto text = yamlcfg::readDocumentFile(file);
    if (!text) return failWith(text.error());
    auto c = parseWebConfig(*text, file);
    if (!c || !c->tls) return c;
    // Each file it names must be readable now (the TLS library reads them again when serving).
    for (const auto& [key, path] : {std::pair<const char*, const std::string&>{"cert_file", c->tls->certFile},
                                    {"key_file", c->tls->keyFile}, {"client_ca_file", c->tls->clientCaFile}}) {
        if (path.empty()) continue;
        if (auto r = readFileBounded(path, 1 << 20); !r)
            return fail(r.error().code, file + ": tls_server_config." + key, path,
                        std::string("cannot be read: ") + std::strerror(r.error().code ? r.error().code : EIO));
    }
    return c;
}

}  // namespace rxtune
