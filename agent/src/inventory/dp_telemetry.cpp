#include "inventory/dp_telemetry.hpp"

#include <cstring>

#include <nlohmann/json.hpp>

#include "sys/seqpacket.hpp"

namespace rxtune {

namespace {


uint64_t u64(const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end() || !it->is_number_unsigned()) throw std::invalid_argument(std::string("missing or not a counter: ") + key);
    return it->get<uint64_t>();
}

std::vector<uint64_t> array(const nlohmann::json& o, const char* key, size_t n) {
    auto it = o.find(key);
    if (it == o.end() || !it->is_array() || it->size() != n)
        throw std::invalid_argument(std::string("missing or not an array of ") + std::to_string(n) + ": " + key);
    std::vector<uint64_t> out;
    for (const auto& v : *it) {
        if (!v.is_number_unsigned()) throw std::invalid_argument(std::string("not a counter in ") + key);
        out.push_back(v.get<uint64_t>());
    }
    return out;
}

}  // namespace

Result<DatapathStats> parseDatapathStats(std::string_view text) {
    DatapathStats s;
    try {
        const nlohmann::json root = nlohmann::json::parse(text);
        if (!root.is_object() || !root.contains("/rxtune_dp/stats") || !root["/rxtune_dp/stats"].is_object())
            return fail(EPROTO, "parse", "/rxtune_dp/stats", "reply has no /rxtune_dp/stats object (not an rxtune-dp socket?)");
        const nlohmann::json& o = root["/rxtune_dp/stats"];
        s.nic = o.value("nic", "");
        s.tap = o.value("tap", "");
        s.txMode = o.value("tx_mode", "");
        s.flowHash = o.value("flow_hash", "");
        s.exceptionPath = o.value("exception_path", "");
        s.prefetch = o.value("prefetch_next_mbufs", "");
        s.rxCpu = static_cast<unsigned>(u64(o, "rx_cpu"));
        s.tscHz = u64(o, "tsc_hz");
        s.uptimeCycles = u64(o, "uptime_cycles");
        s.rxPackets = u64(o, "rx_packets");
        s.rxBytes = u64(o, "rx_bytes");
        s.rxNonIp = u64(o, "rx_non_ip");
        s.rxBusyCycles = u64(o, "rx_busy_cycles");
        s.nicTxPackets = u64(o, "nic_tx_packets");
        s.nicTxBytes = u64(o, "nic_tx_bytes");
        s.nicTxDropped = u64(o, "nic_tx_dropped");
        s.mbufsInUse = u64(o, "mbufs_in_use");
        s.mbufsTotal = u64(o, "mbufs_total");
        const uint64_t n = u64(o, "workers");
        if (n == 0 || n > 64) return fail(EPROTO, "parse", "/rxtune_dp/stats", "workers out of range: " + std::to_string(n));
        if (s.tap.empty()) return fail(EPROTO, "parse", "/rxtune_dp/stats", "no tap name");
        const auto cpu = array(o, "worker_cpu", n), reta = array(o, "worker_reta_entries", n),
                   disp = array(o, "worker_dispatched", n), full = array(o, "worker_ring_full", n),
                   count = array(o, "worker_ring_count", n), tp = array(o, "worker_to_tap_packets", n),
                   tb = array(o, "worker_to_tap_bytes", n), td = array(o, "worker_to_tap_dropped", n),
                   fp = array(o, "worker_from_tap_packets", n), fb = array(o, "worker_from_tap_bytes", n),
                   tn = array(o, "worker_to_nic", n), tnd = array(o, "worker_to_nic_dropped", n),
                   ck = array(o, "worker_checksums_fixed", n), busy = array(o, "worker_busy_cycles", n);
        for (size_t i = 0; i < n; ++i)
            s.workers.push_back({static_cast<unsigned>(i), static_cast<unsigned>(cpu[i]), static_cast<unsigned>(reta[i]),
                                 disp[i], full[i], count[i], tp[i], tb[i], td[i], fp[i], fb[i], tn[i], tnd[i], ck[i], busy[i]});
        for (const auto& [k, v] : o.items()) {
            if (!v.is_number_unsigned()) continue;
            if (k.starts_with("nic_port_")) s.nicPort[k.substr(9)] = v.get<uint64_t>();
            else if (k.starts_with("tap_port_")) s.tapPort[k.substr(9)] = v.get<uint64_t>();
        }
    } catch (const std::exception& e) {
        return fail(EPROTO, "parse", "/rxtune_dp/stats", e.what());
    }
    return s;
}

Result<DatapathStats> readDatapathTelemetry(const std::string& socketPath, int timeoutMs) {
    auto client = SeqpacketClient::connect(socketPath, timeoutMs);
    if (!client) return failWith(client.error());
    auto greeting = client->receive("read greeting");
    if (!greeting) return failWith(greeting.error());
    long pid = 0;
    try {
        pid = nlohmann::json::parse(*greeting).value("pid", 0L);
    } catch (const std::exception& e) {
        return fail(EPROTO, "parse greeting", socketPath, e.what());
    }
    if (auto sent = client->send("/rxtune_dp/stats"); !sent) return failWith(sent.error());
    auto reply = client->receive("read reply");
    if (!reply) return failWith(reply.error());
    auto s = parseDatapathStats(*reply);
    if (!s) return failWith(s.error().withContext(socketPath));
    s->pid = pid;
    return s;
}

}  // namespace rxtune
