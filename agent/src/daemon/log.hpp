// The daemon's log lines: stderr, with the <N> prefix journald reads as the level.
#pragma once

#include <systemd/sd-daemon.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <string>

#include "core/text.hpp"

namespace rxtune {

inline void logLine(const char* prio, const std::string& msg) { std::cerr << prio << "rxtune: " << msg << std::endl; }

inline double epochSeconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

inline std::string isoNow() { return isoUtc(std::time(nullptr)); }

}  // namespace rxtune

#define LOG_E(m) ::rxtune::logLine(SD_ERR, m)
#define LOG_W(m) ::rxtune::logLine(SD_WARNING, m)
#define LOG_N(m) ::rxtune::logLine(SD_NOTICE, m)
#define LOG_I(m) ::rxtune::logLine(SD_INFO, m)
