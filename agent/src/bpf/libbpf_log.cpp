#include "bpf/libbpf_log.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <mutex>

#include <bpf/libbpf.h>

namespace rxtune {

namespace {

std::mutex gMutex;
std::string gLast;

int print(enum libbpf_print_level level, const char* fmt, va_list args) {
    if (level == LIBBPF_DEBUG) return 0;
    char buf[512];
    int n = std::vsnprintf(buf, sizeof buf, fmt, args);
    std::string line(buf, n > 0 ? std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1) : 0);
    while (!line.empty() && line.back() == '\n') line.pop_back();
    std::lock_guard<std::mutex> lock(gMutex);
    if (!line.empty()) gLast = line;
    return 0;
}

}  // namespace

void routeLibbpfLog() {
    static std::once_flag once;
    std::call_once(once, [] { libbpf_set_print(print); });
}

std::string lastLibbpfMessage() {
    std::lock_guard<std::mutex> lock(gMutex);
    return gLast;
}

void clearLibbpfMessage() {
    std::lock_guard<std::mutex> lock(gMutex);
    gLast.clear();
}

}  // namespace rxtune
