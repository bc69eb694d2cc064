// Prometheus metrics of the controller in the text exposition format (version 0.0.4): counters,
// gauges and histograms with labels, plus collectors that refresh gauges at scrape time (work
// queue depth, jobs by phase). Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace depl::controller {

using Labels = std::map<std::string, std::string>;

class MetricsRegistry {
 public:
  enum class Type { Counter, Gauge, Histogram };

  // Declares a metric once (help text and type); using an undeclared name is a bug.
  void describe(const std::string& name, Type type, const std::string& help,
                std::vector<double> buckets = {});

  void add(const std::string& name, const Labels& labels, double value = 1);
  void set(const std::string& name, const Labels& labels, double value);
  void observe(const std::string& name, const Labels& labels, double value);
  // Drops every series of a gauge (before a collector re-sets them).
  void clear(const std::string& name);

  // Runs at every scrape, before rendering.
  void add_collector(std::function<void(MetricsRegistry&)> collector);

  std::string render();

  // Value of a counter or gauge series (0 when absent); for tests and logs.
  double value(const std::string& name, const Labels& labels) const;

 private:
  struct Histogram {
    std::vector<double> counts;  // per bucket, cumulative at render
    double sum = 0;
    double count = 0;
  };
  struct Family {
    Type type = Type::Counter;
    std::string help;
    std::vector<double> buckets;
    std::map<Labels, double> values;
    std::map<Labels, Histogram> histograms;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
  std::vector<std::function<void(MetricsRegistry&)>> collectors_;
};

// Buckets for durations in seconds from 1 ms to about 1 min.
std::vector<double> duration_buckets();

}  // namespace depl::controller
