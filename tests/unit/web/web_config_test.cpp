#include <catch2/catch.hpp>

#include <crypt.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../support/bcrypt.hpp"
#include "../support/temp_dir.hpp"
#include "web/web_config.hpp"

using namespace rxtune;

namespace {

using test::TempDir;

// $2b$ here, $2y$ in the endpoint's tests: each prefix is taken.
std::string bcrypt(const std::string& password) { return test::bcrypt(password, "$2b$"); }

std::string errorOf(const std::string& text) {
    auto c = parseWebConfig(text, "/etc/rxtune/web.yml");
    REQUIRE_FALSE(c);
    return c.error().message();
}

}  // namespace

TEST_CASE("a web config in exporter-toolkit's format is read whole", "[web]") {
    const std::string hash = bcrypt("s3cret");
    auto c = parseWebConfig("tls_server_config:\n"
                            "  cert_file: tls/server.crt\n"
                            "  key_file: /etc/rxtune/tls/server.key\n"
                            "  client_auth_type: RequireAndVerifyClientCert\n"
                            "  client_ca_file: ../ca.crt\n"
                            "  client_allowed_sans: [prometheus.example.org]\n"
                            "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n"
                            "  curve_preferences: [X25519]\n"
                            "  min_version: TLS13\n"
                            "  prefer_server_cipher_suites: false\n"
                            "http_server_config:\n"
                            "  http2: false\n"
                            "  headers:\n"
                            "    X-Frame-Options: deny\n"
                            "    Strict-Transport-Security: max-age=31536000\n"
                            "basic_auth_users:\n"
                            "  prometheus: " + hash + "\n",
                            "/etc/rxtune/web.yml");
    REQUIRE(c);
    REQUIRE(c->tls);
    CHECK(c->tls->certFile == "/etc/rxtune/tls/server.crt");  // relative to the file's directory
    CHECK(c->tls->keyFile == "/etc/rxtune/tls/server.key");
    CHECK(c->tls->clientCaFile == "/etc/ca.crt");
    CHECK(c->tls->clientAuth == ClientAuth::kRequireAndVerifyClientCert);
    CHECK(c->tls->clientAllowedSans == std::vector<std::string>{"prometheus.example.org"});
    CHECK(c->tls->minVersion == TlsVersion::kTls13);
    CHECK(c->tls->maxVersion == TlsVersion::kTls13);
    CHECK_FALSE(c->tls->preferServerCipherSuites);
    CHECK_FALSE(c->http2);
    REQUIRE(c->headers.size() == 2);
    CHECK(c->headers[0].first == "X-Frame-Options");
    CHECK(c->basicAuthUsers.at("prometheus") == hash);
    CHECK(checkPassword(hash, "s3cret"));
    CHECK_FALSE(checkPassword(hash, "s3cret "));
    CHECK_FALSE(checkPassword(hash, ""));

    SECTION("no TLS key at all is plain HTTP; basic auth alone is allowed") {
        auto p = parseWebConfig("basic_auth_users:\n  a: " + hash + "\n", "w.yml");
        REQUIRE(p);
        CHECK_FALSE(p->tls);
        CHECK(p->basicAuthUsers.size() == 1);
        for (const std::string t : {"tls_server_config:\n", "tls_server_config: {}\n", "http_server_config:\n  headers:\n"}) {
            INFO(t);
            auto q = parseWebConfig(t, "w.yml");
            REQUIRE(q);
            CHECK_FALSE(q->tls);
        }
    }
}

TEST_CASE("a bad web config is refused with its file, line, column and key", "[web]") {
    const std::string tls = "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n";
    CHECK(errorOf("tls_server_config:\n  cert: x\n").starts_with("/etc/rxtune/web.yml:2:3: tls_server_config.cert: unknown key"));
    CHECK(errorOf("tls_server_config:\n  cert_file: c.pem\n").find("tls_server_config.key_file: TLS needs the certificate's key") != std::string::npos);
    CHECK(errorOf("tls_server_config:\n  key_file: k.pem\n").find("tls_server_config.cert_file: TLS needs a certificate") != std::string::npos);
    CHECK(errorOf(tls + "  min_version: TLS14\n").starts_with("/etc/rxtune/web.yml:4:16: tls_server_config.min_version: expected one of TLS10, TLS11, TLS12, TLS13, got 'TLS14'"));
    CHECK(errorOf(tls + "  min_version: TLS13\n  max_version: TLS12\n").find("min_version: is above max_version (TLS12)") != std::string::npos);
    CHECK(errorOf(tls + "  client_auth_type: Sometimes\n").find("client_auth_type: expected one of NoClientCert, RequestClientCert") != std::string::npos);
    CHECK(errorOf(tls + "  client_ca_file: ca.pem\n").find("client_ca_file: a client CA is given but client_auth_type asks for no client certificate") != std::string::npos);
    CHECK(errorOf(tls + "  client_auth_type: RequireAndVerifyClientCert\n").find("client_ca_file is required") != std::string::npos);
    CHECK(errorOf(tls + "  client_auth_type: RequestClientCert\n  client_allowed_sans: [a]\n").find("client_allowed_sans: needs client_auth_type RequireAnyClientCert or RequireAndVerifyClientCert") != std::string::npos);
    CHECK(errorOf(tls + "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n").starts_with("/etc/rxtune/web.yml:4:19: tls_server_config.cipher_suites: unknown cipher suite 'TLS_RSA_WITH_RC4_128_SHA'"));
    CHECK(errorOf(tls + "  curve_preferences: [CurveP999]\n").find("unknown curve 'CurveP999'") != std::string::npos);
    CHECK(errorOf(tls + "  prefer_server_cipher_suites: yes\n").find("expected true or false, got 'yes'") != std::string::npos);
    CHECK(errorOf("http_server_config:\n  headers:\n    Server: rxtune\n").starts_with("/etc/rxtune/web.yml:3:5: http_server_config.headers.Server: this header can not be configured"));
    CHECK(errorOf("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n").find("expected one of nosniff, got 'sniff'") != std::string::npos);
    CHECK(errorOf("basic_auth_users:\n  alice: secret\n").starts_with("/etc/rxtune/web.yml:2:10: basic_auth_users.alice: not a bcrypt hash"));
    CHECK(errorOf("basic_auth_users:\n  'a:b': " + bcrypt("x") + "\n").find("may not contain ':'") != std::string::npos);
    CHECK(errorOf("basic_auth_users: [a]\n").find("basic_auth_users: expected a mapping") != std::string::npos);
    CHECK(errorOf("web: {}\n").starts_with("/etc/rxtune/web.yml:1:1: web: unknown key"));
    CHECK(errorOf("").find("empty web configuration") != std::string::npos);
    CHECK(errorOf("a: &x [*x]\n").find("/etc/rxtune/web.yml") == 0);
}

TEST_CASE("bcrypt hashes are told from anything else", "[web]") {
    const std::string h = bcrypt("pw");
    CHECK(isBcryptHash(h));
    CHECK(isBcryptHash("$2y$10$" + h.substr(7)));
    CHECK(isBcryptHash("$2a$31$" + h.substr(7)));
    CHECK_FALSE(isBcryptHash("$2x$10$" + h.substr(7)));
    CHECK_FALSE(isBcryptHash("$2b$03$" + h.substr(7)));
    CHECK_FALSE(isBcryptHash("$2b$32$" + h.substr(7)));
    CHECK_FALSE(isBcryptHash(h.substr(0, 59)));
    CHECK_FALSE(isBcryptHash(h + "a"));
    CHECK_FALSE(isBcryptHash("$6$saltsalt$" + std::string(86, 'a')));  // sha512crypt
    CHECK_FALSE(isBcryptHash("$2b$10$" + std::string(52, 'a') + "!"));
}

TEST_CASE("loading a web config reads the files it names", "[web]") {
    TempDir d("rxtune-web");
    d.put("c.pem", "certificate\n");
    d.put("k.pem", "key\n");
    auto ok = loadWebConfig(d.put("w.yml", "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n"));
    REQUIRE(ok);
    CHECK(ok->tls->certFile == (d.path / "c.pem").string());
    auto missing = loadWebConfig(d.put("w.yml", "tls_server_config:\n  cert_file: c.pem\n  key_file: nokey.pem\n"));
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message().find("tls_server_config.key_file") != std::string::npos);
    CHECK(missing.error().message().find("nokey.pem: cannot be read") != std::string::npos);
    CHECK_FALSE(loadWebConfig((d.path / "absent.yml").string()));
}

// Where both decide, rxtune and Debian 12's promtool (exporter-toolkit inside) take and refuse the
// same files. Left out on purpose, each tested above: client_allowed_sans (a key of later
// exporter-toolkit releases, unknown to promtool 2.42), a verifying client_auth_type without
// client_ca_file and min_version above max_version (promtool takes both; every handshake would
// then fail, so rxtune refuses the file).
TEST_CASE("rxtune and promtool check web-config agree", "[web][promtool]") {
    if (std::system("command -v promtool >/dev/null 2>&1") != 0) FAIL("promtool is missing: make deps installs the Debian package prometheus");
    TempDir d("rxtune-web");
    const std::string gen = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost "
                            "-keyout " + (d.path / "k.pem").string() + " -out " + (d.path / "c.pem").string() + " >/dev/null 2>&1";
    REQUIRE(std::system(gen.c_str()) == 0);
    const std::string tls = "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n";
    const std::string hash = bcrypt("pw");
    const std::vector<std::string> configs = {
        tls,
        tls + "  min_version: TLS13\n",
        tls + "  min_version: TLS11\n",
        tls + "  min_version: TLS14\n",
        tls + "  client_auth_type: RequireAnyClientCert\n",
        tls + "  client_auth_type: RequireClientCert\n",
        tls + "  client_auth_type: RequestClientCert\n",
        tls + "  client_auth_type: NoClientCert\n",
        tls + "  client_auth_type: \"\"\n",
        tls + "  client_auth_type: Always\n",
        tls + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: c.pem\n",
        tls + "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: c.pem\n",
        tls + "  client_ca_file: c.pem\n",
        tls + "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_128_CBC_SHA, TLS_AES_128_GCM_SHA256]\n",
        tls + "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256]\n",
        tls + "  curve_preferences: [CurveP256, X25519]\n",
        tls + "  curve_preferences: [P256]\n",
        tls + "  prefer_server_cipher_suites: false\n",
        tls + "  cert: x\n",
        tls + "  http2: true\n",
        "tls_server_config:\n  cert_file: c.pem\n",
        "tls_server_config:\n  key_file: k.pem\n",
        "tls_server_config:\n  cert_file: absent.pem\n  key_file: k.pem\n",
        "tls_server_config:\n",
        "http_server_config:\n  http2: false\n",
        "http_server_config:\n  headers:\n    X-Frame-Options: deny\n    X-XSS-Protection: '1; mode=block'\n",
        "http_server_config:\n  headers:\n    X-Frame-Options: DENY\n",
        "http_server_config:\n  headers:\n    X-Powered-By: me\n",
        "basic_auth_users:\n  alice: " + hash + "\n",
        "basic_auth_users:\n  alice: hunter2\n",
        "basic_auth_users:\n  alice: " + hash + "\n  bob: " + hash.substr(0, 50) + "\n",
        tls + "basic_auth_users:\n  alice: " + hash + "\n",
        "users:\n  alice: x\n",
    };
    for (const auto& text : configs) {
        INFO(text);
        const std::string file = d.put("web.yml", text);
        const bool promtool = std::system(("promtool check web-config " + file + " >/dev/null 2>&1").c_str()) == 0;
        auto ours = loadWebConfig(file);
        INFO((ours ? std::string("rxtune: ok") : "rxtune: " + ours.error().message()));
        CHECK(ours.has_value() == promtool);
    }
}

TEST_CASE("client_allowed_sans without a CA to check them is taken with a located warning", "[web]") {
    const std::string head = "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n";
    auto weak = parseWebConfig(head + "  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: [prom.example]\n", "/etc/rxtune/web.yml");
    REQUIRE(weak);
    REQUIRE(weak->warnings.size() == 1);
    CHECK(weak->warnings[0].rfind("/etc/rxtune/web.yml:5:24: tls_server_config.client_allowed_sans: with RequireAnyClientCert and no "
                                  "client_ca_file no certificate is verified",
                                  0) == 0);
    // With a CA, or where the CA verifies: no warning.
    for (const std::string& rest : {std::string("  client_auth_type: RequireAnyClientCert\n  client_ca_file: ca.crt\n  client_allowed_sans: [p]\n"),
                                    std::string("  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  client_allowed_sans: [p]\n")}) {
        auto c = parseWebConfig(head + rest, "/etc/rxtune/web.yml");
        REQUIRE(c);
        CHECK(c->warnings.empty());
    }
}
