// irqbalance on this host: its process (command line, environment), config file and package.
#pragma once

#include "core/irqbalance.hpp"
#include "core/topology.hpp"
#include "sys/file_tree.hpp"

namespace rxtune {

// Read-only. Where irqbalance runs, what its process was started with is what is in force (the
// service reads the file at start); else what the config file says it would use.
Result<IrqbalanceFacts> readIrqbalance(const FileTree& fs, const Topology& host);

// An irqbalance process that asks rxtune's policy script.
struct IrqbalanceAsking {
    int pid = 0;
    unsigned interval = 10;  // seconds between its balancing passes
    double age = -1;         // seconds since it started (/proc/PID/stat, /proc/uptime); < 0: unknown
    // Seconds since it made its control socket, /run/irqbalance/irqbalance<PID>.sock: after it has
    // read every IRQ (running the policy script for each), just before it schedules its first
    // pass. < 0: no such file (still starting, or an abstract socket).
    double loopAge = -1;
    // irqbalance drops a SIGHUP that comes before its first balancing pass (irqbalance.c,
    // force_rescan: a rescan is taken once cycle_count > 0), and that pass comes `interval` seconds
    // after its socket (a whole-second glib timer: up to 1 s more). Seconds until a rescan request
    // is taken, estimated: from the socket's time, else from the process's start with 2 s for
    // reading its IRQs (an estimate only: reading them took 6 s under TCG, so one without a socket
    // is not taken as ready by this, see irqbalanceNotReady); 0: now, or unknown.
    double rescanIgnoredFor() const;
    // It may not have made its first pass: its socket made less than its interval and 10 s ago,
    // or (no socket file) started less than its interval and 12 s ago.
    bool young() const;
};

// The irqbalance processes that ask rxtune's policy script: started with --policyscript / -l
// naming a file called rxtune-policy, or a directory holding one (irqbalance runs each script in a
// directory). These are the ones to tell when <run_dir>/pinned-irqs changes.
std::vector<IrqbalanceAsking> irqbalanceAskingRxtune(const FileTree& fs);

}  // namespace rxtune
