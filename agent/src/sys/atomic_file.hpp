// A file replaced whole: written to a temp file and renamed over, so a reader sees the old or the
// new content, never a mix. Durable: the data and the rename are fsynced before it returns.
#pragma once

#include <string>

#include "core/result.hpp"

namespace rxtune {

Result<void> writeFileAtomic(const std::string& path, const std::string& data, bool durable);

}  // namespace rxtune
