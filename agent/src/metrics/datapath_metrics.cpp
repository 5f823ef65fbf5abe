#include "metrics/datapath_metrics.hpp"

#include <functional>
#include <vector>

namespace rxtune {

using prometheus::Labels;

struct DatapathMetrics::Live {
    long pid = 0;
    std::string tap;
    std::map<std::string, void*> children;  // family address + labels -> child
    std::vector<std::function<void()>> removers;
};

namespace {

// The child of `fam` with labels `l` in this datapath's set, added on first use.
template <class Metric>
Metric& child(DatapathMetrics::Live& live, prometheus::Family<Metric>& fam, const Labels& l) {
    std::string k = std::to_string(reinterpret_cast<uintptr_t>(&fam)) + "|";
    for (const auto& [a, b] : l) k += a + "=" + b + ",";
    auto it = live.children.find(k);
    if (it == live.children.end()) {
        Metric* m = &fam.Add(l);
        it = live.children.emplace(k, m).first;
        live.removers.push_back([&fam, m] { fam.Remove(m); });
    }
    return *static_cast<Metric*>(it->second);
}

void counterTo(DatapathMetrics::Live& live, prometheus::Family<prometheus::Counter>& fam, const Labels& l, double total) {
    auto& c = child(live, fam, l);
    if (total > c.Value()) c.Increment(total - c.Value());
}

void gaugeTo(DatapathMetrics::Live& live, prometheus::Family<prometheus::Gauge>& fam, const Labels& l, double value) {
    child(live, fam, l).Set(value);
}

void clear(DatapathMetrics::Live& live) {
    for (auto& r : live.removers) r();
    live.removers.clear();
    live.children.clear();
}

}  // namespace

DatapathMetrics::DatapathMetrics(prometheus::Registry& r)
    : up_(prometheus::BuildGauge().Name("rxtune_datapath_up").Help("1 when rxtune-dp answered on its telemetry socket at the last sample").Register(r)),
      info_(prometheus::BuildGauge().Name("rxtune_datapath_info").Help("rxtune-dp facts: NIC port, TX mode, RX core CPU; always 1").Register(r)),
      workerInfo_(prometheus::BuildGauge().Name("rxtune_datapath_worker_info").Help("A worker: its TAP queue, CPU and redirection-table entries; always 1").Register(r)),
      rxPackets_(prometheus::BuildCounter().Name("rxtune_datapath_rx_packets_total").Help("Packets the RX core took from the NIC's one RX queue").Register(r)),
      rxBytes_(prometheus::BuildCounter().Name("rxtune_datapath_rx_bytes_total").Help("Bytes the RX core took from the NIC").Register(r)),
      rxNonIp_(prometheus::BuildCounter().Name("rxtune_datapath_rx_non_ip_packets_total").Help("Frames without an IP flow (ARP ...), all sent to queue 0").Register(r)),
      rxBusy_(prometheus::BuildCounter().Name("rxtune_datapath_rx_busy_seconds_total").Help("Time the RX core spent on polls that found work (rate = its load; 1 = saturated)").Register(r)),
      nicTx_(prometheus::BuildCounter().Name("rxtune_datapath_nic_tx_packets_total").Help("Replies sent on the NIC's TX queue, by result (sent, dropped)").Register(r)),
      nicMissed_(prometheus::BuildCounter().Name("rxtune_datapath_nic_missed_packets_total").Help("Packets the NIC port dropped before the RX core polled them (imissed + rx_nombuf)").Register(r)),
      workerPackets_(prometheus::BuildCounter().Name("rxtune_datapath_worker_packets_total").Help("Packets a worker moved: to_tap (flows into TAP queue N) or from_tap (replies)").Register(r)),
      workerBytes_(prometheus::BuildCounter().Name("rxtune_datapath_worker_bytes_total").Help("Bytes a worker moved, by direction").Register(r)),
      drops_(prometheus::BuildCounter().Name("rxtune_datapath_dropped_packets_total").Help("Packets dropped in the datapath, by queue and reason (ring_full, tap_tx, tx_ring_full)").Register(r)),
      workerBusy_(prometheus::BuildCounter().Name("rxtune_datapath_worker_busy_seconds_total").Help("Time a worker spent on polls that found work").Register(r)),
      checksums_(prometheus::BuildCounter().Name("rxtune_datapath_checksums_fixed_total").Help("TCP/UDP checksums recomputed (nic.fix_checksums)").Register(r)),
      ring_(prometheus::BuildGauge().Name("rxtune_datapath_ring_packets").Help("Packets waiting in a worker's ring now").Register(r)),
      mbufs_(prometheus::BuildGauge().Name("rxtune_datapath_mbufs").Help("Packet buffers of the pool, by state (in_use, total)").Register(r)) {}

void DatapathMetrics::update(const std::string& socket, const Result<DatapathStats>& stats) {
    auto& live = live_[socket];
    if (!live) live = std::make_shared<Live>();
    auto& upGauge = up_.Add({{"socket", socket}});
    if (!stats) {
        upGauge.Set(0);
        clear(*live);
        live->pid = 0;
        return;
    }
    const DatapathStats& s = *stats;
    if (live->pid != s.pid || live->tap != s.tap) clear(*live);  // restarted: its counters began again
    live->pid = s.pid;
    live->tap = s.tap;
    upGauge.Set(1);
    const std::string& ifc = s.tap;
    const double hz = s.tscHz ? static_cast<double>(s.tscHz) : 1.0;
    gaugeTo(*live, info_, {{"interface", ifc}, {"nic", s.nic}, {"tx_mode", s.txMode}, {"cpu", std::to_string(s.rxCpu)},
                                {"flow_hash", s.flowHash}, {"exception_path", s.exceptionPath},
                                {"prefetch", s.prefetch}}, 1);
    counterTo(*live, rxPackets_, {{"interface", ifc}}, static_cast<double>(s.rxPackets));
    counterTo(*live, rxBytes_, {{"interface", ifc}}, static_cast<double>(s.rxBytes));
    counterTo(*live, rxNonIp_, {{"interface", ifc}}, static_cast<double>(s.rxNonIp));
    counterTo(*live, rxBusy_, {{"interface", ifc}}, static_cast<double>(s.rxBusyCycles) / hz);
    counterTo(*live, nicTx_, {{"interface", ifc}, {"result", "sent"}}, static_cast<double>(s.nicTxPackets));
    counterTo(*live, nicTx_, {{"interface", ifc}, {"result", "dropped"}}, static_cast<double>(s.nicTxDropped));
    auto port = [](const std::map<std::string, uint64_t>& m, const char* k) {
        auto it = m.find(k);
        return it == m.end() ? 0.0 : static_cast<double>(it->second);
    };
    counterTo(*live, nicMissed_, {{"interface", ifc}}, port(s.nicPort, "imissed") + port(s.nicPort, "rx_nombuf"));
    gaugeTo(*live, mbufs_, {{"interface", ifc}, {"state", "in_use"}}, static_cast<double>(s.mbufsInUse));
    gaugeTo(*live, mbufs_, {{"interface", ifc}, {"state", "total"}}, static_cast<double>(s.mbufsTotal));
    for (const auto& w : s.workers) {
        const std::string q = std::to_string(w.queue);
        gaugeTo(*live, workerInfo_, {{"interface", ifc}, {"queue", q}, {"cpu", std::to_string(w.cpu)}, {"reta_entries", std::to_string(w.retaEntries)}}, 1);
        counterTo(*live, workerPackets_, {{"interface", ifc}, {"queue", q}, {"direction", "to_tap"}}, static_cast<double>(w.toTapPackets));
        counterTo(*live, workerPackets_, {{"interface", ifc}, {"queue", q}, {"direction", "from_tap"}}, static_cast<double>(w.fromTapPackets));
        counterTo(*live, workerBytes_, {{"interface", ifc}, {"queue", q}, {"direction", "to_tap"}}, static_cast<double>(w.toTapBytes));
        counterTo(*live, workerBytes_, {{"interface", ifc}, {"queue", q}, {"direction", "from_tap"}}, static_cast<double>(w.fromTapBytes));
        counterTo(*live, drops_, {{"interface", ifc}, {"queue", q}, {"reason", "ring_full"}}, static_cast<double>(w.ringFull));
        counterTo(*live, drops_, {{"interface", ifc}, {"queue", q}, {"reason", "tap_tx"}}, static_cast<double>(w.toTapDropped));
        counterTo(*live, drops_, {{"interface", ifc}, {"queue", q}, {"reason", "tx_ring_full"}}, static_cast<double>(w.toNicDropped));
        counterTo(*live, workerBusy_, {{"interface", ifc}, {"queue", q}}, static_cast<double>(w.busyCycles) / hz);
        counterTo(*live, checksums_, {{"interface", ifc}, {"queue", q}}, static_cast<double>(w.checksumsFixed));
        gaugeTo(*live, ring_, {{"interface", ifc}, {"queue", q}}, static_cast<double>(w.ringCount));
    }
}

}  // namespace rxtune
