// The process's effective capabilities (capget), for saying at start what will not work.
#pragma once

#include <cstdint>

#include "core/result.hpp"

namespace rxtune {

class Capabilities {
public:
    static Result<Capabilities> effective();
    bool has(int cap) const { return cap >= 0 && cap < 64 && ((bits_ >> cap) & 1u) != 0; }

private:
    std::uint64_t bits_ = 0;
};

}  // namespace rxtune
