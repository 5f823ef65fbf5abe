// lab_wire: the single-queue NIC of the lab. Moves Ethernet frames between a TAP in the client
// netns and a device in the server netns, pinned to one CPU, so that all of the server's receive
// processing starts on that CPU, as it does for a one-queue NIC whose IRQ is bound there:
//   --server-tap NAME   writes into a TAP in the server netns: the kernel processes each frame in
//                       the writer's context (on this CPU), so RPS/RFS/XDP on that TAP act as they
//                       would on a single-queue NIC;
//   --napi on|off       (with --server-tap; default on) open that TAP with IFF_NAPI: each write
//                       queues the frame and schedules the TAP's NAPI, whose poll (GRO, then the
//                       stack) runs in this CPU's softirq as a NIC's runs on its IRQ CPU, or in
//                       its kthread napi/NAME-0 once /sys/class/net/NAME/threaded is 1. off: the
//                       frame goes up in the write itself (tun_rx_batched), with no NAPI at all;
//   --server-veth NAME  sends on a veth end (AF_PACKET) whose peer rxtune-dp polls (its NIC side).
//
//   lab_wire --cpu N --client-ns NS --client-tap NAME --server-ns NS (--server-tap NAME [--napi on|off] | --server-veth NAME)
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::atomic<bool> gStop{false};
extern "C" void onSignal(int) { gStop.store(true); }

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "lab_wire: %s: %s\n", what.c_str(), std::strerror(errno));
    std::exit(1);
}

void enterNs(const std::string& ns) {
    int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) die("setns " + ns);
    close(fd);
}

int openTap(const std::string& name, bool napi = false) {
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) die("open /dev/net/tun");
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    ifr.ifr_flags = static_cast<short>(IFF_TAP | IFF_NO_PI | (napi ? IFF_NAPI : 0));
    if (ioctl(fd, TUNSETIFF, &ifr) != 0) die("TUNSETIFF " + name);
    return fd;
}

int openPacket(const std::string& name) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd < 0) die("socket AF_PACKET");
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = static_cast<int>(if_nametoindex(name.c_str()));
    if (sll.sll_ifindex == 0 || bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) die("bind " + name);
    int ignoreOutgoing = 1;  // only frames arriving on it, not the ones we send
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &ignoreOutgoing, sizeof ignoreOutgoing);
    return fd;
}

}  // namespace

int main(int argc, char** argv) {
    std::string clientNs, clientTap, serverNs, serverTap, serverVeth;
    int cpu = -1;
    bool napi = true;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--cpu") cpu = std::atoi(v.c_str());
        else if (a == "--client-ns") clientNs = v;
        else if (a == "--client-tap") clientTap = v;
        else if (a == "--server-ns") serverNs = v;
        else if (a == "--server-tap") serverTap = v;
        else if (a == "--server-veth") serverVeth = v;
        else if (a == "--napi") napi = v != "off";
    }
    if (cpu < 0 || clientNs.empty() || clientTap.empty() || serverNs.empty() || serverTap.empty() == serverVeth.empty()) {
        std::fprintf(stderr, "usage: lab_wire --cpu N --client-ns NS --client-tap NAME --server-ns NS "
                             "(--server-tap NAME [--napi on|off] | --server-veth NAME)\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) die("sched_setaffinity");
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    enterNs(clientNs);
    const int client = openTap(clientTap);
    enterNs(serverNs);
    const int server = serverTap.empty() ? openPacket(serverVeth) : openTap(serverTap, napi);
    if (setns(self, CLONE_NEWNET) != 0) die("setns back");
    close(self);
    struct sigaction sa{};
    sa.sa_handler = onSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    std::fprintf(stderr, "lab_wire: ready on CPU %d%s\n", cpu, serverTap.empty() ? "" : napi ? " (server TAP with NAPI)" : " (server TAP without NAPI)");

    unsigned long long toServer = 0, toClient = 0, dropped = 0;
    char buf[65536];
    pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    while (!gStop.load()) {
        if (poll(fds, 2, 200) <= 0) continue;
        for (int side = 0; side < 2; ++side) {
            if (!(fds[side].revents & POLLIN)) continue;
            const int from = side == 0 ? client : server, to = side == 0 ? server : client;
            for (int burst = 0; burst < 64; ++burst) {  // drain a burst, like a NAPI poll
                ssize_t n = read(from, buf, sizeof buf);
                if (n <= 0) break;
                if (write(to, buf, static_cast<size_t>(n)) != n) ++dropped;
                else ++(side == 0 ? toServer : toClient);
            }
        }
    }
    std::printf("{\"to_server\":%llu,\"to_client\":%llu,\"dropped\":%llu}\n", toServer, toClient, dropped);
    return 0;
}
