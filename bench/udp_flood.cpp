// A UDP flood and sink for the steering benchmark: `send DST PORT SECONDS FLOWS` sends 64-byte
// datagrams with sendmmsg from FLOWS source ports; `sink ADDR PORT SECONDS` counts what arrives.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: udp_flood send DST PORT SECONDS FLOWS | sink ADDR PORT SECONDS\n");
        return 2;
    }
    const std::string mode = argv[1];
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[3])));
    inet_pton(AF_INET, argv[2], &addr.sin_addr);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(std::atoi(argv[4]));
    constexpr int kBatch = 64;
    char payload[64] = {};
    unsigned long long count = 0;
    if (mode == "send") {
        const int flows = argc > 5 ? std::atoi(argv[5]) : 64;
        std::vector<int> socks;
        for (int f = 0; f < flows; ++f) {
            int s = socket(AF_INET, SOCK_DGRAM, 0);
            connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
            socks.push_back(s);
        }
        mmsghdr msgs[kBatch];
        iovec iov[kBatch];
        for (int i = 0; i < kBatch; ++i) {
            iov[i] = {payload, sizeof payload};
            std::memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        for (size_t f = 0; std::chrono::steady_clock::now() < until; f = (f + 1) % socks.size()) {
            int n = sendmmsg(socks[f], msgs, kBatch, 0);
            if (n > 0) count += static_cast<unsigned long long>(n);
        }
    } else {
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        int big = 64 << 20;
        setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        if (bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            std::perror("bind");
            return 1;
        }
        timeval tv{0, 100000};
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char bufs[kBatch][128];
        mmsghdr msgs[kBatch];
        iovec iov[kBatch];
        for (int i = 0; i < kBatch; ++i) {
            iov[i] = {bufs[i], sizeof bufs[i]};
            std::memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        while (std::chrono::steady_clock::now() < until) {
            int n = recvmmsg(s, msgs, kBatch, MSG_WAITFORONE, nullptr);
            if (n > 0) count += static_cast<unsigned long long>(n);
        }
    }
    std::printf("%llu\n", count);
    return 0;
}
