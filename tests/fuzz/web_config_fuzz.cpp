// libFuzzer target: the scrape endpoint's web configuration parser (exporter-toolkit's format,
// read at start and on every reload) turns any text into a config or a located error, never
// crashes or hangs; what it lets through keeps its rules (TLS with a certificate and its key,
// versions in order, bcrypt hashes only).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "web/web_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto c = rxtune::parseWebConfig(text, "/etc/rxtune/web.yml");
    if (!c) {
        if (c.error().message().rfind("/etc/rxtune/web.yml", 0) != 0) std::abort();
        return 0;
    }
    if (c->tls) {
        if (c->tls->certFile.empty() || c->tls->keyFile.empty()) std::abort();
        if (c->tls->minVersion > c->tls->maxVersion) std::abort();
        if (c->tls->verifiesClients() && c->tls->clientCaFile.empty()) std::abort();
    }
    for (const auto& [user, hash] : c->basicAuthUsers)
        if (user.empty() || !rxtune::isBcryptHash(hash)) std::abort();
    return 0;
}
