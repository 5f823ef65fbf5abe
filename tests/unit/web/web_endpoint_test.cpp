#include <catch2/catch.hpp>


#include <cstdlib>
#include <string>

#include "../support/bcrypt.hpp"
#include "../support/temp_dir.hpp"
#include "web/auth_guard.hpp"
#include "web/web_endpoint.hpp"

using namespace rxtune;
using test::bcrypt;
using test::TempDir;

namespace {

TlsServerConfig suites(std::vector<std::string> names) {
    TlsServerConfig t;
    t.cipherSuites = std::move(names);
    return t;
}

std::string priorityError(const TlsServerConfig& t) {
    auto p = tlsPriorities(t, "/etc/rxtune/web.yml");
    REQUIRE_FALSE(p);
    return p.error().message();
}

// Two self-signed pairs made here by openssl (never shipped keys).
void makePairs(const TempDir& d) {
    for (const char* n : {"a", "b"}) {
        const std::string gen = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=" +
                                std::string(n) + " -keyout " + (d.path / (std::string(n) + ".key")).string() + " -out " +
                                (d.path / (std::string(n) + ".crt")).string() + " >/dev/null 2>&1";
        REQUIRE(std::system(gen.c_str()) == 0);
    }
}

}  // namespace

TEST_CASE("versions, cipher suites and curves become GnuTLS's priorities, exactly or not at all", "[web]") {
    TlsServerConfig t;
    CHECK(tlsPriorities(t, "w.yml").value() == "NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.3:%SERVER_PRECEDENCE");
    t.minVersion = TlsVersion::kTls13;
    t.preferServerCipherSuites = false;
    t.curvePreferences = {"X25519", "CurveP256"};
    CHECK(tlsPriorities(t, "w.yml").value() == "NORMAL:-VERS-ALL:+VERS-TLS1.3:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1");

    // Suites whose parts make nothing more than themselves.
    auto gcm = tlsPriorities(suites({"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}), "w.yml");
    REQUIRE(gcm);
    CHECK(gcm->find(":-KX-ALL:-CIPHER-ALL:-MAC-ALL:+ECDHE-RSA:+AES-128-GCM:+AES-256-GCM:+AEAD") != std::string::npos);
    // TLS 1.3 names are Go's too, and ignored as Go ignores them.
    CHECK(tlsPriorities(suites({"TLS_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}), "w.yml"));
    // Two key exchanges and two ciphers make four suites: GnuTLS cannot enable only two.
    const std::string e = priorityError(suites({"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}));
    CHECK(e.find("/etc/rxtune/web.yml: tls_server_config.cipher_suites") != std::string::npos);
    CHECK(e.find("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256") != std::string::npos);
    CHECK(e.find("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384") != std::string::npos);
    // Listing the four is fine.
    CHECK(tlsPriorities(suites({"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}),
                        "w.yml"));
}

TEST_CASE("a web config's files are read and checked together when it is prepared", "[web]") {
    TempDir d("rxtune-endpoint");
    makePairs(d);
    const std::string file = (d.path / "web.yml").string();
    WebConfig c;
    c.file = file;
    d.put("web.yml", "# text\n");
    c.tls = TlsServerConfig{};
    c.tls->certFile = (d.path / "a.crt").string();
    c.tls->keyFile = (d.path / "a.key").string();
    auto ok = prepareWebEndpoint(c);
    REQUIRE(ok);
    REQUIRE((*ok)->tls);
    CHECK((*ok)->tls->certPem.find("BEGIN CERTIFICATE") != std::string::npos);
    CHECK((*ok)->files == std::vector<std::string>{file, c.tls->certFile, c.tls->keyFile});
    const std::string digest = (*ok)->digest;

    // Another certificate is another digest: what a reload compares.
    c.tls->certFile = (d.path / "b.crt").string();
    c.tls->keyFile = (d.path / "b.key").string();
    auto other = prepareWebEndpoint(c);
    REQUIRE(other);
    CHECK((*other)->digest != digest);

    c.tls->keyFile = (d.path / "a.key").string();
    auto mismatch = prepareWebEndpoint(c);
    REQUIRE_FALSE(mismatch);
    CHECK(mismatch.error().message().find(file + ": tls_server_config.key_file " + c.tls->keyFile + ": is not the key of cert_file") !=
          std::string::npos);

    c.tls->keyFile = (d.path / "b.key").string();
    c.tls->clientCaFile = (d.path / "web.yml").string();
    c.tls->clientAuth = ClientAuth::kRequireAndVerifyClientCert;
    auto badCa = prepareWebEndpoint(c);
    REQUIRE_FALSE(badCa);
    CHECK(badCa.error().message().find("tls_server_config.client_ca_file") != std::string::npos);

    c.tls->clientCaFile = (d.path / "missing.crt").string();
    auto missing = prepareWebEndpoint(c);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message().find("tls_server_config.client_ca_file " + c.tls->clientCaFile + ": cannot be read") != std::string::npos);
}

TEST_CASE("the decoy for unknown users has the highest configured cost", "[web]") {
    WebConfig c;  // users only: no file to read
    c.basicAuthUsers = {{"a", bcrypt("x")}, {"b", "$2y$12$" + bcrypt("y").substr(7)}};
    auto ep = prepareWebEndpoint(c);
    REQUIRE(ep);
    CHECK(bcryptCost((*ep)->decoy) == 12);
    CHECK(isBcryptHash((*ep)->decoy));
    c.basicAuthUsers.clear();
    auto none = prepareWebEndpoint(c);
    REQUIRE(none);
    CHECK((*none)->decoy.empty());
}
