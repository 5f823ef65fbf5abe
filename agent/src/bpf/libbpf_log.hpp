// libbpf's own messages: kept (the last warning) for our error text instead of going to stderr.
#pragma once

#include <string>

namespace rxtune {

void routeLibbpfLog();          // idempotent
std::string lastLibbpfMessage();
void clearLibbpfMessage();

}  // namespace rxtune
