#include "daemon/bpf_control.hpp"

#include "daemon/log.hpp"

namespace rxtune {

BpfControl::BpfControl(Metrics& metrics, Loader loader) : metrics_(metrics), loader_(std::move(loader)) {
    if (!loader_)
        loader_ = []() -> Result<std::unique_ptr<SoftirqSource>> {
            auto acc = SoftirqAccounting::load();
            if (!acc) return failWith(acc.error());
            return std::unique_ptr<SoftirqSource>(std::move(*acc));
        };
}

void BpfControl::start(const DaemonConfig& cfg) {
    if (cfg.bpfAccounting == BpfAccounting::kOff) {
        metrics_.setBpfState("softirq", BpfAvailability::kDisabled);
        LOG_N("BPF softirq accounting off (bpf_accounting: off); /proc/stat softirq time stands in");
        return;
    }
    // Exact softirq accounting where BPF is available; said once, and every other metric works without it.
    if (auto src = loader_()) {
        source_ = std::move(*src);
        metrics_.setBpfState("softirq", BpfAvailability::kAvailable);
        setGovernor(cfg);
    } else {
        const bool unsupported = src.error().code == ENOTSUP;
        metrics_.setBpfState("softirq", unsupported ? BpfAvailability::kNotSupported : BpfAvailability::kError);
        LOG_W("BPF softirq accounting unavailable, other metrics unaffected: " + src.error().message());
    }
}

void BpfControl::setGovernor(const DaemonConfig& cfg) {
    governor_ = cfg.bpfAccounting == BpfAccounting::kAuto ? std::make_unique<BpfGovernor>(static_cast<double>(cfg.bpfMaxSoftirqRate))
                                                          : nullptr;
}

void BpfControl::reconfigure(const DaemonConfig& current, DaemonConfig& next) {
    const bool wasOff = current.bpfAccounting == BpfAccounting::kOff, isOff = next.bpfAccounting == BpfAccounting::kOff;
    if (wasOff != isOff) {
        LOG_W("bpf_accounting: off/on changes take effect at the next start");
        next.bpfAccounting = current.bpfAccounting;
    }
    const bool changed = next.bpfAccounting != current.bpfAccounting || next.bpfMaxSoftirqRate != current.bpfMaxSoftirqRate;
    if (!source_ || !changed) return;
    // auto <-> on, or a new rate: the governor starts over; `on` attaches paused programs.
    setGovernor(next);
    if (!governor_ && !source_->attached()) {
        if (auto ok = source_->resume()) {
            ++spell_;
            metrics_.setBpfState("softirq", BpfAvailability::kAvailable);
        } else LOG_W("BPF softirq accounting stays paused: " + ok.error().message());
    }
}

std::optional<BpfControl::Reading> BpfControl::read() {
    if (!source_ || !source_->attached()) return std::nullopt;
    auto v = source_->read();
    if (!v) return std::nullopt;  // the metrics interval says why
    Reading r;
    r.spell = spell_;
    for (const auto& [cpu, c] : *v) r.netRxNs[cpu] = c.netRxNs;
    return r;
}

std::optional<std::map<unsigned, CpuSoftirq>> BpfControl::sample(const std::map<unsigned, std::uint64_t>& netRxCounts, double at) {
    std::optional<std::map<unsigned, CpuSoftirq>> out;
    if (!source_) return out;
    // Read only while attached, and before the governor acts: the interval that ends now was wholly
    // attached. Paused programs count nothing, so two readings in a row always span attached time.
    if (source_->attached()) {
        if (auto v = source_->read()) {
            metrics_.updateBpf(*v);
            out = std::move(*v);
        } else {
            LOG_W("metrics: " + v.error().message());
        }
    }
    if (out && prev_ && at > prevAt_) {
        shares_.clear();
        for (const auto& [cpu, v] : *out)
            if (auto p = prev_->find(cpu); p != prev_->end() && v.netRxNs >= p->second.netRxNs)
                shares_[cpu] = static_cast<double>(v.netRxNs - p->second.netRxNs) / ((at - prevAt_) * 1e9);
    }
    prev_ = out;
    prevAt_ = at;
    if (!governor_) return out;
    const GovernorStep g = governor_->step(at, netRxCounts, source_->attached());
    if (g.action == GovernorStep::Action::kPause) {
        source_->pause();
        ++spell_;
        prev_.reset();  // the next interval is not measured whole
        shares_.clear();
        metrics_.setBpfState("softirq", BpfAvailability::kPaused);
        LOG_N("BPF softirq accounting: " + g.detail);
    } else if (g.action == GovernorStep::Action::kResume) {
        if (auto ok = source_->resume(); !ok) {
            LOG_W("BPF softirq accounting stays paused: " + ok.error().message());
            return out;
        }
        ++spell_;
        metrics_.setBpfState("softirq", BpfAvailability::kAvailable);
        LOG_N("BPF softirq accounting: " + g.detail);
    }
    return out;
}

}  // namespace rxtune
