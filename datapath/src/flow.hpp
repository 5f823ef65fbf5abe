// Flow hashing for the RX core: a 5-tuple from a raw Ethernet frame and a symmetric Toeplitz hash
// over it. Pure (no EAL, no mbufs): the RX loop and the unit tests call the same code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <rte_byteorder.h>
#include <rte_thash.h>

namespace rxtune::dp {

// 0x6d5a repeated: with a key whose 16-bit halves are equal, swapping source and destination
// (addresses and ports) leaves the Toeplitz hash unchanged, so both directions of a flow land on
// the same worker. 40 bytes: enough for the IPv6 5-tuple (36 bytes) plus the 4 the hash reads ahead.
alignas(4) inline constexpr uint8_t kSymmetricRssKey[40] = {
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
};

enum class L3 : uint8_t { kNone, kIpv4, kIpv6 };

// Host byte order words, laid out as rte_softrss wants them: addresses, then sport << 16 | dport.
struct FlowTuple {
    L3 l3 = L3::kNone;
    bool hasPorts = false;    // false for fragments and for protocols without ports
    uint8_t proto = 0;        // IPPROTO_* of the L4 header (or the fragment's)
    uint16_t l3Offset = 0;    // where the IP header starts in the frame
    uint16_t l4Offset = 0;    // where the L4 header starts (when hasPorts)
    uint32_t words[9];        // v4: src, dst, ports; v6: src[4], dst[4], ports (the first nwords set)
    uint32_t nwords = 0;
};

namespace detail {
inline uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t be32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
           static_cast<uint32_t>(p[2]) << 8 | p[3];
}
inline bool portsProto(uint8_t p) { return p == 6 || p == 17 || p == 132 || p == 136; }  // TCP UDP SCTP UDP-Lite
}  // namespace detail

// Parses Ethernet, up to two VLAN tags, IPv4 or IPv6 (no extension headers but fragments), and
// TCP/UDP/SCTP ports. Returns false for anything that is not IP (ARP, LLDP, runts): such frames
// have no flow and go to worker 0. Never reads past len. Sets only what the frame has (the
// first nwords words; offsets and proto where there is an IP header): the RX core's tuple is not
// cleared per packet.
inline bool parseFlow(const uint8_t* f, size_t len, FlowTuple& t) {
    using namespace detail;
    t.l3 = L3::kNone;
    t.hasPorts = false;
    t.nwords = 0;
    size_t off = 12;
    if (len < off + 2) return false;
    uint16_t type = be16(f + off);
    off += 2;
    for (int tags = 0; (type == 0x8100 || type == 0x88a8) && tags < 2; ++tags) {
        if (len < off + 4) return false;
        type = be16(f + off + 2);
        off += 4;
    }
    if (type == 0x0800) {
        if (len < off + 20 || (f[off] >> 4) != 4) return false;
        const size_t ihl = static_cast<size_t>(f[off] & 0x0f) * 4;
        if (ihl < 20 || len < off + ihl) return false;
        t.l3 = L3::kIpv4;
        t.l3Offset = static_cast<uint16_t>(off);
        t.proto = f[off + 9];
        t.words[0] = be32(f + off + 12);
        t.words[1] = be32(f + off + 16);
        t.nwords = 2;
        const bool fragment = (be16(f + off + 6) & 0x3fff) != 0;  // MF or an offset
        const size_t l4 = off + ihl;
        if (!fragment && portsProto(t.proto) && len >= l4 + 4) {
            t.hasPorts = true;
            t.l4Offset = static_cast<uint16_t>(l4);
            t.words[2] = be32(f + l4);  // sport << 16 | dport
            t.nwords = 3;
        }
        return true;
    }
    if (type == 0x86dd) {
        if (len < off + 40 || (f[off] >> 4) != 6) return false;
        t.l3 = L3::kIpv6;
        t.l3Offset = static_cast<uint16_t>(off);
        t.proto = f[off + 6];
        for (int i = 0; i < 4; ++i) {
            t.words[i] = be32(f + off + 8 + 4 * i);
            t.words[4 + i] = be32(f + off + 24 + 4 * i);
        }
        t.nwords = 8;
        const size_t l4 = off + 40;
        if (portsProto(t.proto) && len >= l4 + 4) {
            t.hasPorts = true;
            t.l4Offset = static_cast<uint16_t>(l4);
            t.words[8] = be32(f + l4);
            t.nwords = 9;
        }
        return true;
    }
    return false;
}

// The Toeplitz hash with the symmetric key, exactly (rte_softrss(words, n, kSymmetricRssKey)), in
// two table lookups. The hash XORs, for every set input bit j, the 32 key bits starting at bit j.
// The key repeats every 16 bits, so that window depends on j mod 16 only: the hash of the input is
// the hash of the input folded to 16 bits (every 16-bit half of every word XORed together), and
// the hash of 16 bits is one lookup per byte. The fold is also why the hash is symmetric: swapping
// addresses or ports reorders the halves, and XOR does not care. 2 KiB of table, a few XORs.
class SymmetricToeplitz {
public:
    constexpr SymmetricToeplitz() {
        auto window = [](unsigned bit) {  // the 32 key bits starting at `bit` (< 16), MSB first
            uint64_t w = 0;
            for (unsigned b = 0; b < 8; ++b) w = (w << 8) | kSymmetricRssKey[bit / 8 + b];
            return static_cast<uint32_t>(w >> (32 - bit % 8));
        };
        for (unsigned v = 0; v < 256; ++v) {
            uint32_t hi = 0, lo = 0;
            for (unsigned b = 0; b < 8; ++b)
                if (v & (0x80u >> b)) {
                    hi ^= window(b);
                    lo ^= window(8 + b);
                }
            hi_[v] = hi;
            lo_[v] = lo;
        }
    }
    uint32_t operator()(const uint32_t* words, uint32_t nwords) const {
        uint32_t x = 0;
        for (uint32_t w = 0; w < nwords; ++w) x ^= words[w];
        const uint32_t f = (x >> 16) ^ (x & 0xffff);
        return hi_[f >> 8] ^ lo_[f & 0xff];
    }

private:
    uint32_t hi_[256] = {}, lo_[256] = {};
};

// The key must repeat every 16 bits for the fold to be exact.
consteval bool keyRepeatsEvery16Bits() {
    for (unsigned i = 2; i < sizeof(kSymmetricRssKey); ++i)
        if (kSymmetricRssKey[i] != kSymmetricRssKey[i % 2]) return false;
    return true;
}
static_assert(keyRepeatsEvery16Bits());

inline constexpr SymmetricToeplitz kSymmetricToeplitz{};

inline uint32_t flowHash(const FlowTuple& t) { return kSymmetricToeplitz(t.words, t.nwords); }

}  // namespace rxtune::dp
