#include "web/basic_auth.hpp"

namespace rxtune {

namespace {

// Standard base64 with its padding, as Go's StdEncoding reads it; nullopt on anything else.
std::optional<std::string> base64Decode(std::string_view in) {
    if (in.empty() || in.size() % 4 != 0) return std::nullopt;
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::string out;
    out.reserve(in.size() / 4 * 3);
    for (std::size_t i = 0; i < in.size(); i += 4) {
        const bool last = i + 4 == in.size();
        const int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=') : 0;
        if (pad == 1 && in[i + 2] == '=') return std::nullopt;  // "x==y" is not padding
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            const int d = k >= 4 - pad ? 0 : value(in[i + static_cast<std::size_t>(k)]);
            if (d < 0) return std::nullopt;
            v = v << 6 | static_cast<unsigned>(d);
        }
        out.push_back(static_cast<char>(v >> 16));
        if (pad < 2) out.push_back(static_cast<char>(v >> 8 & 0xff));
        if (pad < 1) out.push_back(static_cast<char>(v & 0xff));
    }
    return out;
}

}  // namespace

std::optional<std::pair<std::string, std::string>> parseBasicAuth(std::string_view h) {
    constexpr std::string_view kScheme = "basic";
    if (h.size() <= kScheme.size() || h[kScheme.size()] != ' ') return std::nullopt;
    for (std::size_t i = 0; i < kScheme.size(); ++i)
        if ((h[i] | 0x20) != kScheme[i]) return std::nullopt;  // ASCII case folding: the scheme is case-insensitive
    std::string_view token = h.substr(kScheme.size());
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    auto plain = base64Decode(token);
    if (!plain) return std::nullopt;
    const auto colon = plain->find(':');
    if (colon == std::string::npos) return std::nullopt;
    return std::pair{plain->substr(0, colon), plain->substr(colon + 1)};
}

std::string basicAuthHeader(const std::string& user, const std::string& password) {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const std::string in = user + ":" + password;
    std::string out = "Basic ";
    for (std::size_t i = 0; i < in.size(); i += 3) {
        unsigned v = static_cast<unsigned>(static_cast<unsigned char>(in[i])) << 16;
        if (i + 1 < in.size()) v |= static_cast<unsigned>(static_cast<unsigned char>(in[i + 1])) << 8;
        if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
        out += kAlphabet[v >> 18 & 63];
        out += kAlphabet[v >> 12 & 63];
        out += i + 1 < in.size() ? kAlphabet[v >> 6 & 63] : '=';
        out += i + 2 < in.size() ? kAlphabet[v & 63] : '=';
    }
    return out;
}

}  // namespace rxtune
