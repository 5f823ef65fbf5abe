// rxtune reload: asks the running daemon to reload its configuration and profile, and waits for
// its answer (the image has no shell and no kill: `kubectl exec ... -- rxtune reload`).
#pragma once

#include <string>

namespace rxtune {

struct ReloadOptions {
    std::string runDir = "/run/rxtune";
    unsigned timeoutMs = 10000;
};

// 0 reloaded, 1 refused (the running configuration stays) or no daemon, 2 no answer in time.
int runReload(const ReloadOptions& o);

}  // namespace rxtune
