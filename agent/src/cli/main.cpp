// rxtune: the one-shot command line. Creates the real OS objects and hands them down.
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/detect_output.hpp"
#include "core/paths.hpp"
#include "inventory/snapshot.hpp"
#include "sys/file_tree.hpp"
#include "sys/netlink.hpp"

#ifndef RXTUNE_VERSION
#define RXTUNE_VERSION "0.0.0"
#endif

namespace {

int reportError(const rxtune::Error& e) {
    std::cerr << "rxtune: " << e.message() << "\n";
    return 1;
}

int runDetect(const std::vector<std::string>& interfaces, bool asJson) {
    for (const auto& name : interfaces)
        if (auto ok = rxtune::validateIfName(name); !ok) return reportError(ok.error());
    rxtune::FileTree fs("/");
    auto nl = rxtune::Netlink::open();
    if (!nl) return reportError(nl.error());
    auto snap = rxtune::takeSnapshot(fs, **nl, interfaces);
    if (!snap) return reportError(snap.error());
    // Render completely before writing so that an error never leaves half a document on stdout.
    std::string text;
    if (asJson) {
        text = rxtune::toJson(*snap).dump(2) + "\n";
    } else {
        std::ostringstream os;
        rxtune::printTable(*snap, os);
        text = os.str();
    }
    std::cout << text << std::flush;
    return std::cout ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"rxtune: spread receive work of single-queue NICs over the right CPUs, safely"};
    app.set_version_flag("--version", std::string("rxtune ") + RXTUNE_VERSION);
    app.require_subcommand(1);

    std::vector<std::string> interfaces;
    bool asJson = false;
    auto* detect = app.add_subcommand("detect", "Show NICs, queues, IRQs, CPUs and current steering (read-only)");
    detect->add_option("-i,--interface", interfaces, "Only this interface (repeatable)");
    detect->add_flag("--json", asJson, "One JSON document with keys host and interfaces");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    if (detect->parsed()) return runDetect(interfaces, asJson);
    return 1;
}
