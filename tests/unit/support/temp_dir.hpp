// A directory of a test's own under $TMPDIR, removed with everything in it when the test ends.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rxtune::test {

struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& prefix = "rxtune-test") {
        std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
        REQUIRE(mkdtemp(t.data()) != nullptr);
        path = t;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    // Writes `text` to `name` in the directory; returns the file's path.
    std::string put(const std::string& name, const std::string& text) const {
        std::ofstream(path / name) << text;
        return (path / name).string();
    }
};

inline std::string readText(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace rxtune::test
