#include "depl/controller/interruption_rate.hpp"

#include <algorithm>

#include "depl/common/time.hpp"

namespace depl::controller {

double posterior_interruption_rate(double stated, int preemptions, double worker_hours,
                                   double prior_events) {
  if (!(stated > 0) || !(prior_events > 0)) return stated;
  const double events = prior_events + std::max(0, preemptions);
  const double exposure = prior_events / stated + std::max(0.0, worker_hours);
  return events / exposure;
}

double planning_interruption_rate(double stated, const PreemptionRecord& observed,
                                  double prior_events) {
  const double posterior = posterior_interruption_rate(
      stated, observed.count, observed.worker_seconds / 3600.0, prior_events);
  return std::max(stated, posterior);
}

double seconds_since(const std::string& since, std::chrono::system_clock::time_point until) {
  const auto from = parse_rfc3339(since);
  if (!from) return 0;
  return std::max(0.0, std::chrono::duration<double>(until - *from).count());
}

void add_training_time(JobStatus& status, const std::string& pool, double worker_seconds) {
  if (!(worker_seconds > 0)) return;
  auto figures = status.pool_figures.find(pool);
  const bool interrupts =
      figures != status.pool_figures.end() && figures->second.interruptions_per_hour > 0;
  auto record = status.preemptions.find(pool);
  if (record != status.preemptions.end()) {
    record->second.worker_seconds += worker_seconds;
  } else if (interrupts) {
    status.preemptions[pool].worker_seconds = worker_seconds;
  }
}

}  // namespace depl::controller
