// Integration-test support: run commands, own network namespaces and tap queues, clean up always.
#pragma once

#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <vector>

namespace rxtune::itest {

struct Run {
    int status = -1;  // exit code, or 128+signal
    std::string out, err;
};

inline Run run(const std::vector<std::string>& argv) {
    int outPipe[2], errPipe[2];
    if (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork");
    if (pid == 0) {
        dup2(outPipe[1], 1);
        dup2(errPipe[1], 2);
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        _exit(127);
    }
    close(outPipe[1]);
    close(errPipe[1]);
    Run r;
    pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
    int open = 2;
    char buf[65536];
    while (open > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open;
            } else {
                (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
            }
        }
    }
    int st = 0;
    waitpid(pid, &st, 0);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

inline std::string mustRun(const std::vector<std::string>& argv) {
    Run r = run(argv);
    if (r.status != 0) {
        std::string cmd;
        for (const auto& a : argv) cmd += a + " ";
        throw std::runtime_error("command failed (" + std::to_string(r.status) + "): " + cmd + ": " + r.err);
    }
    return r.out;
}

inline void requireRoot() {
    if (geteuid() != 0) throw std::runtime_error("integration tests need root (network namespaces, veth, tap)");
}

// A network namespace of the test's own, deleted on destruction (also when a REQUIRE throws).
class NetNs {
public:
    NetNs() {
        requireRoot();
        static std::atomic<int> counter{0};
        name_ = "rxt-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
        mustRun({"ip", "netns", "add", name_});
        mustRun({"ip", "-n", name_, "link", "set", "lo", "up"});
    }
    ~NetNs() { run({"ip", "netns", "del", name_}); }
    NetNs(const NetNs&) = delete;
    NetNs& operator=(const NetNs&) = delete;

    const std::string& name() const { return name_; }
    // ip -n <ns> <args...>
    std::string ip(std::vector<std::string> args) const {
        args.insert(args.begin(), {"ip", "-n", name_});
        return mustRun(args);
    }
    // Runs argv inside the namespace (ip netns exec also remounts /sys for it).
    Run exec(std::vector<std::string> argv) const {
        argv.insert(argv.begin(), {"ip", "netns", "exec", name_});
        return run(argv);
    }
    std::string sysfsRead(const std::string& rel) const { return mustRun({"ip", "netns", "exec", name_, "cat", "/sys/" + rel}); }
    void sysfsWrite(const std::string& rel, const std::string& value) const {
        mustRun({"ip", "netns", "exec", name_, "sh", "-c", "echo " + value + " > /sys/" + rel});
    }

private:
    std::string name_;
};

// This thread inside a test's namespace until the guard goes (sockets opened meanwhile stay
// there); the test process never stays in another namespace.
class InNetNs {
public:
    explicit InNetNs(const NetNs& ns) {
        self_ = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        const int target = open(("/var/run/netns/" + ns.name()).c_str(), O_RDONLY | O_CLOEXEC);
        const bool in = self_ >= 0 && target >= 0 && setns(target, CLONE_NEWNET) == 0;
        if (target >= 0) close(target);
        if (!in) {
            if (self_ >= 0) close(self_);
            throw std::runtime_error("setns into test netns " + ns.name());
        }
    }
    ~InNetNs() {
        if (setns(self_, CLONE_NEWNET) != 0) std::abort();
        close(self_);
    }
    InNetNs(const InNetNs&) = delete;
    InNetNs& operator=(const InNetNs&) = delete;

private:
    int self_ = -1;
};

// A tap device created inside a namespace with N queues attached; queues close on destruction.
// flags: more TUNSETIFF flags (IFF_NAPI: each queue gets a NAPI, as lab_wire's server TAP has).
class TapQueues {
public:
    TapQueues(const NetNs& ns, const std::string& name, int queues, short flags = 0) {
        std::string error;
        {
            InNetNs in(ns);
            for (int q = 0; q < queues && error.empty(); ++q) {
                int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
                ifreq ifr{};
                std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
                ifr.ifr_flags = static_cast<short>(IFF_TAP | IFF_NO_PI | (queues > 1 ? IFF_MULTI_QUEUE : 0) | flags);
                if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) error = std::string("TUNSETIFF: ") + std::strerror(errno);
                if (fd >= 0) fds_.push_back(fd);
            }
        }
        if (!error.empty()) throw std::runtime_error(error);
    }
    ~TapQueues() {
        for (int fd : fds_) close(fd);
    }
    TapQueues(const TapQueues&) = delete;
    TapQueues& operator=(const TapQueues&) = delete;
    int fd(size_t queue) const { return fds_.at(queue); }

private:
    std::vector<int> fds_;
};

inline std::string env(const char* name) {
    const char* v = std::getenv(name);
    if (!v) throw std::runtime_error(std::string(name) + " is not set");
    return v;
}

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Waits for a condition the code under test must bring about; the deadline is generous, not a timing
// claim. Polls every `every`: a condition that spawns processes (ip netns exec, curl) costs CPU, so
// tests that measure CPU load poll slowly.
inline bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds deadline = std::chrono::seconds(20),
                       std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
    auto end = std::chrono::steady_clock::now() + deadline;
    while (std::chrono::steady_clock::now() < end) {
        if (cond()) return true;
        std::this_thread::sleep_for(every);
    }
    return cond();
}

// A process in a namespace, its output in a file; killed on destruction if still running.
class Background {
public:
    Background(const NetNs& ns, std::vector<std::string> argv, std::filesystem::path log) : log_(std::move(log)) {
        argv.insert(argv.begin(), {"ip", "netns", "exec", ns.name()});
        pid_ = fork();
        if (pid_ == 0) {
            int out = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            int devnull = open("/dev/null", O_RDWR);
            dup2(devnull, 0);
            dup2(out, 1);
            dup2(out, 2);
            std::vector<char*> args;
            for (auto& a : argv) args.push_back(a.data());
            args.push_back(nullptr);
            execvp(args[0], args.data());
            _exit(127);
        }
    }
    ~Background() {
        if (pid_ > 0 && status_ < 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;
    void signal(int sig) const { kill(pid_, sig); }
    bool exited() {
        int st = 0;
        if (status_ < 0 && waitpid(pid_, &st, WNOHANG) == pid_) status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return status_ >= 0;
    }
    int wait(std::chrono::seconds deadline = std::chrono::seconds(30)) {
        if (!eventually([&] { return exited(); }, deadline)) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
            status_ = 999;
        }
        return status_;
    }
    std::string log() const { return slurp(log_); }
    pid_t pid() const { return pid_; }  // `ip netns exec` execs the command: this is its pid

private:
    std::filesystem::path log_;
    pid_t pid_ = -1;
    int status_ = -1;
};

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string t = (std::filesystem::temp_directory_path() / "rxtune-t-XXXXXX").string();
        if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
        path = t;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

// The value of one series (name and labels exactly as exposed) in a Prometheus scrape; -1 if absent.
inline double sample(const std::string& scrape, const std::string& series) {
    std::istringstream in(scrape);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    return -1;
}

// Two network namespaces joined by a veth pair, both ends up: `fa` in the sender with
// <net>.1/24, `fb` in the receiver with <net>.2/24 ("10.88.0").
struct VethPair {
    NetNs sender, receiver;
    explicit VethPair(const std::string& net) {
        mustRun({"ip", "-n", sender.name(), "link", "add", "fa", "type", "veth", "peer", "name", "fb", "netns", receiver.name()});
        sender.ip({"addr", "add", net + ".1/24", "dev", "fa"});
        receiver.ip({"addr", "add", net + ".2/24", "dev", "fb"});
        sender.ip({"link", "set", "fa", "up"});
        receiver.ip({"link", "set", "fb", "up"});
    }
};

// A real Prometheus in a namespace, listening on 127.0.0.1:port, its data and log under dir;
// config: the text of its prometheus.yml. Stopped on destruction.
class PrometheusServer {
public:
    PrometheusServer(const NetNs& ns, const std::filesystem::path& dir, const std::string& config, int port) : ns_(ns), port_(port) {
        std::filesystem::create_directories(dir / "data");
        std::ofstream(dir / "prometheus.yml") << config;
        proc_ = std::make_unique<Background>(ns, std::vector<std::string>{"prometheus", "--config.file=" + (dir / "prometheus.yml").string(),
                                                                          "--storage.tsdb.path=" + (dir / "data").string(),
                                                                          "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                                             dir / "log");
    }
    ~PrometheusServer() {
        proc_->signal(SIGTERM);
        proc_->wait();
    }
    PrometheusServer(const PrometheusServer&) = delete;
    PrometheusServer& operator=(const PrometheusServer&) = delete;
    // GET path?param (URL-encoded), parsed; null when it did not answer JSON.
    nlohmann::json api(const std::string& path, const std::string& param) const {
        Run r = ns_.exec({"curl", "-s", "--max-time", "3", "-G", "http://127.0.0.1:" + std::to_string(port_) + path,
                          "--data-urlencode", param});
        try {
            return nlohmann::json::parse(r.out);
        } catch (...) {
            return nlohmann::json();
        }
    }
    nlohmann::json query(const std::string& q) const { return api("/api/v1/query", "query=" + q); }
    // The first result's value, or -1.
    double value(const std::string& q) const {
        auto j = query(q);
        if (!j.is_object() || j["status"] != "success" || j["data"]["result"].empty()) return -1;
        return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
    }
    std::string log() const { return proc_->log(); }

private:
    const NetNs& ns_;
    int port_;
    std::unique_ptr<Background> proc_;
};

inline std::string rxtuneBin() {
    const char* b = std::getenv("RXTUNE_BIN");
    if (!b) throw std::runtime_error("RXTUNE_BIN is not set");
    return b;
}

// A scratch state/run/profile directory per test, removed afterwards.
struct Scratch {
    TempDir tmp;
    const std::filesystem::path& dir = tmp.path;
    std::string profile(const std::string& name, const std::string& yaml) const {
        auto p = dir / (name + ".yaml");
        std::ofstream(p) << yaml;
        return p.string();
    }
    std::vector<std::string> args(std::vector<std::string> a) const {
        a.insert(a.begin(), rxtuneBin());
        a.push_back("--state-dir");
        a.push_back((dir / "state").string());
        a.push_back("--run-dir");
        a.push_back((dir / "run").string());
        return a;
    }
};

}  // namespace rxtune::itest
