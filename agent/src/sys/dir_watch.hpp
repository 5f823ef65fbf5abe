// DirWatch: inotify on the directories that hold the daemon's configuration and profiles, so that
// a change on disk is noticed without a signal. Directories, not files: the kubelet updates a
// mounted ConfigMap by renaming a `..data` symlink in the directory, and an editor writes a new
// file and renames it over the old; neither touches the old file.
#pragma once

#include <map>
#include <set>
#include <string>

#include "core/result.hpp"
#include "sys/unique_fd.hpp"

namespace rxtune {

class DirWatch {
public:
    static Result<DirWatch> open();
    int fd() const { return fd_.get(); }
    // Watches exactly these directories from now on (new ones added, others dropped); one that
    // does not exist is left out (the answer lists what is watched).
    std::set<std::string> watch(const std::set<std::string>& dirs);
    // Reads every pending event; true if any concerned a watched directory's entries.
    bool drain();

private:
    explicit DirWatch(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
    std::map<int, std::string> byWd_;
};

}  // namespace rxtune
