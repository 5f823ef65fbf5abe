// The scrape endpoint's web configuration, in the format of Prometheus's exporter-toolkit (what
// node_exporter's --web.config.file reads, and `promtool check web-config` checks): TLS, client
// certificates, basic auth users with bcrypt hashes, extra response headers.
//
//   tls_server_config:   {cert_file | cert, key_file | key, client_auth_type, client_ca_file | client_ca,
//                         client_allowed_sans, cipher_suites, curve_preferences, min_version,
//                         max_version, prefer_server_cipher_suites}
//
// The format is exporter-toolkit's as Debian 13 ships it (Prometheus 2.53, Go 1.24): certificates
// and keys inline (cert, key, client_ca) as well as in files, a file taking precedence over its
// inline twin as there (with a warning here); cipher suites from Go's secure list only (the
// RSA-key-exchange and 3DES suites Go 1.22+ no longer offers are refused). Debian 12's promtool
// (2.42, Go 1.19) knows neither the inline keys nor refuses those suites.
//   http_server_config:  {http2, headers}
//   basic_auth_users:    {user: bcrypt hash}
//
// parseWebConfig checks the text (keys, values, the rules between them) and reads no file;
// loadWebConfig reads the file and checks that the files it names can be read.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace rxtune {

// crypto/tls's ClientAuthType, by exporter-toolkit's names.
enum class ClientAuth { kNoClientCert, kRequestClientCert, kRequireAnyClientCert, kVerifyClientCertIfGiven, kRequireAndVerifyClientCert };
const char* toString(ClientAuth a);

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };
const char* toString(TlsVersion v);  // "TLS12"

struct TlsServerConfig {
    std::string certFile, keyFile, clientCaFile;  // a relative path is joined to the config file's directory
    std::string certPem, keyPem, clientCaPem;     // given inline (cert, key, client_ca); used where the file is not given
    ClientAuth clientAuth = ClientAuth::kNoClientCert;
    std::vector<std::string> clientAllowedSans;   // any SAN of the client's certificate (DNS, e-mail, IP, URI)
    std::vector<std::string> cipherSuites;        // Go's names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); empty: the library's
    std::vector<std::string> curvePreferences;    // CurveP256, CurveP384, CurveP521, X25519
    TlsVersion minVersion = TlsVersion::kTls12;
    TlsVersion maxVersion = TlsVersion::kTls13;
    bool preferServerCipherSuites = true;
    bool hasCert() const { return !certFile.empty() || !certPem.empty(); }
    bool hasKey() const { return !keyFile.empty() || !keyPem.empty(); }
    bool hasClientCa() const { return !clientCaFile.empty() || !clientCaPem.empty(); }
    bool verifiesClients() const {
        return clientAuth == ClientAuth::kVerifyClientCertIfGiven || clientAuth == ClientAuth::kRequireAndVerifyClientCert;
    }
};

struct WebConfig {
    std::string file;
    std::optional<TlsServerConfig> tls;  // nullopt: plain HTTP (no TLS key given at all)
    bool http2 = true;
    std::vector<std::pair<std::string, std::string>> headers;  // in the file's order
    std::map<std::string, std::string> basicAuthUsers;         // user -> bcrypt hash; empty: no auth
    std::vector<std::string> warnings;  // taken as the toolkit takes them, but weaker than they look: file:line:col: key: why
};

// Errors name the file, line, column and key: `web.yml:3:14: tls_server_config.min_version: ...`.
Result<WebConfig> parseWebConfig(const std::string& text, const std::string& file);
Result<WebConfig> loadWebConfig(const std::string& file);

// A bcrypt hash as crypt(3) and Go's bcrypt write it: $2a$, $2b$ or $2y$, a cost from 04 to 31,
// then 53 characters of bcrypt's base64.
bool isBcryptHash(std::string_view hash);
// The password against its bcrypt hash (crypt(3) from libxcrypt), compared in constant time.
bool checkPassword(const std::string& hash, const std::string& password);

// The cipher suites exporter-toolkit takes: Go's crypto/tls CipherSuites() (its secure list) as of Go 1.22.
const std::vector<std::string_view>& knownCipherSuites();

}  // namespace rxtune
