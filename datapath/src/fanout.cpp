#include "fanout.hpp"

#include <algorithm>
#include <numeric>

namespace rxtune::dp {

Result<std::vector<uint16_t>> buildReta(const std::vector<unsigned>& weights, unsigned size) {
    if (weights.empty() || weights.size() > kMaxWorkers)
        return fail(EINVAL, "redirection table", "weights",
                    "need 1 to " + std::to_string(kMaxWorkers) + " workers, got " + std::to_string(weights.size()));
    if (size == 0 || size > kMaxRetaSize || (size & (size - 1)) != 0)
        return fail(EINVAL, "redirection table", "size",
                    "must be a power of two from 1 to " + std::to_string(kMaxRetaSize) + ", got " + std::to_string(size));
    const uint64_t sum = std::accumulate(weights.begin(), weights.end(), uint64_t{0});
    const auto active = static_cast<unsigned>(std::count_if(weights.begin(), weights.end(), [](unsigned w) { return w > 0; }));
    if (sum == 0) return fail(EINVAL, "redirection table", "weights", "every weight is 0: no worker would get traffic");
    if (active > size)
        return fail(EINVAL, "redirection table", "size",
                    std::to_string(active) + " workers with traffic need a table of at least that many entries");

    // Largest remainder apportionment of `size` entries.
    const size_t n = weights.size();
    std::vector<unsigned> count(n);
    std::vector<uint64_t> rem(n);
    unsigned given = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint64_t q = uint64_t{size} * weights[i];
        count[i] = static_cast<unsigned>(q / sum);
        rem[i] = q % sum;
        given += count[i];
    }
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rem[a] > rem[b]; });
    for (size_t k = 0; given < size; ++k, ++given) ++count[order[k % n]];
    // A tiny weight may have rounded to zero entries: take one from the largest holder.
    for (size_t i = 0; i < n; ++i) {
        if (weights[i] > 0 && count[i] == 0) {
            auto big = static_cast<size_t>(std::max_element(count.begin(), count.end()) - count.begin());
            --count[big];
            ++count[i];
        }
    }

    // Smooth weighted round robin over the counts: each worker's entries are spread through the
    // table instead of sitting in one block, so a hash with poor low bits still spreads.
    std::vector<int64_t> current(n, 0);
    std::vector<uint16_t> reta;
    reta.reserve(size);
    for (unsigned e = 0; e < size; ++e) {
        size_t best = n;
        for (size_t i = 0; i < n; ++i) {
            if (count[i] == 0) continue;
            current[i] += count[i];
            if (best == n || current[i] > current[best]) best = i;
        }
        current[best] -= size;
        reta.push_back(static_cast<uint16_t>(best));
    }
    return reta;
}

std::vector<unsigned> retaShares(const std::vector<uint16_t>& reta, unsigned workers) {
    std::vector<unsigned> shares(workers, 0);
    for (auto w : reta)
        if (w < workers) ++shares[w];
    return shares;
}

}  // namespace rxtune::dp
