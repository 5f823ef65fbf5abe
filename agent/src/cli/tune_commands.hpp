// plan / apply / verify / revert: the one-shot tune commands.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/setting.hpp"

namespace rxtune {

struct TuneOptions {
    std::string profile = "single-queue-gateway";
    std::vector<std::string> interfaces;
    bool json = false;
    bool explain = false;          // plan --explain: why each CPU was chosen or left out
    unsigned sampleMs = 1000;      // mode auto: how long the one-shot commands measure
    std::string stateDir = "/var/lib/rxtune";
    std::string runDir = "/run/rxtune";
    std::string bpfDir = "/sys/fs/bpf/rxtune";  // where XDP steering pins its link and maps
};

// `rxtune plan --json`'s document (and apply's "plan" member).
nlohmann::ordered_json planJson(const Plan& p);

int runPlan(const TuneOptions& o);    // 0 nothing to do, 2 changes pending, 1 error
int runApply(const TuneOptions& o);   // 0 applied (or nothing to do), 1 error (host unchanged, or the journal kept to revert)
int runVerify(const TuneOptions& o);  // 0 in sync, 3 drift, 1 error
int runRevert(const TuneOptions& o);  // 0 restored (or nothing to revert), 1 error

}  // namespace rxtune
