#include "web/web_server.hpp"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <cstdarg>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>

namespace rxtune {

namespace {

using Clock = std::chrono::steady_clock;

// What each descriptor in the server's epoll set is.
constexpr std::uint64_t kTagWake = 1, kTagListener = 2, kTagGeneration = 3, kTagGated = 4;  // gated: fd << 8 | tag


class Loop;

}  // namespace

// (A unity build, as make test's ASan/UBSan build is, includes this file into another: GCC then
// takes the anonymous namespace's Loop for a header's and warns that Generation, whose only
// definition is here, has a field of its type.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsubobject-linkage"
// One libmicrohttpd daemon and the web configuration it serves; retired when a newer one came and
// its last connection closed.
struct Generation {
    std::shared_ptr<const WebEndpoint> endpoint;
    MHD_Daemon* mhd = nullptr;
    int epollFd = -1;        // libmicrohttpd's own epoll set, watched by ours
    std::size_t live = 0;    // connections it serves
    Loop* loop = nullptr;    // set when the thread takes it
    const WebServer::Render* render = nullptr;
    std::string log;         // libmicrohttpd's last words, for a refused start
    ~Generation() {
        if (mhd) MHD_stop_daemon(mhd);
    }
};
#pragma GCC diagnostic pop

namespace {

// The generation whose libmicrohttpd call is running (all of them run on the server's thread):
// GnuTLS's verify callback has only the session.
thread_local Generation* tRunning = nullptr;

int fdOf(MHD_Connection* c) {
    const MHD_ConnectionInfo* i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return i ? i->connect_fd : -1;
}

gnutls_session_t sessionOf(MHD_Connection* c) {
    const MHD_ConnectionInfo* i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return i ? static_cast<gnutls_session_t>(i->tls_session) : nullptr;
}

// The client's certificate's subject alternative names as Go prints them: DNS names, e-mail
// addresses, IP addresses, URIs.
std::vector<std::string> peerSans(gnutls_session_t s) {
    std::vector<std::string> out;
    unsigned n = 0;
    const gnutls_datum_t* certs = gnutls_certificate_get_peers(s, &n);
    if (!certs || n == 0) return out;
    gnutls_x509_crt_t crt = nullptr;
    gnutls_x509_crt_init(&crt);
    if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0) {
        for (unsigned i = 0;; ++i) {
            std::array<char, 1024> buf{};
            std::size_t size = buf.size();
            const int type = gnutls_x509_crt_get_subject_alt_name(crt, i, buf.data(), &size, nullptr);
            if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) break;
            if (type < 0) continue;
            if (type == GNUTLS_SAN_IPADDRESS) {
                char text[INET6_ADDRSTRLEN] = {};
                if ((size == 4 && inet_ntop(AF_INET, buf.data(), text, sizeof text)) ||
                    (size == 16 && inet_ntop(AF_INET6, buf.data(), text, sizeof text)))
                    out.emplace_back(text);
            } else if (type == GNUTLS_SAN_DNSNAME || type == GNUTLS_SAN_RFC822NAME || type == GNUTLS_SAN_URI) {
                out.emplace_back(buf.data(), size);
            }
        }
    }
    gnutls_x509_crt_deinit(crt);
    return out;
}

// In the handshake, after the client's certificate came: verified against client_ca_file where
// client_auth_type says so, and one of its SANs in client_allowed_sans where that is given.
int verifyPeer(gnutls_session_t s) {
    const Generation* g = tRunning;
    if (!g || !g->endpoint->tls) return -1;
    const WebTls& tls = *g->endpoint->tls;
    unsigned n = 0;
    if (!gnutls_certificate_get_peers(s, &n) || n == 0)  // as the toolkit: no certificate has no allowed SAN
        return tls.clientAuth == ClientAuth::kRequireAnyClientCert || tls.clientAuth == ClientAuth::kRequireAndVerifyClientCert ||
                       !tls.clientAllowedSans.empty()
                   ? -1
                   : 0;
    if (tls.clientAuth == ClientAuth::kVerifyClientCertIfGiven || tls.clientAuth == ClientAuth::kRequireAndVerifyClientCert) {
        // As Go's crypto/tls: a certificate (or CA) that names key purposes must name client
        // authentication; a server-only certificate of the same CA (another service's) is refused.
        gnutls_typed_vdata_st purpose{GNUTLS_DT_KEY_PURPOSE_OID, reinterpret_cast<unsigned char*>(const_cast<char*>(GNUTLS_KP_TLS_WWW_CLIENT)), 0};
        unsigned status = 0;
        if (gnutls_certificate_verify_peers(s, &purpose, 1, &status) < 0 || status != 0) return -1;
    }
    if (tls.clientAllowedSans.empty()) return 0;
    for (const auto& san : peerSans(s))
        if (std::find(tls.clientAllowedSans.begin(), tls.clientAllowedSans.end(), san) != tls.clientAllowedSans.end()) return 0;
    return -1;
}

// Where a connection is: at the gate (nothing or too little sent yet), at libmicrohttpd before its
// first answer, or kept alive after one. Each stage is a list in deadline order, and the order in
// which connections are closed to make room.
enum Stage { kGated, kFresh, kKept };

// Each connection from accept to close: which generation serves it, its stage and until when.
struct Tracked {
    Generation* gen = nullptr;  // null while gated: not libmicrohttpd's yet
    Stage stage = kGated;
    bool closing = false;       // shut down by us, libmicrohttpd has yet to close it
    Clock::time_point accepted, deadline;
    std::string client;         // the auth budget's key for its address (clientKey)
    std::list<int>::iterator pos;
};

double seconds(Clock::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// A gated connection's first bytes, read without taking them.
enum class FirstBytes { kWait, kReady, kNotTls };
FirstBytes firstBytes(int fd, bool tls) {
    unsigned char h[5];
    const long n = peekBytes(fd, h, sizeof h);
    if (n <= 0) return FirstBytes::kWait;
    if (!tls) return FirstBytes::kReady;
    if (h[0] != 0x16) return FirstBytes::kNotTls;  // not a TLS handshake record: plain HTTP, or noise
    if (n < 5) return FirstBytes::kWait;
    const int avail = pendingBytes(fd);
    if (avail < 0) return FirstBytes::kWait;
    const int record = 5 + (h[3] << 8 | h[4]);
    return avail >= record ? FirstBytes::kReady : FirstBytes::kWait;
}

// libmicrohttpd 0.9.75 keeps a TLS connection whose handshake waits for more bytes among its
// ready ones: MHD_get_timeout says 0 and every run retries the read. After this many runs in a row
// with nothing new on any descriptor, the next wait is at least kSpinFloorMs (an answer's own
// steps take a run or two each).
constexpr int kSpinRuns = 6;
// Connections taken from the listen queue before libmicrohttpd runs again (the rest wait in it).
constexpr int kAcceptRound = 1024;
constexpr long long kSpinFloorMs = 10;

class Loop {
public:
    Loop(Poller& ep, const WebServerOptions& opts) : ep_(ep), opts_(opts), auth_(opts.auth) {}

    // A new web configuration: it takes new connections; an idle kept-alive connection made under
    // other TLS rules goes now (its next request would be refused).
    void adopt(std::unique_ptr<Generation> g) {
        g->loop = this;
        ep_.watch(g->epollFd, kTagGeneration);
        gens_.push_back(std::move(g));
        std::vector<int> stale;
        for (const int fd : lists_[kKept])
            if (!sameTls(*conns_.at(fd).gen->endpoint, *current()->endpoint)) stale.push_back(fd);
        for (const int fd : stale) shut(fd);
    }
    Generation* current() const { return gens_.back().get(); }

    // Whether the answer now being made for `fd` is its last: the connection is maxAge old, or
    // was made under TLS rules no longer in force.
    bool lastAnswer(int fd) const {
        auto it = conns_.find(fd);
        if (it == conns_.end() || !it->second.gen) return true;
        return Clock::now() - it->second.accepted >= opts_.maxAge || !sameTls(*it->second.gen->endpoint, *current()->endpoint);
    }

    // Basic auth for a request on `fd` against `ep` (the configuration in force), counted, and
    // refusals remembered for the log.
    Authenticator::Outcome authenticate(MHD_Connection* c, int fd, const WebEndpoint& ep) {
        const char* header = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        auto creds = header ? parseBasicAuth(header) : std::nullopt;
        auto it = conns_.find(fd);
        const std::string client = it != conns_.end() ? it->second.client : "?";
        Authenticator::Outcome o{AuthResult::kNoCredentials};
        if (creds) {
            o = auth_.check(ep.users, ep.decoy, client, creds->first, creds->second, seconds(Clock::now()));
            std::fill(creds->second.begin(), creds->second.end(), '\0');
        }
        if (opts_.onAuth) opts_.onAuth(o.result);
        if (!granted(o.result)) {
            ++refused_[static_cast<std::size_t>(o.result)];
            if (refusedBy_.size() < opts_.auth.maxAddresses || refusedBy_.count(client)) ++refusedBy_[client];
        }
        return o;
    }

    // At most one line every kWarnSeconds about the refusals since the last one.
    void reportRefusals() {
        if (refusedBy_.empty() || !opts_.onRefusals) return;
        const double now = seconds(Clock::now());
        if (now - warnedAt_ < WebServerOptions::kWarnSeconds) return;
        std::string line = "scrape endpoint: basic auth refused ";
        bool first = true;
        for (AuthResult r : kAuthResults)
            if (const auto n = refused_[static_cast<std::size_t>(r)]) {
                line += (first ? "" : ", ") + std::to_string(n) + " " + toString(r);
                first = false;
            }
        const auto top = std::max_element(refusedBy_.begin(), refusedBy_.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
        line += warnedAt_ < 0 ? "" : " in the last " + std::to_string(static_cast<long long>(now - warnedAt_)) + " s";
        line += " from " + std::to_string(refusedBy_.size()) + (refusedBy_.size() == 1 ? " address" : " addresses") + ", the most from " +
                top->first + " (" + std::to_string(top->second) + ")";
        const bool throttled = refused_[static_cast<std::size_t>(AuthResult::kThrottled)] > 0;
        if (throttled) line += "; throttled: refused unchecked with 429, the address's share of the bcrypt budget spent";
        opts_.onRefusals(line, throttled);
        warnedAt_ = now;
        refused_ = {};
        refusedBy_.clear();
    }

    // New connections wait at the gate, in our epoll set, until their first bytes come (for TLS:
    // the whole first record, the ClientHello): one that connects and sends nothing, or dribbles,
    // costs libmicrohttpd and GnuTLS nothing.
    void acceptAll(int listener) {
        for (int round = 0; round < kAcceptRound; ++round) {
            PeerAddress peer;
            int error = 0;
            const int fd = acceptConnection(listener, peer, error);
            if (fd < 0) {
                // Out of descriptors: the oldest unfinished connection makes room.
                if ((error == EMFILE || error == ENFILE) && evictOne(true)) {
                    runAll();
                    continue;
                }
                return;  // EAGAIN, or nothing to free
            }
            const std::string client = clientKey(&peer.addr, peer.len);
            if (open_ >= opts_.maxConnections && !evictOne(auth_.trusted(client, seconds(Clock::now())))) {
                closeConnection(fd);  // only trusted addresses' connections are open: they stay, this one goes
                continue;
            }
            // An answer goes out as written: TLS records of a head and a body must not wait for
            // the client's delayed ACK (40 ms).
            setNoDelay(fd);
            Tracked& t = conns_[fd];
            t.accepted = Clock::now();
            t.client = client;
            place(fd, t, kGated, t.accepted + opts_.requestTimeout);
            ++open_;
            ep_.watch(fd, static_cast<std::uint64_t>(fd) << 8 | kTagGated, true);
            onGated(fd);  // bytes that came with the connection
        }
    }

    // More bytes (or the end) on a gated connection.
    void onGated(int fd) {
        auto it = conns_.find(fd);
        if (it == conns_.end() || it->second.gen) return;
        switch (firstBytes(fd, current()->endpoint->tls != nullptr)) {
            case FirstBytes::kReady:
                handOver(fd);
                return;
            case FirstBytes::kNotTls:
                shut(fd);  // refused: TLS only here
                return;
            case FirstBytes::kWait: {
                unsigned char c;
                if (peekBytes(fd, &c, 1) == 0) shut(fd);  // closed before a request
                return;
            }
        }
    }

    // libmicrohttpd's work for every generation; then the ones no longer needed go.
    void runAll() {
        for (auto& g : gens_) {
            tRunning = g.get();
            MHD_run(g->mhd);
        }
        tRunning = nullptr;
        for (auto it = gens_.begin(); it + 1 < gens_.end();) {
            if ((*it)->live == 0) {
                ep_.unwatch((*it)->epollFd);
                it = gens_.erase(it);
            } else {
                ++it;
            }
        }
    }

    // Whatever has not finished by its deadline goes.
    void expire() {
        const auto now = Clock::now();
        for (auto& list : lists_)
            while (!list.empty() && conns_.at(list.front()).deadline <= now) shut(list.front());
    }

    // Until the next deadline of ours or of libmicrohttpd's, or a second. `idleRuns`: how many
    // waits in a row ended with nothing new.
    int timeoutMs(int idleRuns) const {
        const bool idle = idleRuns >= kSpinRuns;
        long long ms = 1000;
        const auto now = Clock::now();
        for (const auto& list : lists_)
            if (!list.empty())
                ms = std::min<long long>(ms, std::chrono::duration_cast<std::chrono::milliseconds>(conns_.at(list.front()).deadline - now).count() + 1);
        for (const auto& g : gens_) {
            MHD_UNSIGNED_LONG_LONG t = 0;
            if (MHD_get_timeout(g->mhd, &t) == MHD_YES) ms = std::min<long long>(ms, idle ? std::max<long long>(static_cast<long long>(t), kSpinFloorMs) : static_cast<long long>(t));
        }
        return static_cast<int>(std::max<long long>(ms, 0));
    }

    // libmicrohttpd's notices.
    void finishedRequest(int fd) {
        auto it = conns_.find(fd);
        if (it == conns_.end() || it->second.closing) return;
        Tracked& t = it->second;
        lists_[t.stage].erase(t.pos);
        place(fd, t, kKept, std::min(Clock::now() + opts_.idleTimeout, t.accepted + opts_.maxAge));
    }
    void closed(int fd) { forget(fd); }

    // At the end: every generation stops (closing its connections) while the loop is still here
    // to hear of it; then the gated ones close.
    void stopAll() {
        while (!gens_.empty()) gens_.pop_back();
        for (auto& [fd, t] : conns_)
            if (!t.gen) closeConnection(fd);  // a handed-over one is libmicrohttpd's to close (it has)
        conns_.clear();
    }

private:
    // Into a stage's list, in deadline order (from the back: it is nearly always the last).
    void place(int fd, Tracked& t, Stage stage, Clock::time_point deadline) {
        std::list<int>& list = lists_[stage];
        auto at = list.end();
        while (at != list.begin() && conns_.at(*std::prev(at)).deadline > deadline) --at;
        t.stage = stage;
        t.deadline = deadline;
        t.pos = list.insert(at, fd);
    }
    // From the gate to the current generation (its web configuration).
    void handOver(int fd) {
        ep_.unwatch(fd);
        PeerAddress peer = peerOf(fd);
        Generation* g = current();
        Tracked& t = conns_.at(fd);
        lists_[kGated].erase(t.pos);
        place(fd, t, kFresh, t.deadline);
        t.gen = g;
        ++g->live;
        tRunning = g;
        // On failure libmicrohttpd has closed the socket, and told nobody.
        if (MHD_add_connection(g->mhd, fd, peer.get(), peer.len) != MHD_YES) forget(fd);
        tRunning = nullptr;
    }
    // Ends a connection: a gated one here and now; libmicrohttpd's sees the shutdown at its next
    // run and closes it.
    void shut(int fd) {
        Tracked& t = conns_.at(fd);
        if (t.closing) return;
        if (!t.gen) {
            forget(fd);
            closeConnection(fd);  // epoll forgets a closed descriptor
            return;
        }
        lists_[t.stage].erase(t.pos);
        t.closing = true;
        --open_;
        shutdownConnection(fd);
    }
    // Room for a new connection: the oldest that sent too little to be served goes first, then
    // the oldest being served, then the kept-alive one idle longest.
    // A gated connection whose first bytes came since its last event is handed over, not closed.
    // Connections from addresses that authenticated before (Prometheus's) go last, and only for a
    // newcomer from such an address: a flood of connections from elsewhere cannot push the
    // scraper's out.
    bool evictOne(bool forTrusted) {
        const double now = seconds(Clock::now());
        for (const bool spareTrusted : {true, false}) {
            if (!spareTrusted && !forTrusted) break;
            for (auto& list : lists_)
                for (auto it = list.begin(); it != list.end();) {
                    const int fd = *it++;  // handOver and shut take fd out of this list
                    if (spareTrusted && auth_.trusted(conns_.at(fd).client, now)) continue;
                    if (&list == &lists_[kGated] && firstBytes(fd, current()->endpoint->tls != nullptr) == FirstBytes::kReady) {
                        handOver(fd);
                        continue;
                    }
                    shut(fd);
                    return true;
                }
        }
        return false;
    }
    void forget(int fd) {
        auto it = conns_.find(fd);
        if (it == conns_.end()) return;
        Tracked& t = it->second;
        if (!t.closing) {
            lists_[t.stage].erase(t.pos);
            --open_;
        }
        if (t.gen) --t.gen->live;
        conns_.erase(it);
    }

    Poller& ep_;
    const WebServerOptions& opts_;
    std::vector<std::unique_ptr<Generation>> gens_;  // the last one takes new connections
    std::map<int, Tracked> conns_;
    std::array<std::list<int>, 3> lists_;  // by Stage, each in deadline order
    std::size_t open_ = 0;         // connections not being closed
    Authenticator auth_;           // outlives the generations: budgets and remembered passwords survive a reload
    std::array<std::size_t, std::size(kAuthResults)> refused_{};  // since the last warning
    std::map<std::string, std::size_t> refusedBy_;
    double warnedAt_ = -1;
};

// ---- libmicrohttpd's callbacks (cls: the Generation) ----

void onConnection(void* cls, MHD_Connection* c, void** socketContext, MHD_ConnectionNotificationCode code) {
    auto* g = static_cast<Generation*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const int fd = fdOf(c);
        *socketContext = reinterpret_cast<void*>(static_cast<std::intptr_t>(fd) + 1);
        // The TLS session exists already; what to ask of the client's certificate is ours to set.
        if (g->endpoint->tls) {
            if (gnutls_session_t s = sessionOf(c)) {
                const ClientAuth a = g->endpoint->tls->clientAuth;
                gnutls_certificate_server_set_request(
                    s, a == ClientAuth::kNoClientCert ? GNUTLS_CERT_IGNORE
                       : (a == ClientAuth::kRequireAnyClientCert || a == ClientAuth::kRequireAndVerifyClientCert) ? GNUTLS_CERT_REQUIRE
                                                                                                                   : GNUTLS_CERT_REQUEST);
                if (a != ClientAuth::kNoClientCert) gnutls_session_set_verify_function(s, verifyPeer);
            }
        }
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        const auto fd = static_cast<int>(reinterpret_cast<std::intptr_t>(*socketContext) - 1);
        if (g->loop && fd >= 0) g->loop->closed(fd);
    }
}

void onCompleted(void* cls, MHD_Connection* c, void**, MHD_RequestTerminationCode code) {
    auto* g = static_cast<Generation*>(cls);
    if (code == MHD_REQUEST_TERMINATED_COMPLETED_OK && g->loop) g->loop->finishedRequest(fdOf(c));
}

void onLog(void* cls, const char* fmt, va_list ap) {
    auto* g = static_cast<Generation*>(cls);
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    g->log = buf;
    while (!g->log.empty() && (g->log.back() == '\n' || g->log.back() == ' ')) g->log.pop_back();
}

struct Reply {
    bool close = false;          // Connection: close (libmicrohttpd closes after sending)
    bool askForPassword = false; // WWW-Authenticate
    double retryAfter = 0;       // seconds, for a 429
};

MHD_Result answer(MHD_Connection* c, const WebEndpoint& ep, unsigned status, const std::string& type, const std::string& body,
                  Reply how = {}) {
    MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type.c_str());
    for (const auto& [name, value] : ep.headers) MHD_add_response_header(r, name.c_str(), value.c_str());
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (how.askForPassword) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"rxtune\"");
    if (how.retryAfter > 0)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, std::to_string(static_cast<long long>(std::ceil(how.retryAfter))).c_str());
    if (how.close) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    const MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

MHD_Result onRequest(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                     std::size_t* uploadSize, void** requestContext) {
    const auto& g = *static_cast<Generation*>(cls);
    Loop& loop = *g.loop;
    // The first call brings the head, the last one comes when the request is whole: an answer
    // queued before that makes libmicrohttpd close the connection (no keep-alive) for fear of an
    // unread body. A body (none is expected) is taken and dropped.
    static int headSeen;
    if (*requestContext == nullptr) {
        *requestContext = &headSeen;
        return MHD_YES;
    }
    if (*uploadSize != 0) {
        *uploadSize = 0;
        return MHD_YES;
    }
    // Judged by the web configuration in force now, whichever one the connection began under; one
    // made under other TLS rules is closed unanswered (a client retries a request on a reused
    // connection that closed before answering, and handshakes again).
    const WebEndpoint& ep = *loop.current()->endpoint;
    if (!sameTls(*g.endpoint, ep)) return MHD_NO;
    const int fd = fdOf(c);
    const std::string path = url ? url : "";
    const std::string m = method ? method : "";
    constexpr const char* kText = "text/plain; charset=utf-8";
    if (!ep.users.empty()) {
        const auto o = loop.authenticate(c, fd, ep);
        if (o.result == AuthResult::kThrottled)
            return answer(c, ep, MHD_HTTP_TOO_MANY_REQUESTS, kText, "Too Many Requests: try again later\n",
                          {.close = true, .retryAfter = std::max(1.0, o.retryAfter)});
        if (!granted(o.result)) return answer(c, ep, MHD_HTTP_UNAUTHORIZED, kText, "Unauthorized\n", {.close = true, .askForPassword = true});
    }
    const Reply how{.close = loop.lastAnswer(fd)};
    if (m != MHD_HTTP_METHOD_GET && m != MHD_HTTP_METHOD_HEAD) return answer(c, ep, MHD_HTTP_METHOD_NOT_ALLOWED, kText, "GET only\n", how);
    if (path == "/metrics") return answer(c, ep, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", (*g.render)(), how);
    if (path == "/") return answer(c, ep, MHD_HTTP_OK, "text/html; charset=utf-8", "<a href=\"/metrics\">/metrics</a>\n", how);
    return answer(c, ep, MHD_HTTP_NOT_FOUND, kText, "not found\n", how);
}

}  // namespace

Result<std::unique_ptr<WebServer>> WebServer::start(const WebServerOptions& opts, std::shared_ptr<const WebEndpoint> endpoint,
                                                    Render render) {
    unsigned short port = 0;
    auto s = listenTcp(opts.listen, port);
    if (!s) return failWith(s.error());
    auto wake = Waker::create();
    if (!wake) return failWith(wake.error());
    auto ep = Poller::create();
    if (!ep) return failWith(ep.error());
    std::unique_ptr<WebServer> srv(new WebServer(std::move(*s), std::move(*wake), std::move(*ep), port, opts, std::move(render)));
    auto first = srv->generation(std::move(endpoint));
    if (!first) return failWith(first.error());
    srv->pending_.push_back(std::move(*first));
    srv->thread_ = std::thread([p = srv.get()] { p->loop(); });
    return srv;
}

WebServer::WebServer(UniqueFd listener, Waker wake, Poller poller, unsigned short port, WebServerOptions opts, Render render)
    : listener_(std::move(listener)), wake_(std::move(wake)), poller_(std::move(poller)), port_(port), opts_(std::move(opts)), render_(std::move(render)) {}

WebServer::~WebServer() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    wake_.wake();
    if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<Generation>> WebServer::generation(std::shared_ptr<const WebEndpoint> endpoint) {
    auto g = std::make_unique<Generation>();
    g->endpoint = std::move(endpoint);
    g->render = &render_;
    const WebTls* tls = g->endpoint->tls.get();
    unsigned flags = MHD_USE_NO_LISTEN_SOCKET | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0);
    // libmicrohttpd's own limits stay above ours: ours decide who goes. The connections it holds
    // are ours and those we shut since its last run: at most one accept round's (kAcceptRound).
    const auto limit = static_cast<unsigned>(opts_.maxConnections + kAcceptRound + 16);
    const auto idle = static_cast<unsigned>(std::chrono::duration_cast<std::chrono::seconds>(opts_.idleTimeout).count() + 1);
    std::vector<MHD_OptionItem> o = {
        {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&onLog), g.get()},
        {MHD_OPTION_CONNECTION_LIMIT, limit, nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT, idle, nullptr},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, nullptr},
        {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&onConnection), g.get()},
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&onCompleted), g.get()},
    };
    if (tls) {
        o.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(tls->keyPem.c_str())});
        o.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(tls->certPem.c_str())});
        o.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(tls->priorities.c_str())});
        if (!tls->clientCaPem.empty()) o.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(tls->clientCaPem.c_str())});
    }
    o.push_back({MHD_OPTION_END, 0, nullptr});
    g->mhd = MHD_start_daemon(flags, 0, nullptr, nullptr, &onRequest, g.get(), MHD_OPTION_ARRAY, o.data(), MHD_OPTION_END);
    const std::string what = g->endpoint->file.empty() ? "the scrape endpoint" : g->endpoint->file;
    if (!g->mhd) return fail(0, "libmicrohttpd", what, g->log.empty() ? "refused to start" : g->log);
    const MHD_DaemonInfo* info = MHD_get_daemon_info(g->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info) return fail(0, "libmicrohttpd", what, "no epoll descriptor");
    g->epollFd = info->epoll_fd;
    return g;
}

Result<void> WebServer::use(std::shared_ptr<const WebEndpoint> endpoint) {
    auto g = generation(std::move(endpoint));
    if (!g) return failWith(g.error());
    {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.push_back(std::move(*g));
    }
    wake_.wake();
    return {};
}

void WebServer::loop() {
    Loop conns(poller_, opts_);
    auto takePending = [&] {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& g : pending_) conns.adopt(std::move(g));
        pending_.clear();
        return stopping_;
    };
    takePending();
    poller_.watch(listener_.get(), kTagListener);
    poller_.watch(wake_.fd(), kTagWake);
    std::array<PollEvent, 64> events{};
    int idleRuns = 0;
    while (true) {
        const int n = poller_.wait(events, conns.timeoutMs(idleRuns));
        if (n < 0) break;
        idleRuns = n == 0 ? idleRuns + 1 : 0;
        bool accept = false;
        for (int i = 0; i < n; ++i) {
            const PollEvent& e = events[static_cast<std::size_t>(i)];
            // A generation's epoll set needs nothing but the runAll below.
            if (e.tag == kTagWake) {
                wake_.drain();
                if (takePending()) {
                    conns.stopAll();
                    return;
                }
            } else if (e.tag == kTagListener) {
                accept = true;
            } else if ((e.tag & 0xff) == kTagGated) {
                conns.onGated(static_cast<int>(e.tag >> 8));
            }
        }
        if (accept) conns.acceptAll(listener_.get());
        conns.expire();
        conns.runAll();
        conns.reportRefusals();
    }
    conns.stopAll();
}

}  // namespace rxtune
