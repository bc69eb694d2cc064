#include "depl/controller/metrics.hpp"

#include <fmt/format.h>
#include <cassert>
#include <cmath>

namespace depl::controller {
namespace {

std::string escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string render_labels(const Labels& labels, const std::string& extra = "") {
  if (labels.empty() && extra.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    out += fmt::format("{}=\"{}\"", k, escape(v));
    first = false;
  }
  if (!extra.empty()) out += (first ? "" : ",") + extra;
  return out + "}";
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

}  // namespace

std::vector<double> duration_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

void MetricsRegistry::describe(const std::string& name, Type type, const std::string& help,
                               std::vector<double> buckets) {
  std::lock_guard lock(mutex_);
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  f.buckets = type == Type::Histogram && buckets.empty() ? duration_buckets() : std::move(buckets);
}

void MetricsRegistry::add(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mutex_);
  auto it = families_.find(name);
  assert(it != families_.end());
  if (it == families_.end()) return;
  it->second.values[labels] += value;
}

void MetricsRegistry::set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mutex_);
  auto it = families_.find(name);
  assert(it != families_.end());
  if (it == families_.end()) return;
  it->second.values[labels] = value;
}

void MetricsRegistry::observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mutex_);
  auto it = families_.find(name);
  assert(it != families_.end());
  if (it == families_.end()) return;
  Family& f = it->second;
  Histogram& h = f.histograms[labels];
  if (h.counts.empty()) h.counts.assign(f.buckets.size(), 0);
  for (std::size_t i = 0; i < f.buckets.size(); ++i) {
    if (value <= f.buckets[i]) {
      h.counts[i] += 1;
      break;
    }
  }
  h.sum += value;
  h.count += 1;
}

void MetricsRegistry::clear(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = families_.find(name);
  if (it != families_.end()) it->second.values.clear();
}

void MetricsRegistry::add_collector(std::function<void(MetricsRegistry&)> collector) {
  std::lock_guard lock(mutex_);
  collectors_.push_back(std::move(collector));
}

double MetricsRegistry::value(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mutex_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto v = it->second.values.find(labels);
  return v == it->second.values.end() ? 0 : v->second;
}

std::string MetricsRegistry::render() {
  std::vector<std::function<void(MetricsRegistry&)>> collectors;
  {
    std::lock_guard lock(mutex_);
    collectors = collectors_;
  }
  for (auto& c : collectors) c(*this);
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, f] : families_) {
    const char* type = f.type == Type::Counter ? "counter"
                       : f.type == Type::Gauge ? "gauge"
                                               : "histogram";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, type);
    if (f.type != Type::Histogram) {
      for (const auto& [labels, v] : f.values) {
        out += fmt::format("{}{} {}\n", name, render_labels(labels), number(v));
      }
      continue;
    }
    for (const auto& [labels, h] : f.histograms) {
      double cumulative = 0;
      for (std::size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += h.counts[i];
        out += fmt::format("{}_bucket{} {}\n", name,
                           render_labels(labels, fmt::format("le=\"{}\"", number(f.buckets[i]))),
                           number(cumulative));
      }
      out += fmt::format("{}_bucket{} {}\n", name, render_labels(labels, "le=\"+Inf\""),
                         number(h.count));
      out += fmt::format("{}_sum{} {}\n", name, render_labels(labels), number(h.sum));
      out += fmt::format("{}_count{} {}\n", name, render_labels(labels), number(h.count));
    }
  }
  return out;
}

}  // namespace depl::controller
