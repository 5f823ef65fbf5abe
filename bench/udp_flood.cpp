// A UDP flood and sink for the steering benchmark and tests: `send DST PORT SECONDS FLOWS` sends
// 64-byte datagrams with sendmmsg from FLOWS source ports; `sink ADDR PORT SECONDS` counts what
// arrives; `hold ADDR PORT SECONDS` binds and never reads (a starved application); `tap IFNAME SRC
// DST PORT COUNT` writes COUNT Ethernet/IPv4/UDP frames into the existing tap IFNAME, as a wire would;
// `echo ADDR PORT SECONDS` answers every datagram; `rr DST PORT SECONDS` sends one, waits for its
// answer, again, and prints "answered p50_us p99_us lost" (request/response latency).
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::uint16_t ipChecksum(const unsigned char* h, size_t len) {
    std::uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<std::uint32_t>(h[i] << 8 | h[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum);
}

int tapSend(const char* ifname, const char* src, const char* dst, int port, long count) {
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) {
        std::perror("tap attach");
        return 1;
    }
    ifreq hw{};
    std::snprintf(hw.ifr_name, IFNAMSIZ, "%s", ifname);
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (ioctl(s, SIOCGIFHWADDR, &hw) != 0) {
        std::perror("SIOCGIFHWADDR");
        return 1;
    }
    unsigned char f[14 + 20 + 8 + 18] = {};
    std::memcpy(f, hw.ifr_hwaddr.sa_data, 6);                        // to the tap's own MAC
    const unsigned char from[6] = {0x02, 0, 0, 0, 0, 0x01};
    std::memcpy(f + 6, from, 6);
    f[12] = 0x08;                                                     // IPv4
    unsigned char* ip = f + 14;
    ip[0] = 0x45;
    ip[3] = 20 + 8 + 18;                                              // total length
    ip[8] = 64;                                                       // TTL
    ip[9] = 17;                                                       // UDP
    inet_pton(AF_INET, src, ip + 12);
    inet_pton(AF_INET, dst, ip + 16);
    const std::uint16_t c = ipChecksum(ip, 20);
    ip[10] = static_cast<unsigned char>(c >> 8);
    ip[11] = static_cast<unsigned char>(c);
    unsigned char* udp = ip + 20;
    udp[0] = 0x9c;  // source port 40000
    udp[1] = 0x40;
    udp[2] = static_cast<unsigned char>(port >> 8);
    udp[3] = static_cast<unsigned char>(port);
    udp[5] = 8 + 18;                                                  // length; checksum 0: none (IPv4)
    long sent = 0;
    for (; sent < count; ++sent)
        if (write(fd, f, sizeof f) != static_cast<ssize_t>(sizeof f)) break;
    std::printf("%ld\n", sent);
    return sent == count ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: udp_flood send DST PORT SECONDS FLOWS [SRCPORT] | sink ADDR PORT SECONDS | hold ADDR PORT SECONDS"
                             " | tap IFNAME SRC DST PORT COUNT | echo ADDR PORT SECONDS | rr DST PORT SECONDS\n");
        return 2;
    }
    const std::string mode = argv[1];
    if (mode == "tap") {
        if (argc < 7) return 2;
        return tapSend(argv[2], argv[3], argv[4], std::atoi(argv[5]), std::atol(argv[6]));
    }
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
        const int srcPort = argc > 6 ? std::atoi(argv[6]) : 0;
        std::vector<int> socks;
        for (int f = 0; f < flows; ++f) {
            int s = socket(AF_INET, SOCK_DGRAM, 0);
            if (srcPort > 0) {
                int one = 1;
                setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
                sockaddr_in src{};
                src.sin_family = AF_INET;
                src.sin_port = htons(static_cast<uint16_t>(srcPort));
                if (bind(s, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
                    std::perror("bind");
                    return 1;
                }
            }
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
    } else if (mode == "rr") {
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        timeval tv{0, 100000};  // an answer later than 100 ms counts as lost
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        std::vector<double> rtt;
        unsigned long long lost = 0;
        char buf[128];
        while (std::chrono::steady_clock::now() < until) {
            const auto t0 = std::chrono::steady_clock::now();
            if (send(s, payload, sizeof payload, 0) < 0) continue;
            if (recv(s, buf, sizeof buf, 0) < 0) {
                ++lost;
                continue;
            }
            rtt.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(rtt.begin(), rtt.end());
        auto pct = [&](double q) { return rtt.empty() ? 0.0 : rtt[std::min(rtt.size() - 1, static_cast<size_t>(q * static_cast<double>(rtt.size())))]; };
        std::printf("%zu %.0f %.0f %llu\n", rtt.size(), pct(0.50), pct(0.99), lost);
        return 0;
    } else if (mode == "echo") {
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        if (bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            std::perror("bind");
            return 1;
        }
        timeval tv{0, 100000};
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char buf[128];
        while (std::chrono::steady_clock::now() < until) {
            sockaddr_in from{};
            socklen_t len = sizeof from;
            const ssize_t n = recvfrom(s, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
            if (n <= 0) continue;
            sendto(s, buf, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), len);
            ++count;
        }
    } else if (mode == "hold") {
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        if (bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            std::perror("bind");
            return 1;
        }
        while (std::chrono::steady_clock::now() < until) usleep(100000);
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
