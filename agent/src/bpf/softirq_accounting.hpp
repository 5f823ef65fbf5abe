// SoftirqAccounting: the softirq.bpf.c skeleton loaded and attached (RAII), read as per-CPU totals.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/result.hpp"

struct softirq_bpf;

namespace rxtune {

struct CpuSoftirq {
    std::uint64_t netRxCount = 0, netRxNs = 0;
    std::uint64_t napiPolls = 0, napiPackets = 0, budgetExhausted = 0;
    std::uint64_t cpumapRuns = 0, cpumapPackets = 0;
};

// paused: loaded, detached by the daemon while its per-softirq cost would be too high;
// disabled: switched off in the daemon's config.
enum class BpfAvailability { kAvailable, kNotSupported, kError, kPaused, kDisabled };
const char* toString(BpfAvailability a);

struct BpfProbe {
    BpfAvailability state = BpfAvailability::kError;
    std::string reason;  // why not, in words that name what is missing
};

// Per-CPU NET_RX softirq time, that can be detached while it would cost too much.
class SoftirqSource {
public:
    virtual ~SoftirqSource() = default;
    virtual Result<std::map<unsigned, CpuSoftirq>> read() const = 0;
    virtual void pause() = 0;
    virtual Result<void> resume() = 0;
    virtual bool attached() const = 0;
};

class SoftirqAccounting final : public SoftirqSource {
public:
    // Opens, loads and attaches; the error says whether BTF or a capability is missing.
    static Result<std::unique_ptr<SoftirqAccounting>> load();
    ~SoftirqAccounting() override;
    SoftirqAccounting(const SoftirqAccounting&) = delete;
    SoftirqAccounting& operator=(const SoftirqAccounting&) = delete;

    // cpu -> totals since load (they do not grow while paused).
    Result<std::map<unsigned, CpuSoftirq>> read() const override;

    // Detach the programs (no cost per softirq; the maps and their totals stay) and attach them
    // again. resume() clears the entry timestamps first, so a softirq that was running at pause()
    // is not counted with the time the programs were away.
    void pause() override;
    Result<void> resume() override;
    bool attached() const override { return attached_; }

private:
    explicit SoftirqAccounting(softirq_bpf* skel) : skel_(skel) {}
    softirq_bpf* skel_;
    bool attached_ = false;
};

// available / not supported (no BTF, kernel without tp_btf) / error (permissions, verifier ...).
BpfProbe probeSoftirqAccounting();

}  // namespace rxtune
