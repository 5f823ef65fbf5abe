// A client of a local SOCK_SEQPACKET socket (DPDK's telemetry socket): one message per call.
#pragma once

#include <string>

#include "core/result.hpp"
#include "sys/unique_fd.hpp"

namespace rxtune {

class SeqpacketClient {
public:
    // Connects with send and receive both bounded by timeoutMs.
    static Result<SeqpacketClient> connect(const std::string& path, int timeoutMs);
    Result<std::string> receive(const char* what);  // one message; `what` names it in errors
    Result<void> send(const std::string& message);

private:
    SeqpacketClient(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
    UniqueFd fd_;
    std::string path_;
};

}  // namespace rxtune
