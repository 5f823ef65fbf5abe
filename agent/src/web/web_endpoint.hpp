// A web configuration made ready to serve: the files it names read and checked together (the key
// matches its certificate, the certificate is valid now, the client CA parses, GnuTLS takes the
// versions, ciphers and curves), so that a configuration that would fail a handshake is refused
// when it is loaded, with its file and key named, and never replaces one that works.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "web/web_config.hpp"

namespace rxtune {

struct WebTls {
    std::string certPem, keyPem, clientCaPem;  // the files' contents, as read when loaded
    std::string priorities;                    // GnuTLS's priority string for the versions, ciphers and curves
    ClientAuth clientAuth = ClientAuth::kNoClientCert;
    std::vector<std::string> clientAllowedSans;
    long long notAfter = 0;                    // the certificate's expiry (seconds since the epoch)
};

class WebEndpoint {
public:
    std::string file;               // the web config ("" for the default: plain HTTP, no users)
    std::string digest;             // of the web config and of every file it names
    std::vector<std::string> files; // the web config and the files it names (watched for changes)
    std::unique_ptr<WebTls> tls;    // null: plain HTTP
    std::vector<std::pair<std::string, std::string>> headers;
    std::map<std::string, std::string> users;  // user -> bcrypt hash; empty: no authentication

    // Basic auth against `users`: bcrypt (slow on purpose), so a user's last good password is
    // remembered by its SHA-256 and checked again without bcrypt. An unknown user costs a bcrypt
    // too, so that the time taken does not say which users exist. At most kBcryptPerSecond
    // bcrypt checks run a second (a burst of as many): beyond that a password not remembered is
    // refused unchecked, so guessing cannot take the server's thread from the scrapes. One
    // thread calls it (the server's).
    static constexpr double kBcryptPerSecond = 10;
    bool authorize(const std::string& user, const std::string& password) const;
    bool authorize(const std::string& user, const std::string& password, double nowSeconds) const;

private:
    mutable std::map<std::string, std::array<unsigned char, 32>> verified_;
    mutable double tokens_ = kBcryptPerSecond, refilledAt_ = -1;
};

// Reads the files `cfg` names and checks them together; errors name the web config file and key.
Result<std::shared_ptr<const WebEndpoint>> prepareWebEndpoint(const WebConfig& cfg);
// The default endpoint: plain HTTP, no users, no extra headers.
std::shared_ptr<const WebEndpoint> plainWebEndpoint();

// GnuTLS's priority string for the versions, cipher suites and curves of `tls` (exporter-toolkit's
// meaning: cipher_suites restrict TLS 1.0-1.2); an error names the key when GnuTLS cannot express
// the set exactly.
Result<std::string> tlsPriorities(const TlsServerConfig& tls, const std::string& file);

}  // namespace rxtune
