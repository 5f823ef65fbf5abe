// libFuzzer target: the daemon's configuration parser turns any text into a config or a located
// error (a ConfigMap reaches it on every reload), never crashes or hangs.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "profile/daemon_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto c = rxtune::parseDaemonConfig(text, "fuzz.yaml");
    if (!c && c.error().message().rfind("fuzz.yaml", 0) != 0) std::abort();
    // A path the parser let through is absolute: the empty state_dir that put the journal at /.
    if (c)
        for (const std::string* p : {&c->stateDir, &c->runDir, &c->bpfDir, &c->procSys})
            if (p->empty() || p->front() != '/') std::abort();
    return 0;
}
