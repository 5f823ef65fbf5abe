// rxtune daemon: the composition root of the host agent (event loop + scrape server).
#pragma once

#include <string>

namespace rxtune {

// Runs until SIGTERM/SIGINT. Returns the process exit code.
int runDaemon(const std::string& configPath, bool configGiven);

}  // namespace rxtune
