// mode auto's prediction before trial: the capacity model, the order and skips it gives, the
// correction each trial teaches it, and a back-off re-opened by a load that moved the prediction.
#include <catch2/catch.hpp>

#include "planner/auto_steer.hpp"

using namespace rxtune;

namespace {

// CPU 0 receives (NET_RX share rxNet, busy rxBusy); CPUs 1-3 are busy `others` with 2 % of NET_RX.
AutoSample load(double at, double pps, double rxNet, double rxBusy, double others, double span = 0.25) {
    AutoSample s;
    s.at = at;
    s.span = span;
    s.deliveredPps = pps;
    s.rxPps = pps;
    s.cpus[0] = {rxBusy, rxNet};
    for (unsigned c = 1; c < 4; ++c) s.cpus[c] = {others, 0.02};
    return s;
}

LoadView viewOf(const AutoSample& s) {
    LoadView v;
    v.add(s);
    return v;
}

const CpuSet kPredictAll = CpuSet::range(0, 3);
const CpuSet kPredictRxOnly = CpuSet::of({0});
const CpuSet kTargets = CpuSet::of({1, 2, 3});

AutoThresholds quick(std::vector<SteeringMode> candidates) {
    AutoThresholds t;  // sustain 2 s, gain margin 5 %, window 15 s, quarter-second samples
    t.backoffSeconds = 300;
    t.candidates = std::move(candidates);
    return t;
}

}  // namespace

TEST_CASE("predict: the receive CPU's and the targets' ceilings from what none showed", "[auto][predict]") {
    // 100k packets/s: 8 us of NET_RX each on CPU 0 (80 %), 2 us of other work there; the targets
    // 18 % busy with their own work (an application: 5.4 us a packet over the three).
    const LoadView none = viewOf(load(1, 100000, 0.8, 1.0, 0.2));
    const Prediction rps = predict(SteeringMode::kRps, kTargets, 0, none);
    // Receive CPU: 0.35 * 8 + 2 = 4.8 us a packet: 208k/s. Targets: 2.94 CPUs over
    // 0.65 * 1.25 * 8 + 5.4 = 11.9 us: 247k/s. The lower: 2.08x.
    CHECK(rps.model == Approx(2.083).epsilon(0.01));
    CHECK(rps.ratio == rps.model);
    CHECK(rps.pps == Approx(208333).epsilon(0.01));
    CHECK_FALSE(rps.corrected);
    CHECK(rps.bound == Approx((1 + 2.94) / 0.8));
    CHECK(rps.why == "targets 1-3 have 2.4 CPUs idle; 8 us of NET_RX per packet on CPU 0");
    CHECK(predictionText(rps) == "predicted 2.08x none (targets 1-3 have 2.4 CPUs idle; 8 us of NET_RX per packet on CPU 0)");
    // XDP cpumap hands off at the same depth until a trial here says otherwise.
    CHECK(predict(SteeringMode::kXdp, kTargets, 0, none).model == Approx(rps.model));
    // A NAPI kthread is one thread: one target's room, 0.98 / (0.9 * 8 + 1.8 us) = 109k/s.
    const Prediction napi = predict(SteeringMode::kNapi, kTargets, 0, none);
    CHECK(napi.model == Approx(1.089).epsilon(0.01));
    CHECK(napi.bound > 1e8);  // never bounded: it trades softirq priority for a fair share
    // Busier targets predict less; the receive CPU itself is never one of its targets.
    CHECK(predict(SteeringMode::kRps, kTargets, 0, viewOf(load(1, 100000, 0.8, 1.0, 0.7))).model < rps.model);
    CHECK(predict(SteeringMode::kRps, kPredictAll, 0, none).model == Approx(rps.model));
}

TEST_CASE("predict: nothing measured to go by predicts 1x and skips nothing", "[auto][predict]") {
    const Prediction p = predict(SteeringMode::kRps, kTargets, 0, viewOf(load(1, 0, 0.8, 1.0, 0.2)));
    CHECK(p.ratio == 1);
    CHECK(p.bound > 1e8);
    CHECK(p.why.find("nothing measured") != std::string::npos);
    CHECK(predict(SteeringMode::kRps, kPredictRxOnly, 0, viewOf(load(1, 1000, 0.8, 1.0, 0.2))).why.find("no target") != std::string::npos);
}

TEST_CASE("predict: where none's receive CPU had room, no candidate delivers more than arrived", "[auto][predict]") {
    // 100k packets/s at 0.5 us of NET_RX each: CPU 0 10 % busy. The capacity model says RPS could
    // carry many times that; what arrives is what none delivered.
    const LoadView idle = viewOf(load(1, 100000, 0.05, 0.1, 0.05));
    const Prediction rps = predict(SteeringMode::kRps, kTargets, 0, idle);
    CHECK(rps.model > 5);
    CHECK(rps.demand == Approx(1));
    CHECK(rps.demandBound);
    CHECK(rps.ratio == Approx(1));
    CHECK(rps.pps == Approx(100000));
    CHECK(rps.bound == Approx((1 + 2.94) / 0.05));  // the capacity's bound: the demand never skips a trial
    INFO(predictionText(rps));
    CHECK(predictionText(rps).find("predicted 1.00x none (") == 0);
    CHECK(predictionText(rps).find("; demand-bound: the receive CPU had room, so what arrived was 1.00x what none delivered, and the "
                                   "model's ") != std::string::npos);
    CHECK(predict(SteeringMode::kBusyPoll, kTargets, 0, idle).ratio == Approx(1));
    // What the stack lost arrived too: a candidate may deliver it.
    AutoSample lossy = load(1, 100000, 0.05, 0.1, 0.05);
    lossy.lossPps = 25000;
    CHECK(predict(SteeringMode::kRps, kTargets, 0, viewOf(lossy)).ratio == Approx(1.25));
    // A receive CPU that squeezed its budget, or one busier than kDemandBoundBusy, was full: its
    // demand is not known, and the capacity is the prediction.
    AutoSample squeezed = load(1, 100000, 0.4, 0.5, 0.05);
    squeezed.cpus[0].squeezed = 50;
    const Prediction full = predict(SteeringMode::kRps, kTargets, 0, viewOf(squeezed));
    CHECK_FALSE(full.demandBound);
    CHECK(full.ratio == full.model);
    CHECK(full.demand > 1e8);
    CHECK_FALSE(predict(SteeringMode::kRps, kTargets, 0, viewOf(load(1, 100000, 0.4, kDemandBoundBusy, 0.05))).demandBound);
    // A correction scales the capacity under the demand: a model twice too high still carries what
    // arrives; one that collapsed (0.05x measured) is below it and predicts the collapse.
    const AutoThresholds t = quick({SteeringMode::kRps});
    auto trials = plannedTrials({SteeringMode::kRps}, kTargets, {}, 0, idle, {{"rps", {0.5, 0}}}, t, 1);
    CHECK(trials[0].predicted.ratio == Approx(1));
    CHECK(predictionText(trials[0].predicted).find("x times 0.50 of capacity has no more to carry)") != std::string::npos);
    trials = plannedTrials({SteeringMode::kRps}, kTargets, {}, 0, idle, {{"rps", {0.05 / rps.model, 0}}}, t, 1);
    CHECK(trials[0].predicted.ratio == Approx(0.05));
    CHECK_FALSE(trials[0].predicted.demandBound);
    CHECK(trials[0].skipped);
}

TEST_CASE("planned trials: ordered by prediction, the profile's order on a tie, big cores before all within a mode", "[auto][predict]") {
    const LoadView none = viewOf(load(1, 100000, 0.8, 1.0, 0.2));
    const AutoThresholds t = quick({SteeringMode::kNapi, SteeringMode::kRps, SteeringMode::kXdp});
    auto trials = plannedTrials(t.candidates, kTargets, {}, 0, none, {}, t, 1);
    REQUIRE(trials.size() == 3);
    // napi (1.09x) after rps and xdp (2.08x each, in the profile's order).
    CHECK(trialName(trials[0]) == "rps");
    CHECK(trialName(trials[1]) == "xdp");
    CHECK(trialName(trials[2]) == "napi");
    for (const auto& tr : trials) CHECK_FALSE(tr.skipped);
    const std::string text = trialOrderText(trials);
    CHECK(text.starts_with("rps (CPUs 1-3) predicted 2.08x none (targets 1-3 have 2.4 CPUs idle; 8 us of NET_RX per packet on CPU 0), "
                           "then xdp (CPUs 1-3) predicted 2.08x none"));
    // Where a trial here found XDP twice what the model said and RPS half: XDP first.
    const Corrections learned{{"rps", {0.5, 0}}, {"xdp", {2.0, 0}}};
    trials = plannedTrials({SteeringMode::kRps, SteeringMode::kXdp}, kTargets, {}, 0, none, learned, t, 10);
    REQUIRE(trials.size() == 2);
    CHECK(trialName(trials[0]) == "xdp");
    CHECK(trials[0].predicted.corrected);
    CHECK(trials[0].predicted.ratio == Approx(2 * trials[0].predicted.model));
    CHECK(predictionText(trials[0].predicted).find("; the model's 2.08x times 2.00, its last trial's measured/predicted here)") !=
          std::string::npos);
    // A correction an hour old is forgotten.
    trials = plannedTrials({SteeringMode::kRps, SteeringMode::kXdp}, kTargets, {}, 0, none, learned, t, kCorrectionSeconds + 1);
    CHECK(trialName(trials[0]) == "rps");
    CHECK_FALSE(trials[0].predicted.corrected);
    // Big and little: a mode's two trials stay together, biggest cores first.
    trials = plannedTrials({SteeringMode::kRps, SteeringMode::kXdp}, kTargets, CpuSet::of({2, 3}), 0, none, learned, t, 10);
    REQUIRE(trials.size() == 4);
    CHECK(trialName(trials[0]) == "xdp_big");
    CHECK(trialName(trials[1]) == "xdp");
    CHECK(trialName(trials[2]) == "rps_big");
    CHECK(trialName(trials[3]) == "rps");
}

TEST_CASE("planned trials: a candidate that cannot beat the margin is skipped, said why", "[auto][predict]") {
    const AutoThresholds t = quick({SteeringMode::kRps, SteeringMode::kXdp, SteeringMode::kNapi});
    // The receive CPU all receive work, the targets all but 1 % receive work of their own: nothing
    // spreads it further than 1.03x, whatever the split.
    AutoSample s = load(1, 100000, 1.0, 1.0, 1.0);
    for (unsigned c = 1; c < 4; ++c) s.cpus[c] = {1.0, 0.99};
    const auto trials = plannedTrials(t.candidates, kTargets, {}, 0, viewOf(s), {}, t, 1);
    REQUIRE(trials.size() == 3);
    CHECK(trialName(trials[0]) == "napi");  // the one not bounded
    CHECK_FALSE(trials[0].skipped);
    CHECK(trials[1].skipped);
    CHECK(trials[2].skipped);
    CHECK(trials[1].skipWhy.find("cannot beat 1.05x") != std::string::npos);
    CHECK(trials[1].skipWhy.find("at most 1.03x") != std::string::npos);
    INFO(trialOrderText(trials));
    CHECK(trialOrderText(trials).find("; skipped: rps (CPUs 1-3) predicted") != std::string::npos);
    // One measured here at 0.05x none, at the same load, is not tried again; one at 0.9x is.
    const LoadView none = viewOf(load(1, 100000, 0.8, 1.0, 0.2));
    const double model = predict(SteeringMode::kRps, kTargets, 0, none).model;
    auto lost = plannedTrials({SteeringMode::kRps}, kTargets, {}, 0, none, {{"rps", {0.05 / model, 0}}}, t, 1);
    CHECK(lost[0].skipped);
    CHECK(lost[0].skipWhy.find("delivered less than none") != std::string::npos);
    CHECK_FALSE(plannedTrials({SteeringMode::kRps}, kTargets, {}, 0, none, {{"rps", {0.97 / model, 0}}}, t, 1)[0].skipped);
}

TEST_CASE("planned trials: a busy-poll is ordered by its prediction after its core, and never skipped by the bound", "[auto][predict][busypoll]") {
    // CPU 0 half NET_RX (5 us a packet) and half its own work: a busy-poll's kthread takes the whole
    // poll off it, so its raw prediction (1.67x) beats RPS's (1.48x); 1.6 CPUs were busy, so after
    // its core it is 1.03x, and RPS goes first.
    const LoadView none = viewOf(load(1, 100000, 0.5, 1.0, 0.2));
    const AutoThresholds t = quick({SteeringMode::kBusyPoll, SteeringMode::kRps});
    auto trials = plannedTrials(t.candidates, kTargets, {}, 0, none, {}, t, 1);
    REQUIRE(trials.size() == 2);
    CHECK(trialName(trials[0]) == "rps");
    CHECK(trialName(trials[1]) == "busypoll");
    CHECK(trials[0].predicted.ratio == Approx(1.48).epsilon(0.01));
    CHECK(trials[1].predicted.ratio == Approx(1.67).epsilon(0.01));
    CHECK(trials[1].predicted.ratio * costFactor(SteeringMode::kBusyPoll, none) == Approx(1.03).epsilon(0.01));
    CHECK_FALSE(trials[0].skipped);
    CHECK_FALSE(trials[1].skipped);  // 1.03x after its core is under the bar, yet only a trial can tell: the kthread has no bound
    // Every CPU full of receive work: RPS is bounded under the bar and skipped, busy-poll is not.
    AutoSample full = load(1, 100000, 1.0, 1.0, 1.0);
    for (unsigned c = 1; c < 4; ++c) full.cpus[c] = {1.0, 0.99};
    trials = plannedTrials({SteeringMode::kRps, SteeringMode::kBusyPoll}, kTargets, {}, 0, viewOf(full), {}, t, 1);
    REQUIRE(trials.size() == 2);
    CHECK(trialName(trials[0]) == "busypoll");
    CHECK(trials[1].skipped);
    CHECK_FALSE(trials[0].skipped);
}

TEST_CASE("available candidates: busy-poll only where napi-set takes it, said why, rps where nothing is left", "[auto][busypoll]") {
    NapiFeatures with;
    with.napiSet = with.threaded = true;
    with.threadedMax = 2;
    NapiFeatures without = with;
    without.threadedMax = 1;
    const std::vector<SteeringMode> listed{SteeringMode::kBusyPoll, SteeringMode::kRps};
    auto here = availableCandidates(listed, &with, "", "7.3.4");
    CHECK(here.modes == listed);
    CHECK(here.note.empty());
    here = availableCandidates(listed, &without, "", "6.18.0");
    CHECK(here.modes == std::vector<SteeringMode>{SteeringMode::kRps});
    CHECK(here.note == "busypoll left out of the candidates: busy-poll needs Linux 6.19 (this kernel: 6.18.0)");
    here = availableCandidates(listed, nullptr, "netlink: no answer", "6.18.0");
    CHECK(here.modes == std::vector<SteeringMode>{SteeringMode::kRps});
    CHECK(here.note == "busypoll left out of the candidates: napi-set's policy could not be read, so busy-poll cannot be set "
                       "(netlink: no answer; this kernel: 6.18.0)");
    here = availableCandidates({SteeringMode::kBusyPoll}, &without, "", "6.12.117");
    CHECK(here.modes == std::vector<SteeringMode>{SteeringMode::kRps});
    CHECK(here.note.ends_with("(this kernel: 6.12.117); none of steering.auto.candidates is left, so mode auto trials rps instead"));
    // Without busy-poll listed nothing is asked of the features.
    here = availableCandidates({SteeringMode::kNapi, SteeringMode::kXdp}, nullptr, "", "");
    CHECK(here.modes == std::vector<SteeringMode>{SteeringMode::kNapi, SteeringMode::kXdp});
    CHECK(here.note.empty());
}

namespace {

// Quarter-second samples from `from`: saturated CPU 0 at `pps` (targets `others` busy) until the
// machine decides; returns the decision and the sample index it came at.
std::pair<AutoDecision, int> until(AutoSteer& a, int from, int to, double pps, double rxNet, double rxBusy, double others) {
    for (int i = from; i < to; ++i) {
        auto d = a.step(load(i * 0.25, pps, rxNet, rxBusy, others), 0, kPredictAll, kPredictRxOnly);
        if (!d.decision.empty()) return {d, i};
    }
    return {{}, to};
}

}  // namespace

TEST_CASE("auto: each trial says predicted against measured and corrects the model here", "[auto][predict]") {
    AutoSteer a(quick({SteeringMode::kRps, SteeringMode::kXdp}));
    auto [e, i] = until(a, 1, 100, 100000, 0.8, 1.0, 0.2);
    REQUIRE(e.decision == "enable");
    CHECK(e.detail.find("trying rps (CPUs 1-3) predicted 2.08x none (targets 1-3 have 2.4 CPUs idle") != std::string::npos);
    REQUIRE(a.trials().size() == 2);
    CHECK(a.trials()[0].predicted.pps == Approx(208333).epsilon(0.01));
    // RPS delivers 1.5x: the model was 39 % high.
    auto [r, j] = until(a, i + 1, i + 100, 150000, 0.4, 0.8, 0.5);
    REQUIRE(r.decision == "try");
    CHECK(r.detail.find("; predicted 2.08x, measured 1.50x (off by 39%)") != std::string::npos);
    REQUIRE(a.corrections().count("rps"));
    CHECK(a.corrections().at("rps").factor == Approx(1.5 / 2.083).epsilon(0.01));
    CHECK_FALSE(a.corrections().count("xdp"));
}

TEST_CASE("auto: a demand-bound trial that delivers what arrived leaves the model as it was; one short of it corrects it", "[auto][predict]") {
    // The profile's thresholds at 0 (the booted 7.3 guest's): an unsaturated receive CPU is tried.
    AutoThresholds t = quick({SteeringMode::kRps, SteeringMode::kXdp});
    t.busyOn = t.onRxShare = 0;
    AutoSteer a(t);
    auto [e, i] = until(a, 1, 100, 100000, 0.05, 0.1, 0.05);
    REQUIRE(e.decision == "enable");
    INFO(e.detail);
    CHECK(e.detail.find("trying rps (CPUs 1-3) predicted 1.00x none (") != std::string::npos);
    CHECK(e.detail.find("demand-bound") != std::string::npos);
    // RPS delivers what arrives, as predicted: nothing learned of the capacity.
    auto [r, j] = until(a, i + 1, i + 100, 100000, 0.03, 0.1, 0.06);
    REQUIRE(r.decision == "try");
    INFO(r.detail);
    CHECK(r.detail.find("; predicted 1.00x, measured 1.00x (off by 0%)") != std::string::npos);
    CHECK_FALSE(a.corrections().count("rps"));
    // XDP collapses to 0.3x: its capacity is below the demand, and the model learns it.
    auto [u, k] = until(a, j + 1, j + 100, 30000, 0.03, 0.1, 0.06);
    REQUIRE(u.decision == "undo");
    REQUIRE(a.corrections().count("xdp"));
    CHECK(a.corrections().at("xdp").factor == Approx(0.3 / a.trials()[1].predicted.model).epsilon(0.01));
}

TEST_CASE("auto: a collapsing candidate is not tried again when a changed load re-opens; the back-off's end re-measures all", "[auto][predict]") {
    AutoSteer a(quick({SteeringMode::kRps, SteeringMode::kXdp}));
    // Targets half busy: RPS collapses delivery (cut at its first sample), XDP gives nothing.
    auto [e, i] = until(a, 1, 100, 100000, 0.8, 1.0, 0.5);
    REQUIRE(e.decision == "enable");
    auto [c, j] = until(a, i + 1, i + 100, 3000, 0.4, 0.8, 0.5);
    REQUIRE(c.decision == "try");
    auto [u, k] = until(a, j + 1, j + 100, 100000, 0.8, 1.0, 0.5);
    REQUIRE(u.decision == "undo");
    REQUIRE(a.state() == AutoState::kBackoff);
    // The targets' application goes quiet: XDP's corrected prediction clears 1.10x, RPS's stays
    // near what it measured (0.03x): re-opened, XDP alone.
    auto [r, l] = until(a, k + 1, k + 100, 100000, 0.8, 1.0, 0.04);
    REQUIRE(r.decision == "retry");
    CHECK(r.reason == "load_changed");
    auto en = a.step(load((l + 1) * 0.25, 100000, 0.8, 1.0, 0.04), 0, kPredictAll, kPredictRxOnly);
    REQUIRE(en.decision == "enable");
    INFO(en.detail);
    CHECK(en.detail.find("trying xdp (CPUs 1-3) predicted 1.4") != std::string::npos);
    CHECK(en.detail.find("; skipped: rps (CPUs 1-3) predicted 0.04x none") != std::string::npos);
    CHECK(en.detail.find("its last trial here delivered less than none") != std::string::npos);
    CHECK(a.mode() == SteeringMode::kXdp);
    // XDP gives nothing again: undone; at the back-off's end, at this load, both are measured again.
    auto [u2, m] = until(a, l + 2, l + 100, 100000, 0.8, 1.0, 0.04);
    REQUIRE(u2.decision == "undo");
    auto [q, n] = until(a, m + 1, m + 1300, 100000, 0.8, 1.0, 0.04);
    REQUIRE(q.decision == "retry");
    CHECK(q.reason == "backoff_over");
    auto [again, o] = until(a, n + 1, n + 100, 100000, 0.8, 1.0, 0.04);
    REQUIRE(again.decision == "enable");
    CHECK(again.detail.find("skipped") == std::string::npos);
    CHECK(a.trials().size() == 2);
}

TEST_CASE("auto: every candidate predicted not to beat the margin: held off, nothing applied", "[auto][predict]") {
    AutoThresholds t = quick({SteeringMode::kRps});
    t.minSpare = 0.005;  // so that a target 1 % idle qualifies and the bound decides
    AutoSteer a(t);
    AutoDecision h;
    for (int i = 1; i < 100 && h.decision.empty(); ++i) {
        AutoSample s = load(i * 0.25, 100000, 1.0, 1.0, 1.0);
        for (unsigned c = 1; c < 4; ++c) s.cpus[c] = {0.994, 0.99};
        h = a.step(s, 0, kPredictAll, kPredictRxOnly);
    }
    CHECK(h.decision == "hold");
    CHECK(h.reason == "predicted_no_gain");
    CHECK_FALSE(h.changed);
    CHECK(h.detail.find("trying") == std::string::npos);
    CHECK(h.detail.find("nothing; skipped: rps (CPUs 1-3) predicted") != std::string::npos);
    CHECK(h.detail.find("cannot beat 1.05x") != std::string::npos);
    CHECK(a.targets().empty());
    CHECK(a.state() == AutoState::kBackoff);
}

TEST_CASE("auto: a load that moves the prediction past the margin re-opens the back-off early; the same load does not", "[auto][predict]") {
    AutoSteer a(quick({SteeringMode::kRps}));
    // Targets half busy with their own work: RPS predicted 1.4x, measured 1.0x: undone.
    auto [e, i] = until(a, 1, 100, 100000, 0.8, 1.0, 0.5);
    REQUIRE(e.decision == "enable");
    auto [u, j] = until(a, i + 1, i + 200, 100000, 0.8, 1.0, 0.5);
    REQUIRE(u.decision == "undo");
    REQUIRE(a.state() == AutoState::kBackoff);
    // Noise at the same load (a tenth either way) for 60 s: held.
    for (int n = j + 1; n < j + 240; ++n) {
        const double wobble = (n % 2) ? 1.1 : 0.9;
        CHECK(a.step(load(n * 0.25, 100000 * wobble, 0.8, 1.0, 0.5), 0, kPredictAll, kPredictRxOnly).decision.empty());
    }
    CHECK(a.state() == AutoState::kBackoff);
    // The targets' application goes quiet (idle 1.5 -> 2.88 CPUs): corrected, RPS now predicts
    // 2.08 * (1.0 / 1.4) = 1.48x: measured again after `sustain`, long before the back-off's end.
    auto [r, k] = until(a, j + 240, j + 300, 100000, 0.8, 1.0, 0.04);
    REQUIRE(r.decision == "retry");
    CHECK(r.reason == "load_changed");
    CHECK(r.detail.find("the load changed (delivered 100000 -> 100000 packets/s, targets 1-3 idle 1.5 -> 2.9 CPUs): rps predicted 1.4") !=
          std::string::npos);
    CHECK((k - (j + 240)) * 0.25 <= 4.25);  // two windows of `sustain` at most
    // Its saturated samples are the baseline: the next one enables.
    auto next = a.step(load((k + 1) * 0.25, 100000, 0.8, 1.0, 0.04), 0, kPredictAll, kPredictRxOnly);
    CHECK(next.decision == "enable");
    CHECK(next.changed);
}
