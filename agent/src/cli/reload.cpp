#include "cli/reload.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "sys/files.hpp"
#include "sys/signals.hpp"

namespace rxtune {

namespace {

// The file's text; "" where it is absent or unreadable (the daemon has not written it yet).
std::string slurp(const std::string& path) {
    auto text = readFileBounded(path, 1 << 20);
    return text ? *text : std::string();
}

}  // namespace

int runReload(const ReloadOptions& o) {
    const std::string pidFile = o.runDir + "/rxtune.pid";
    pid_t pid = 0;
    if (!parseUnsigned(trimmed(slurp(pidFile)), pid) || pid <= 0) {
        std::cerr << "rxtune reload: no running daemon: " << pidFile << " is missing or unreadable\n";
        return 1;
    }
    // The signal carries a token the daemon writes back with the outcome: the answer read is this
    // request's, not an earlier reload's or one a change on disk started.
    std::random_device rd;
    const int token = static_cast<int>(rd() & 0x7fffffff) | 1;
    if (auto sent = queueHangUp(pid, token); !sent) {
        std::cerr << "rxtune reload: cannot signal the daemon (pid " << pid << " from " << pidFile << "): " << sent.error().message() << "\n";
        return 1;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.timeoutMs);
    while (std::chrono::steady_clock::now() < deadline) {
        try {
            const auto j = nlohmann::json::parse(slurp(o.runDir + "/reload.json"));
            const auto t = j.find("token");
            if (t != j.end() && t->is_number_integer() && t->get<std::int64_t>() == token) {
                if (j.value("result", "") == "success") {
                    std::cout << "reloaded: profile " << j.value("profile", "") << " (" << j.value("digest", "") << ")\n";
                    return 0;
                }
                std::cerr << "rxtune reload: refused, the running configuration stays: " << j.value("error", "") << "\n";
                return 1;
            }
        } catch (const nlohmann::json::exception&) {
            // Not there yet, or an earlier daemon's: keep waiting.
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::cerr << "rxtune reload: the daemon (pid " << pid << ") did not answer within " << o.timeoutMs << " ms\n";
    return 2;
}

}  // namespace rxtune
