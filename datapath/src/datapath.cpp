#include "datapath.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <functional>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>
#include <rte_spinlock.h>
#include <rte_tcp.h>
#include <rte_telemetry.h>
#include <rte_udp.h>
#include <systemd/sd-daemon.h>

#include <filesystem>

#include "dpdk_compat.hpp"
#include "fanout.hpp"
#include "flow.hpp"
#include "host.hpp"
#include "stats.hpp"
#include "sys/vhost_net.hpp"

namespace rxtune::dp {

namespace {

// virtio-user is DPDK's virtio PMD, which a shared DPDK build (Debian's) loads from its plugin
// directory at rte_eal_init, from a package of its own (librte-net-virtioN, N the ABI version that
// names the directory: pmds-23.0 for DPDK 22.11, pmds-25.0 for 24.11). Without it EAL only says it
// cannot parse the vdev; asked here first, auto takes the TAP and says why.
Result<void> probeVirtioPmd() {
#ifdef RTE_EAL_PMD_PATH
    const std::string dir = RTE_EAL_PMD_PATH;
    if (dir.empty()) return {};
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        if (e.path().filename().string().starts_with("librte_net_virtio.so")) return {};
    const auto at = dir.rfind("pmds-");
    const std::string abi = at == std::string::npos ? "" : dir.substr(at + 5, dir.find('.', at) - at - 5);
    return fail(ENOENT, "check", dir, "DPDK's virtio PMD (librte_net_virtio.so, Debian: librte-net-virtio" + abi + ") is not installed");
#else
    return {};  // a static build: the PMDs are linked in
#endif
}

}  // namespace

namespace {

constexpr unsigned kMaxBurst = 256;
constexpr uint16_t kNicDesc = 1024, kTapDesc = 512;
constexpr unsigned kIdlePollsBeforeSleep = 64;

void log(const char* prio, const std::string& msg) { std::cerr << prio << "rxtune-dp: " << msg << std::endl; }

std::atomic<bool> gStop{false};
extern "C" void onSignal(int) { gStop.store(true, std::memory_order_relaxed); }

struct Runtime;
struct WorkerArg {
    Runtime* rt = nullptr;
    unsigned index = 0;
};

struct Runtime {
    const DpConfig* cfg = nullptr;
    uint16_t nicPort = 0, tapPort = 0;
    unsigned workers = 0;
    std::vector<uint16_t> reta;
    uint32_t retaMask = 0;
    uint16_t burst = 32;
    bool nicHash = false;  // the RX core takes the NIC port's symmetric RSS hash from the mbuf
    PrefetchChoice prefetch;
    std::string exceptionKind, exceptionWhy;
    rte_mempool* pool = nullptr;
    rte_ring* rings[kMaxWorkers] = {};
    rte_ring* txRing = nullptr;
    rte_spinlock_t txLock = RTE_SPINLOCK_INITIALIZER;
    std::atomic<bool> draining{false};
    std::atomic<unsigned> workersDone{0};
    uint64_t startTsc = 0;
    RxStats rx;
    WorkerStats w[kMaxWorkers];
    WorkerArg args[kMaxWorkers];
};

std::mutex gRtMutex;         // the telemetry thread vs. teardown
Runtime* gRt = nullptr;

void idleWait(unsigned& idle, unsigned sleepUs) {
    if (sleepUs == 0) {
        rte_pause();
        return;
    }
    if (++idle >= kIdlePollsBeforeSleep) rte_delay_us_sleep(sleepUs);
}

// Marks where the L3/L4 headers are (for the worker's checksum fix) from the RX core's parse.
// Only with fix_checksums: otherwise the RX core leaves the mbuf alone.
inline void classify(rte_mbuf* m, const FlowTuple& t) {
    m->packet_type = 0;
    if (!t.hasPorts || (t.proto != IPPROTO_TCP && t.proto != IPPROTO_UDP)) return;
    m->l2_len = t.l3Offset;
    m->l3_len = static_cast<uint16_t>(t.l4Offset - t.l3Offset) & 0x1ff;
    m->packet_type = (t.l3 == L3::kIpv4 ? RTE_PTYPE_L3_IPV4 : RTE_PTYPE_L3_IPV6) |
                     (t.proto == IPPROTO_TCP ? RTE_PTYPE_L4_TCP : RTE_PTYPE_L4_UDP);
}

// Frames from af_packet on a veth may carry a partial checksum (the sender's TX offload). The
// kernel behind the TAP verifies checksums, so such frames would be dropped there: recompute.
inline bool fixChecksum(rte_mbuf* m) {
    const uint32_t l4type = m->packet_type & RTE_PTYPE_L4_MASK;
    if (l4type == 0 || m->nb_segs != 1) return false;
    auto* d = rte_pktmbuf_mtod(m, uint8_t*);
    uint8_t* l3 = d + m->l2_len;
    uint8_t* l4 = l3 + m->l3_len;
    const uint32_t avail = m->data_len;
    if (RTE_ETH_IS_IPV4_HDR(m->packet_type)) {
        auto* ip = reinterpret_cast<rte_ipv4_hdr*>(l3);
        if (m->l2_len + uint32_t{rte_be_to_cpu_16(ip->total_length)} > avail) return false;
        if (l4type == RTE_PTYPE_L4_TCP) {
            if (m->l2_len + m->l3_len + sizeof(rte_tcp_hdr) > avail) return false;
            auto* tcp = reinterpret_cast<rte_tcp_hdr*>(l4);
            tcp->cksum = 0;
            tcp->cksum = rte_ipv4_udptcp_cksum(ip, l4);
        } else {
            if (m->l2_len + m->l3_len + sizeof(rte_udp_hdr) > avail) return false;
            auto* udp = reinterpret_cast<rte_udp_hdr*>(l4);
            if (udp->dgram_cksum == 0) return false;  // no checksum in IPv4 UDP: leave it so
            udp->dgram_cksum = 0;
            udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, l4);
        }
        return true;
    }
    auto* ip6 = reinterpret_cast<rte_ipv6_hdr*>(l3);
    if (m->l2_len + 40u + rte_be_to_cpu_16(ip6->payload_len) > avail) return false;
    if (l4type == RTE_PTYPE_L4_TCP) {
        if (m->l2_len + m->l3_len + sizeof(rte_tcp_hdr) > avail) return false;
        auto* tcp = reinterpret_cast<rte_tcp_hdr*>(l4);
        tcp->cksum = 0;
        tcp->cksum = rte_ipv6_udptcp_cksum(ip6, l4);
    } else {
        if (m->l2_len + m->l3_len + sizeof(rte_udp_hdr) > avail) return false;
        auto* udp = reinterpret_cast<rte_udp_hdr*>(l4);
        udp->dgram_cksum = 0;
        udp->dgram_cksum = rte_ipv6_udptcp_cksum(ip6, l4);
    }
    return true;
}

// The NIC's one TX queue, ring mode: the RX core is the only one that transmits on it.
unsigned drainTxRing(Runtime& rt) {
    rte_mbuf* out[kMaxBurst];
    // Up to kMaxBurst at a time: every worker feeds this ring, so it may fill N times as fast as
    // one burst per loop drains it.
    const unsigned n = rte_ring_sc_dequeue_burst(rt.txRing, reinterpret_cast<void**>(out), kMaxBurst, nullptr);
    if (n == 0) return 0;
    uint64_t bytes = 0;
    for (unsigned i = 0; i < n; ++i) bytes += out[i]->pkt_len;
    const uint16_t sent = rte_eth_tx_burst(rt.nicPort, 0, out, static_cast<uint16_t>(n));
    for (unsigned i = sent; i < n; ++i) bytes -= out[i]->pkt_len;
    if (sent < n) {
        rte_pktmbuf_free_bulk(out + sent, n - sent);
        bump(rt.rx.nicTxDropped, n - sent);
    }
    bump(rt.rx.nicTxPackets, sent);
    bump(rt.rx.nicTxBytes, bytes);
    return n;
}

// The mbufs the NIC port's next allocation takes are the top of this lcore's mempool cache. They
// were last read by a worker on another CPU (it transmitted and freed them), so the PMD's writes
// into them (it resets each mbuf's header lines; a vdev then copies the frame into the first data
// line) wait for that CPU's copies to be invalidated, in store order. PREFETCHW starts those
// transfers a burst early, while this one is parsed. DPDK builds for -march=corei7, where
// __builtin_prefetch(p, 1) and rte_prefetch0_write() become read prefetches, which find the line
// already readable here and do nothing: hence the instruction itself (prefetch_next_mbufs,
// resolved by choosePrefetch()).
inline void prefetchForWrite(const void* p) {
#if defined(__x86_64__)
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
    __builtin_prefetch(p, 1, 3);  // arm64: PRFM PSTL1KEEP, a prefetch for store
#endif
}

// Prefetches for ownership the two header lines of the next `n` mbufs the mempool cache will hand
// out, and their first data line unless dataOffset is 0 (a PCI NIC DMAs into it: a prefetched copy
// would only be invalidated). A hint: a wrong guess costs a few cycles, never correctness.
inline void prefetchNextMbufs(const rte_mempool_cache* cache, unsigned n, size_t dataOffset) {
    const unsigned len = cache->len, k = std::min(len, n);
    for (unsigned i = 0; i < k; ++i) {
        const auto* m = static_cast<const uint8_t*>(cache->objs[len - 1 - i]);
        prefetchForWrite(m);
        prefetchForWrite(m + RTE_CACHE_LINE_SIZE);
        if (dataOffset) prefetchForWrite(m + dataOffset);
    }
}

// How far ahead of the packet being parsed its frame is prefetched.
constexpr unsigned kPrefetchAhead = 4;
// In ring mode the replies' TX ring is drained when a poll comes back short of a full burst (the
// NIC had nothing more), and at least every this many polls.
constexpr unsigned kTxRingEvery = 8;

void rxLoop(Runtime& rt) {
    const unsigned burst = rt.burst, workers = rt.workers;
    rte_mbuf* pkts[kMaxBurst];
    // One burst per worker, laid out for this run's burst and worker count (a few hundred bytes
    // for the usual 32 x 2, not the kMaxWorkers x kMaxBurst that would compete with the frames for L1).
    std::vector<rte_mbuf*> batch(size_t{workers} * burst);
    unsigned count[kMaxWorkers];
    unsigned idle = 0, polls = 0;
    const bool ringTx = rt.cfg->txMode == TxMode::kRing;
    // The worker needs the headers' offsets and types only to fix checksums; otherwise the RX core
    // writes nothing into the mbuf, so that the worker reads lines that are not dirty on another core.
    const bool mark = rt.cfg->fixChecksums;
    const bool nicHash = rt.nicHash;
    const unsigned sleepUs = rt.cfg->idleSleepUs;
    const uint16_t* reta = rt.reta.data();
    const uint32_t retaMask = rt.retaMask;
    FlowTuple t;
    // Null (nothing prefetched) unless prefetch_next_mbufs resolved to on.
    const rte_mempool_cache* cache = rt.prefetch.on ? rte_mempool_default_cache(rt.pool, rte_lcore_id()) : nullptr;
    // The first data line too where the NIC port is a vdev, which copies each frame in.
    const size_t dataOffset = isVdev(rt.cfg->nic) ? sizeof(rte_mbuf) + rte_pktmbuf_priv_size(rt.pool) + RTE_PKTMBUF_HEADROOM : 0;
    uint64_t now = rte_rdtsc();
    while (!gStop.load(std::memory_order_relaxed)) {
        const uint64_t t0 = now;
        const uint16_t n = rte_eth_rx_burst(rt.nicPort, 0, pkts, static_cast<uint16_t>(burst));
        unsigned work = n;
        if (n > 0) {
            if (cache) prefetchNextMbufs(cache, burst, dataOffset);
            uint64_t bytes = 0, nonIp = 0;
            std::fill(count, count + workers, 0u);
            for (unsigned i = 0; i < std::min<unsigned>(n, kPrefetchAhead); ++i) rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void*));
            for (unsigned i = 0; i < n; ++i) {
                if (i + kPrefetchAhead < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kPrefetchAhead], void*));
                rte_mbuf* m = pkts[i];
                bytes += m->pkt_len;
                unsigned w = 0;
                if (nicHash && (m->ol_flags & RTE_MBUF_F_RX_RSS_HASH)) {
                    w = reta[m->hash.rss & retaMask];
                } else if (parseFlow(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, t)) {
                    w = reta[flowHash(t) & retaMask];
                    if (mark) classify(m, t);
                } else {
                    if (mark) m->packet_type = 0;
                    ++nonIp;
                }
                batch[w * burst + count[w]++] = m;
            }
            for (unsigned w = 0; w < workers; ++w) {
                if (count[w] == 0) continue;
                rte_mbuf** b = &batch[w * burst];
                const unsigned k = rte_ring_sp_enqueue_burst(rt.rings[w], reinterpret_cast<void**>(b), count[w], nullptr);
                bump(rt.rx.dispatched[w], k);
                if (k < count[w]) {
                    rte_pktmbuf_free_bulk(b + k, count[w] - k);
                    bump(rt.rx.ringFull[w], count[w] - k);
                }
            }
            bump(rt.rx.packets, n);
            bump(rt.rx.bytes, bytes);
            if (nonIp) bump(rt.rx.nonIp, nonIp);
        }
        if (ringTx && (n < burst || ++polls % kTxRingEvery == 0)) work += drainTxRing(rt);
        now = rte_rdtsc();  // one read per poll: this poll's end is the next one's start
        if (work > 0) {
            bump(rt.rx.busyCycles, now - t0);
            idle = 0;
        } else {
            idleWait(idle, sleepUs);
            if (idle >= kIdlePollsBeforeSleep) now = rte_rdtsc();  // a sleep is not the next poll's
        }
    }
}

void toNic(Runtime& rt, WorkerStats& ws, rte_mbuf** pkts, unsigned n) {
    unsigned done = 0;
    if (rt.cfg->txMode == TxMode::kRing) {
        done = rte_ring_mp_enqueue_burst(rt.txRing, reinterpret_cast<void**>(pkts), n, nullptr);
    } else {
        rte_spinlock_lock(&rt.txLock);
        done = rte_eth_tx_burst(rt.nicPort, 0, pkts, static_cast<uint16_t>(n));
        rte_spinlock_unlock(&rt.txLock);
    }
    bump(ws.toNic, done);
    if (done < n) {
        rte_pktmbuf_free_bulk(pkts + done, n - done);
        bump(ws.toNicDropped, n - done);
    }
}

int workerMain(void* p) {
    auto& arg = *static_cast<WorkerArg*>(p);
    Runtime& rt = *arg.rt;
    const unsigned q = arg.index;
    WorkerStats& ws = rt.w[q];
    rte_ring* ring = rt.rings[q];
    const bool fix = rt.cfg->fixChecksums;
    const unsigned sleepUs = rt.cfg->idleSleepUs;
    rte_mbuf* pkts[kMaxBurst];
    rte_mbuf* replies[kMaxBurst];
    unsigned idle = 0;
    for (;;) {
        // Read the flag before the dequeue: once draining is seen, RX has stopped producing, so an
        // empty ring after it is empty for good.
        const bool draining = rt.draining.load(std::memory_order_acquire);
        const uint64_t t0 = rte_rdtsc();
        const unsigned n = rte_ring_sc_dequeue_burst(ring, reinterpret_cast<void**>(pkts), rt.burst, nullptr);
        if (n > 0) {
            uint64_t bytes = 0, fixed = 0;
            for (unsigned i = 0; i < n; ++i) {
                if (fix && fixChecksum(pkts[i])) ++fixed;
                bytes += pkts[i]->pkt_len;
            }
            const uint16_t sent = rte_eth_tx_burst(rt.tapPort, static_cast<uint16_t>(q), pkts, static_cast<uint16_t>(n));
            for (unsigned i = sent; i < n; ++i) bytes -= pkts[i]->pkt_len;
            if (sent < n) {
                rte_pktmbuf_free_bulk(pkts + sent, n - sent);
                bump(ws.toTapDropped, n - sent);
            }
            bump(ws.toTapPackets, sent);
            bump(ws.toTapBytes, bytes);
            if (fixed) bump(ws.checksumsFixed, fixed);
        }
        unsigned r = 0;
        if (!draining) {
            r = rte_eth_rx_burst(rt.tapPort, static_cast<uint16_t>(q), replies, rt.burst);
            if (r > 0) {
                uint64_t bytes = 0;
                for (unsigned i = 0; i < r; ++i) bytes += replies[i]->pkt_len;
                bump(ws.fromTapPackets, r);
                bump(ws.fromTapBytes, bytes);
                toNic(rt, ws, replies, r);
            }
        } else if (n == 0) {
            break;
        }
        if (n + r > 0) {
            bump(ws.busyCycles, rte_rdtsc() - t0);
            idle = 0;
        } else {
            idleWait(idle, sleepUs);
        }
    }
    rt.workersDone.fetch_add(1, std::memory_order_release);
    return 0;
}

// ---- telemetry: /rxtune_dp/stats, read by `rxtune daemon` for the rxtune_datapath_* metrics ----

void addArray(rte_tel_data* d, const char* name, unsigned n, const std::function<uint64_t(unsigned)>& value) {
    rte_tel_data* a = rte_tel_data_alloc();
    if (!a) return;
    rte_tel_data_start_array(a, RTE_TEL_U64_VAL);
    for (unsigned i = 0; i < n; ++i) telArrayU64(a, value(i));
    if (rte_tel_data_add_dict_container(d, name, a, 0) != 0) rte_tel_data_free(a);
}

void addPortStats(rte_tel_data* d, const char* prefix, uint16_t port) {
    rte_eth_stats s{};
    if (rte_eth_stats_get(port, &s) != 0) return;
    const std::pair<const char*, uint64_t> v[] = {{"ipackets", s.ipackets}, {"opackets", s.opackets},
                                                  {"ibytes", s.ibytes},     {"obytes", s.obytes},
                                                  {"imissed", s.imissed},   {"ierrors", s.ierrors},
                                                  {"oerrors", s.oerrors},   {"rx_nombuf", s.rx_nombuf}};
    for (const auto& [k, val] : v) telDictU64(d, (std::string(prefix) + k).c_str(), val);
}

int telemetryStats(const char*, const char*, rte_tel_data* d) {
    std::lock_guard lock(gRtMutex);
    Runtime* rt = gRt;
    if (!rt) return -EAGAIN;
    const DpConfig& c = *rt->cfg;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "nic", portNameOf(c.nic).c_str());
    rte_tel_data_add_dict_string(d, "tap", c.tapName.c_str());
    rte_tel_data_add_dict_string(d, "tx_mode", c.txMode == TxMode::kRing ? "ring" : "lock");
    rte_tel_data_add_dict_string(d, "flow_hash", rt->nicHash ? "nic" : "software");
    rte_tel_data_add_dict_string(d, "exception_path", rt->exceptionKind.c_str());
    rte_tel_data_add_dict_string(d, "prefetch_next_mbufs", rt->prefetch.on ? "on" : "off");
    rte_tel_data_add_dict_string(d, "exception_why", rt->exceptionWhy.c_str());
    telDictU64(d, "workers", rt->workers);
    telDictU64(d, "rx_cpu", *c.rxCpu);
    telDictU64(d, "tsc_hz", rte_get_tsc_hz());
    telDictU64(d, "uptime_cycles", rte_rdtsc() - rt->startTsc);
    telDictU64(d, "rx_packets", get(rt->rx.packets));
    telDictU64(d, "rx_bytes", get(rt->rx.bytes));
    telDictU64(d, "rx_non_ip", get(rt->rx.nonIp));
    telDictU64(d, "rx_busy_cycles", get(rt->rx.busyCycles));
    telDictU64(d, "nic_tx_packets", get(rt->rx.nicTxPackets));
    telDictU64(d, "nic_tx_bytes", get(rt->rx.nicTxBytes));
    telDictU64(d, "nic_tx_dropped", get(rt->rx.nicTxDropped));
    telDictU64(d, "mbufs_in_use", rte_mempool_in_use_count(rt->pool));
    telDictU64(d, "mbufs_total", rt->pool->size);
    if (rt->txRing) telDictU64(d, "tx_ring_count", rte_ring_count(rt->txRing));
    const unsigned n = rt->workers;
    std::vector<unsigned> shares = retaShares(rt->reta, n);
    addArray(d, "worker_cpu", n, [&](unsigned i) { return c.workerCpus[i]; });
    addArray(d, "worker_reta_entries", n, [&](unsigned i) { return shares[i]; });
    addArray(d, "worker_dispatched", n, [&](unsigned i) { return get(rt->rx.dispatched[i]); });
    addArray(d, "worker_ring_full", n, [&](unsigned i) { return get(rt->rx.ringFull[i]); });
    addArray(d, "worker_ring_count", n, [&](unsigned i) { return rte_ring_count(rt->rings[i]); });
    addArray(d, "worker_to_tap_packets", n, [&](unsigned i) { return get(rt->w[i].toTapPackets); });
    addArray(d, "worker_to_tap_bytes", n, [&](unsigned i) { return get(rt->w[i].toTapBytes); });
    addArray(d, "worker_to_tap_dropped", n, [&](unsigned i) { return get(rt->w[i].toTapDropped); });
    addArray(d, "worker_from_tap_packets", n, [&](unsigned i) { return get(rt->w[i].fromTapPackets); });
    addArray(d, "worker_from_tap_bytes", n, [&](unsigned i) { return get(rt->w[i].fromTapBytes); });
    addArray(d, "worker_to_nic", n, [&](unsigned i) { return get(rt->w[i].toNic); });
    addArray(d, "worker_to_nic_dropped", n, [&](unsigned i) { return get(rt->w[i].toNicDropped); });
    addArray(d, "worker_checksums_fixed", n, [&](unsigned i) { return get(rt->w[i].checksumsFixed); });
    addArray(d, "worker_busy_cycles", n, [&](unsigned i) { return get(rt->w[i].busyCycles); });
    addPortStats(d, "nic_port_", rt->nicPort);
    addPortStats(d, "tap_port_", rt->tapPort);
    return 0;
}

// ---- setup ----

std::string lcoreMap(const DpConfig& c) {
    std::string s = "0@" + std::to_string(*c.rxCpu);
    for (size_t i = 0; i < c.workerCpus.size(); ++i) {
        // Appended piece by piece: `"," + std::to_string(...)` trips GCC 12's -Wrestrict false
        // positive at -O3 (GCC bug 105329).
        s += ',';
        s += std::to_string(i + 1);
        s += '@';
        s += std::to_string(c.workerCpus[i]);
    }
    return s;
}

Result<uint16_t> portByName(const std::string& name) {
    uint16_t id = 0;
    if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0)
        return fail(ENODEV, "find port", name, "no such DPDK port (check the device string and the EAL output above)");
    return id;
}

// The flow hash's source on the NIC port: the port's own RSS hash with the symmetric key, where
// the PMD offers one (on the one RX queue the hash is still computed and handed over in the mbuf),
// else the RX core's software hash, the same function. `why` says which and why.
struct HashChoice {
    bool nic = false;
    std::string why;
};

constexpr uint64_t kRssTypes = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP |
                               RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP | RTE_ETH_RSS_NONFRAG_IPV6_UDP;

HashChoice rssFor(const rte_eth_dev_info& info, rte_eth_conf& conf, std::vector<uint8_t>& key) {
    if ((info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_RSS_HASH) == 0) return {false, "the port gives no RSS hash"};
    if ((info.flow_type_rss_offloads & kRssTypes) == 0) return {false, "the port hashes no IP flows"};
    const size_t keyLen = info.hash_key_size ? info.hash_key_size : sizeof(kSymmetricRssKey);
    if (keyLen % 2 != 0) return {false, "the port's RSS key size is odd: no symmetric key"};
    key.resize(keyLen);
    for (size_t i = 0; i < keyLen; ++i) key[i] = kSymmetricRssKey[i % 2];
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_RSS_HASH;
    conf.rx_adv_conf.rss_conf.rss_key = key.data();
    conf.rx_adv_conf.rss_conf.rss_key_len = static_cast<uint8_t>(keyLen);
    conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads & kRssTypes;
    return {true, "the port's RSS hash, symmetric key"};
}

// hash: for the NIC port, asks for the port's RSS hash and says what it got; null for the TAP.
Result<void> setupPort(uint16_t port, const std::string& what, uint16_t queues, uint16_t desc, rte_mempool* pool,
                       HashChoice* hash = nullptr) {
    rte_eth_dev_info info{};
    if (int e = rte_eth_dev_info_get(port, &info); e != 0) return fail(-e, "rte_eth_dev_info_get", what);
    if (info.max_rx_queues < queues || info.max_tx_queues < queues)
        return fail(EINVAL, "configure", what,
                    "needs " + std::to_string(queues) + " RX and TX queues, the port has " +
                        std::to_string(info.max_rx_queues) + "/" + std::to_string(info.max_tx_queues));
    rte_eth_conf conf{};
    std::vector<uint8_t> key;
    if (hash) *hash = rssFor(info, conf, key);
    int e = rte_eth_dev_configure(port, queues, queues, &conf);
    if (e != 0 && hash && hash->nic) {
        // A PMD that lists RSS but refuses it with one queue: the software hash does the same.
        *hash = {false, std::string("the port refused RSS: ") + rte_strerror(-e)};
        conf = rte_eth_conf{};
        e = rte_eth_dev_configure(port, queues, queues, &conf);
    }
    if (e != 0) return fail(-e, "rte_eth_dev_configure", what);
    uint16_t rxd = desc, txd = desc;
    if (int e = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd); e != 0) return fail(-e, "adjust descriptors", what);
    const int socket = rte_eth_dev_socket_id(port);
    const unsigned sock = socket < 0 ? SOCKET_ID_ANY : static_cast<unsigned>(socket);
    for (uint16_t q = 0; q < queues; ++q) {
        if (int e = rte_eth_rx_queue_setup(port, q, rxd, sock, nullptr, pool); e != 0)
            return fail(-e, "rte_eth_rx_queue_setup", what + " queue " + std::to_string(q));
        if (int e = rte_eth_tx_queue_setup(port, q, txd, sock, nullptr); e != 0)
            return fail(-e, "rte_eth_tx_queue_setup", what + " queue " + std::to_string(q));
    }
    return {};
}

// Owns everything EAL hands out, so that any early return still closes ports and cleans up.
struct Eal {
    bool up = false;
    std::vector<uint16_t> started, opened;
    std::vector<rte_ring*> rings;
    rte_mempool* pool = nullptr;
    int nicPromiscRestore = -1;  // port to turn promiscuous off again on exit
    ~Eal() {
        {
            std::lock_guard lock(gRtMutex);
            gRt = nullptr;
        }
        for (auto p : started) rte_eth_dev_stop(p);
        if (nicPromiscRestore >= 0) rte_eth_promiscuous_disable(static_cast<uint16_t>(nicPromiscRestore));
        for (auto p : opened) rte_eth_dev_close(p);
        for (auto* r : rings) rte_ring_free(r);
        if (pool) rte_mempool_free(pool);
        if (up) rte_eal_cleanup();
    }
};

}  // namespace

// Kernel-side checks before EAL touches anything: the MTU the ports get.
Result<unsigned> checkKernelSide(const DpConfig& c) {
    unsigned mtu = c.mtu;
    if (auto ifname = kernelInterfaceOf(c.nic)) {
        auto k = checkKernelPort(*ifname);
        if (!k) return failWith(k.error().withContext("NIC port " + portNameOf(c.nic)));
        if (mtu == 0) mtu = k->mtu;
        if (mtu > 1500 && c.nic.find("framesz=") == std::string::npos)
            return fail(EINVAL, "check", *ifname,
                        "MTU " + std::to_string(mtu) + " is larger than af_packet's default 2048-byte frames: add framesz= to the device string");
    }
    return mtu == 0 ? 1500u : mtu;
}

Result<void> initEal(const DpConfig& c, const ExceptionPath& exception, Eal& eal) {
    std::vector<std::string> args = {"rxtune-dp", "--file-prefix=" + c.filePrefix, "--lcores=" + lcoreMap(c)};
    if (isVdev(c.nic)) {
        args.push_back("--no-pci");
        args.push_back("--vdev=" + c.nic);
    } else {
        args.push_back("--allow=" + c.nic);
    }
    args.push_back("--vdev=" + exception.vdev);
    args.insert(args.end(), c.eal.begin(), c.eal.end());
    std::string shown;
    for (const auto& a : args) shown += (shown.empty() ? "" : " ") + a;
    log(SD_INFO, "EAL: " + shown);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0)
        return fail(rte_errno, "rte_eal_init", shown, rte_strerror(rte_errno));
    eal.up = true;
    return {};
}

// The workers' shares, the burst, the exception path's words: what the loops read.
Result<void> configureRuntime(Runtime& rt, const DpConfig& c, const PrefetchChoice& prefetch, const ExceptionPath& exception) {
    rt.cfg = &c;
    rt.prefetch = prefetch;
    log(SD_INFO, std::string("next mbufs prefetched for ownership: ") + (prefetch.on ? "on" : "off") + " (" + prefetch.why + ")");
    rt.exceptionKind = exception.kind;
    rt.exceptionWhy = exception.why;
    rt.workers = static_cast<unsigned>(c.workerCpus.size());
    rt.burst = static_cast<uint16_t>(c.burst);
    auto reta = buildReta(c.weights, c.retaSize);
    if (!reta) return failWith(reta.error());
    rt.reta = std::move(*reta);
    rt.retaMask = static_cast<uint32_t>(rt.reta.size() - 1);
    auto nic = portByName(portNameOf(c.nic));
    if (!nic) return failWith(nic.error());
    auto tap = portByName(exception.port);
    if (!tap) return failWith(tap.error());
    rt.nicPort = *nic;
    rt.tapPort = *tap;
    return {};
}

// The mbuf pool, both ports configured (the NIC one queue, the TAP one per worker), the rings
// between the cores.
Result<void> setupPortsAndRings(Runtime& rt, Eal& eal, const DpConfig& c, unsigned mtu, const ExceptionPath& exception) {
    eal.opened = {rt.nicPort, rt.tapPort};
    const unsigned n = rt.workers;
    unsigned mbufs = c.mbufs;
    if (mbufs == 0) {
        mbufs = 2u * kNicDesc + 2u * kTapDesc * n + c.ringSize * (n + 1) + 256u * (n + 1) + 2u * kMaxBurst * (n + 1);
        mbufs = std::max(mbufs, 8191u);
    }
    const uint16_t dataRoom = static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + std::max(2048u, mtu + 14 + 8 + 4));
    eal.pool = rte_pktmbuf_pool_create("rxdp_mbufs", mbufs, 256, 0, dataRoom, static_cast<int>(rte_socket_id()));
    if (!eal.pool) return fail(rte_errno, "rte_pktmbuf_pool_create", std::to_string(mbufs) + " mbufs", rte_strerror(rte_errno));
    rt.pool = eal.pool;

    HashChoice hash;
    if (auto ok = setupPort(rt.nicPort, "NIC " + portNameOf(c.nic), 1, kNicDesc, eal.pool, &hash); !ok) return failWith(ok.error());
    // fix_checksums needs the headers parsed on the RX core all the same.
    rt.nicHash = hash.nic && !c.fixChecksums;
    log(SD_INFO, std::string("flow hash: ") + (hash.nic ? "NIC" : "software") + " (" + hash.why + ")" +
                     (hash.nic && c.fixChecksums ? "; parsed on the RX core all the same, fix_checksums needs the headers" : ""));
    if (auto ok = setupPort(rt.tapPort, "TAP " + c.tapName, static_cast<uint16_t>(n), kTapDesc, eal.pool); !ok)
        return failWith(ok.error());
    if (int e = rte_eth_dev_set_mtu(rt.tapPort, static_cast<uint16_t>(mtu)); e != 0) {
        if (exception.kind == "tap" || e != -ENOTSUP) return fail(-e, "set MTU", c.tapName, std::to_string(mtu));
        log(SD_INFO, "the " + exception.kind + " port sets no MTU: the kernel side keeps its own");
    }

    for (unsigned i = 0; i < n; ++i) {
        const std::string name = "rxdp_w" + std::to_string(i);
        rt.rings[i] = rte_ring_create(name.c_str(), c.ringSize, static_cast<int>(rte_socket_id()), RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (!rt.rings[i]) return fail(rte_errno, "rte_ring_create", name, rte_strerror(rte_errno));
        eal.rings.push_back(rt.rings[i]);
    }
    if (c.txMode == TxMode::kRing) {
        rt.txRing = rte_ring_create("rxdp_tx", c.ringSize, static_cast<int>(rte_socket_id()), RING_F_SC_DEQ);
        if (!rt.txRing) return fail(rte_errno, "rte_ring_create", "rxdp_tx", rte_strerror(rte_errno));
        eal.rings.push_back(rt.txRing);
    }
    return {};
}

// Ports started; the NIC hands over frames for the TAP's MAC (promiscuous unless the TAP took the
// NIC's MAC); the TAP's addresses.
Result<void> startPorts(Runtime& rt, Eal& eal, const DpConfig& c) {
    for (uint16_t port : {rt.nicPort, rt.tapPort}) {
        if (int e = rte_eth_dev_start(port); e != 0) return fail(-e, "rte_eth_dev_start", std::to_string(port));
        eal.started.push_back(port);
    }
    rte_ether_addr nicMac{};
    rte_eth_macaddr_get(rt.nicPort, &nicMac);
    auto tapMac = parseMac(c.tapMac);
    if (!tapMac) return failWith(tapMac.error());
    if (!std::equal(tapMac->begin(), tapMac->end(), nicMac.addr_bytes) && rte_eth_promiscuous_get(rt.nicPort) == 0) {
        if (rte_eth_promiscuous_enable(rt.nicPort) == 0) eal.nicPromiscRestore = rt.nicPort;
        else log(SD_WARNING, "could not make the NIC port promiscuous: frames for the TAP's MAC may not arrive");
    }
    if (auto ok = addAddresses(c.tapName, c.tapAddresses); !ok) return failWith(ok.error().withContext("TAP addresses"));
    return {};
}

// Telemetry and signals, then one worker per lcore after the RX core's.
Result<void> launchWorkers(Runtime& rt) {
    {
        std::lock_guard lock(gRtMutex);
        gRt = &rt;
    }
    rte_telemetry_register_cmd("/rxtune_dp/stats", telemetryStats,
                               "rxtune-dp counters: RX core, per worker (arrays by TAP queue), ports. No parameters");
    struct sigaction sa{};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    rt.startTsc = rte_rdtsc();
    for (unsigned i = 0; i < rt.workers; ++i) {
        rt.args[i] = WorkerArg{&rt, i};
        if (int e = rte_eal_remote_launch(workerMain, &rt.args[i], i + 1); e != 0) {
            gStop.store(true);
            rt.draining.store(true, std::memory_order_release);
            rte_eal_mp_wait_lcore();
            return fail(-e, "rte_eal_remote_launch", "worker " + std::to_string(i));
        }
    }
    return {};
}

void logRunning(const Runtime& rt, const DpConfig& c, unsigned mtu) {
    std::ostringstream shares;
    for (auto s : retaShares(rt.reta, rt.workers)) shares << (shares.tellp() > 0 ? "," : "") << s;
    log(SD_NOTICE, "running: NIC " + portNameOf(c.nic) + " RX on CPU " + std::to_string(*c.rxCpu) + ", " +
                       std::to_string(rt.workers) + " workers (redirection table " + shares.str() + " of " +
                       std::to_string(rt.reta.size()) + "), TAP " + c.tapName + " " + c.tapMac + ", MTU " +
                       std::to_string(mtu) + ", replies to the NIC " +
                       (c.txMode == TxMode::kRing ? "through the RX core's ring (tx_mode ring)" : "under a spinlock (tx_mode lock)"));
}

// After the RX loop returned (stage 1: the NIC is no longer polled): the workers empty their
// rings (2), the replies they handed on go out (3), the ports stop and close (4).
void drainAndClose(Runtime& rt, Eal& eal) {
    log(SD_NOTICE, "stopping: RX stopped, draining workers");
    rt.draining.store(true, std::memory_order_release);
    while (rt.workersDone.load(std::memory_order_acquire) < rt.workers)
        if (rt.txRing && drainTxRing(rt) == 0) rte_pause();
    rte_eal_mp_wait_lcore();
    if (rt.txRing)
        while (drainTxRing(rt) > 0) {}
    {
        std::lock_guard lock(gRtMutex);
        gRt = nullptr;
    }
    for (auto p : eal.started) rte_eth_dev_stop(p);
    eal.started.clear();
    if (eal.nicPromiscRestore >= 0) rte_eth_promiscuous_disable(rt.nicPort);
    eal.nicPromiscRestore = -1;
    for (auto p : eal.opened) rte_eth_dev_close(p);
    eal.opened.clear();
}

// The closing counters on stdout; 1 where they do not add up or mbufs were not returned.
int reportCounters(Runtime& rt, const Eal& eal) {
    uint64_t dispatched = 0, ringFull = 0, toTap = 0, toTapDropped = 0, fromTap = 0, toNicCount = 0, toNicDropped = 0;
    bool workersBalance = true;
    std::ostringstream per;
    for (unsigned i = 0; i < rt.workers; ++i) {
        const uint64_t d = get(rt.rx.dispatched[i]), t = get(rt.w[i].toTapPackets), td = get(rt.w[i].toTapDropped);
        dispatched += d;
        ringFull += get(rt.rx.ringFull[i]);
        toTap += t;
        toTapDropped += td;
        fromTap += get(rt.w[i].fromTapPackets);
        toNicCount += get(rt.w[i].toNic);
        toNicDropped += get(rt.w[i].toNicDropped);
        workersBalance = workersBalance && d == t + td;
        per << " worker" << i << "=" << t;
    }
    const uint64_t received = get(rt.rx.packets);
    const unsigned inUse = rte_mempool_in_use_count(eal.pool);
    std::cout << "rxtune-dp: stopped: rx_packets=" << received << " dispatched=" << dispatched << " ring_full=" << ringFull
              << " non_ip=" << get(rt.rx.nonIp) << " to_tap=" << toTap << " to_tap_dropped=" << toTapDropped
              << " from_tap=" << fromTap << " to_nic=" << toNicCount << " to_nic_dropped=" << toNicDropped
              << " nic_tx=" << get(rt.rx.nicTxPackets) << " nic_tx_dropped=" << get(rt.rx.nicTxDropped)
              << per.str() << " mbufs_in_use=" << inUse << std::endl;
    if (received != dispatched + ringFull || !workersBalance) {
        log(SD_ERR, "counters do not add up (received != dispatched + ring_full, or a worker lost packets)");
        return 1;
    }
    if (inUse != 0) {
        log(SD_ERR, std::to_string(inUse) + " mbufs were not returned to the pool after the ports closed");
        return 1;
    }
    return 0;
}

Result<int> runDatapath(const DpConfig& c, const PrefetchChoice& prefetch) {
    auto mtu = checkKernelSide(c);
    if (!mtu) return failWith(mtu.error());
    auto exception = chooseExceptionPath(c, [&]() -> Result<void> {
        if (auto pmd = probeVirtioPmd(); !pmd) return pmd;
        return probeVhostNet(c.vhostNet);
    });
    if (!exception) return failWith(exception.error());
    log(SD_NOTICE, "exception path: " + exception->kind + " (" + exception->why + "), " + std::to_string(c.workerCpus.size()) + " queues");

    Eal eal;  // undoes what was set up, in reverse, on every return
    Runtime rt;
    for (auto step : std::initializer_list<std::function<Result<void>()>>{
             [&] { return initEal(c, *exception, eal); },
             [&] { return configureRuntime(rt, c, prefetch, *exception); },
             [&] { return setupPortsAndRings(rt, eal, c, *mtu, *exception); },
             [&] { return startPorts(rt, eal, c); },
             [&] { return launchWorkers(rt); },
         })
        if (auto ok = step(); !ok) return failWith(ok.error());
    logRunning(rt, c, *mtu);
    sd_notify(0, "READY=1");

    rxLoop(rt);  // returns on SIGINT/SIGTERM

    sd_notify(0, "STOPPING=1");
    drainAndClose(rt, eal);
    return reportCounters(rt, eal);
}

}  // namespace rxtune::dp
