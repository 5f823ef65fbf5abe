// Work on many devices spread over a few threads: sysfs lookups and the kernel's own work behind a
// write (an RPS flow table allocated and cleared) are per file and safe side by side.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace rxtune {

constexpr size_t kParallelFrom = 64;  // items: below this one thread does them all
constexpr size_t kMaxThreads = 8;

// How many threads `n` items are worth: one below kParallelFrom, else one per CPU, at most kMaxThreads.
inline size_t threadsFor(size_t n) {
    return n >= kParallelFrom ? std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kMaxThreads) : 1;
}

// Calls work(i) for every i in [0, n) on `threads` threads, the caller's one of them. Each takes
// the next item as it finishes one (not a fixed share: on a busy host one thread can be held up
// while another would idle). Returns when all are done.
template <class Work>
void forEachOn(size_t threads, size_t n, const Work& work) {
    std::atomic<size_t> next{0};
    auto run = [&] {
        for (size_t i = next++; i < n; i = next++) work(i);
    };
    std::vector<std::jthread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(run);
    run();
}

}  // namespace rxtune
