#include "sys/signals.hpp"

#include <signal.h>

#include <fstream>

namespace rxtune {

Result<void> SystemProcessSignals::hangUp(int pid, const std::string& comm) {
    if (pid <= 1) return fail(EINVAL, "kill", "pid " + std::to_string(pid));
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string now;
    if (!std::getline(in, now) || now != comm)
        return fail(ESRCH, "kill", "pid " + std::to_string(pid), "no longer " + comm);
    if (::kill(pid, SIGHUP) != 0) return fail(errno, "kill", "pid " + std::to_string(pid) + " (" + comm + ")", "SIGHUP");
    return {};
}

}  // namespace rxtune
