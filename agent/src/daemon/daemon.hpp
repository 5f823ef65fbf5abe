// rxtune daemon: the composition root of the host agent (event loop + scrape server).
#pragma once

#include <string>

namespace rxtune {

// Runs until SIGTERM/SIGINT. Returns the process exit code.
// webConfigFile: --web.config.file ("" : the configuration's web_config key, if any).
int runDaemon(const std::string& configPath, bool configGiven, const std::string& webConfigFile);

}  // namespace rxtune
