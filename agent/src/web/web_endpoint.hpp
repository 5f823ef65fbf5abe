// A web configuration made ready to serve: the files it names read and checked together (the key
// matches its certificate, the certificate is valid now, the client CA parses, GnuTLS takes the
// versions, ciphers and curves), so that a configuration that would fail a handshake is refused
// when it is loaded, with its file and key named, and never replaces one that works.
#pragma once

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

    std::string decoy;  // a hash of the highest configured cost, for unknown users (web/auth_guard)
    std::vector<std::string> warnings;  // the web config's, logged where it is loaded
};

// Reads the files `cfg` names and checks them together; errors name the web config file and key.
Result<std::shared_ptr<const WebEndpoint>> prepareWebEndpoint(const WebConfig& cfg);
// The default endpoint: plain HTTP, no users, no extra headers.
std::shared_ptr<const WebEndpoint> plainWebEndpoint();
// Whether a connection made under `a` may go on under `b`: the same TLS or none in both (the
// certificate, key, client CA, client_auth_type, allowed SANs and priorities).
bool sameTls(const WebEndpoint& a, const WebEndpoint& b);

// GnuTLS's priority string for the versions, cipher suites and curves of `tls` (exporter-toolkit's
// meaning: cipher_suites restrict TLS 1.0-1.2); an error names the key when GnuTLS cannot express
// the set exactly.
Result<std::string> tlsPriorities(const TlsServerConfig& tls, const std::string& file);

}  // namespace rxtune
