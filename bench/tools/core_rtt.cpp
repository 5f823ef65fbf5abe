// core_rtt CPU_A CPU_B [SAMPLES]: the round trip of one cache line between two CPUs, in ns.
//
// Two threads, pinned to CPU_A and CPU_B, hand a counter back and forth through one cache line;
// each sample is the mean round trip over 20000 hand-overs. Prints "median min max" of the
// samples. A pipeline that moves every packet's mbuf from one core to another (rxtune-dp's RX core
// and its workers) pays this on every line it hands over; a one-core forwarder does not. On a VM
// the figure moves with where the hypervisor runs the two vCPUs (a few x between placements), so
// bench/datapath_bench.sh records it beside every run.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

alignas(128) std::atomic<long> gLine{0};
std::atomic<bool> gStop{false};

bool pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s) == 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: core_rtt CPU_A CPU_B [SAMPLES]\n");
        return 2;
    }
    const int a = std::atoi(argv[1]), b = std::atoi(argv[2]);
    const int samples = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
    constexpr long kTrips = 20000;
    std::atomic<bool> pinned{true};
    // The peer answers odd values with the next even one, until told to stop.
    std::thread peer([&] {
        if (!pin(b)) pinned.store(false);
        long v = 0;
        while (!gStop.load(std::memory_order_relaxed)) {
            v = gLine.load(std::memory_order_acquire);
            if (v & 1) gLine.store(v + 1, std::memory_order_release);
        }
    });
    if (!pin(a)) pinned.store(false);
    std::vector<double> ns;
    long v = 0;
    // Sample -1 warms up (the peer may not be pinned yet) and is not kept.
    for (int s = -1; s < samples && pinned.load(); ++s) {
        const auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < kTrips; ++i) {
            gLine.store(v + 1, std::memory_order_release);
            while (gLine.load(std::memory_order_acquire) != v + 2) {
            }
            v += 2;
        }
        if (s >= 0) ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kTrips);
    }
    gStop.store(true);
    peer.join();
    if (!pinned.load() || ns.empty()) {
        std::fprintf(stderr, "core_rtt: cannot run on CPUs %d and %d\n", a, b);
        return 1;
    }
    std::sort(ns.begin(), ns.end());
    std::printf("%.0f %.0f %.0f\n", ns[ns.size() / 2], ns.front(), ns.back());
    return 0;
}
