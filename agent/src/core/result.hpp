// Errors as values: errno, operation and path, with context added as the error moves up.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include <tl/expected.hpp>

namespace rxtune {

struct Error {
    int code = 0;               // errno, or 0 for errors that are not system calls
    std::string op;             // "read", "parse", "netlink CHANNELS_GET" ...
    std::string path;           // file, device or key the error is about
    std::string detail;         // human explanation; strerror(code) when empty
    std::vector<std::string> context;  // outermost last

    // "<outer ctx>: <inner ctx>: <op> <path>: <detail>"
    std::string message() const;

    Error withContext(std::string ctx) const& {
        Error e = *this;
        e.context.push_back(std::move(ctx));
        return e;
    }
    Error withContext(std::string ctx) && {
        context.push_back(std::move(ctx));
        return std::move(*this);
    }
};

template <class T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> fail(int code, std::string op, std::string path, std::string detail = {}) {
    return tl::unexpected<Error>(Error{code, std::move(op), std::move(path), std::move(detail), {}});
}

inline tl::unexpected<Error> failWith(Error e) { return tl::unexpected<Error>(std::move(e)); }

}  // namespace rxtune
