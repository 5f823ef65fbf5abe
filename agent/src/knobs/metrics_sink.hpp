// Where a knob family's own series go (KnobFamily::counters, gauges): declared here, implemented by
// metrics/, so that the families report metrics without depending on it.
#pragma once

#include <map>
#include <string>

namespace rxtune {

using MetricLabels = std::map<std::string, std::string>;

// The family's counters (KnobFamily::counters), by name: counted up.
class CounterSink {
public:
    virtual ~CounterSink() = default;
    virtual void count(const std::string& name, const MetricLabels& labels, double by = 1) = 0;
};

// The family's gauges of a snapshot (KnobFamily::gauges), by name: a series not set again at the
// next snapshot is removed (a device gone).
class GaugeSink {
public:
    virtual ~GaugeSink() = default;
    virtual void set(const std::string& name, const MetricLabels& labels, double value) = 0;
};

}  // namespace rxtune
