#include "core/result.hpp"

#include <cstring>

namespace rxtune {

std::string Error::message() const {
    std::string out;
    for (auto it = context.rbegin(); it != context.rend(); ++it) {
        out += *it;
        out += ": ";
    }
    out += op;
    if (!path.empty()) {
        out += ' ';
        out += path;
    }
    out += ": ";
    if (!detail.empty())
        out += detail;
    else if (code != 0)
        out += std::strerror(code);
    else
        out += "failed";
    return out;
}

}  // namespace rxtune
