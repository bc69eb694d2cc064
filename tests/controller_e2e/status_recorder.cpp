#include "status_recorder.hpp"

#include <fmt/format.h>

#include <set>

#include "depl/common/json_fields.hpp"

namespace depl::e2e {

using nlohmann::json;

namespace {

// A number of the status, 0 where it has none yet.
double number(const json& j, const char* key) {
  return json_number(j, key).value_or(0.0);
}

std::string phase_of(const json& status) {
  const json& p = json_member(status, "phase");
  return p.is_string() ? p.get<std::string>() : "";
}

std::set<std::pair<int, int>> history_of(const json& status) {
  std::set<std::pair<int, int>> out;
  const json& history = json_member(json_member(status, "progress"), "history");
  if (!history.is_array()) return out;
  for (const auto& h : history) {
    out.insert({static_cast<int>(number(h, "phase")), static_cast<int>(number(h, "epoch"))});
  }
  return out;
}

}  // namespace

StatusRecorder::StatusRecorder(devcluster::ApiStore& store) {
  auto watch = store.watch(
      devcluster::ResourceRef{"depl.dev", "v1alpha1", "dependabletrainingjobs", "", "", ""},
      devcluster::observer_watch_options());
  if (watch) watch_ = *watch;
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

StatusRecorder::~StatusRecorder() {
  thread_.request_stop();
  if (watch_) watch_->close();
  if (thread_.joinable()) thread_.join();
}

std::vector<std::string> StatusRecorder::violations() const {
  std::lock_guard lock(mutex_);
  if (!watch_) return {"could not watch DependableTrainingJobs"};
  return violations_;
}

std::vector<json> StatusRecorder::statuses(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = statuses_.find(name);
  return it == statuses_.end() ? std::vector<json>{} : it->second;
}

std::map<std::pair<int, int>, double> StatusRecorder::reported(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = reported_.find(name);
  return it == reported_.end() ? std::map<std::pair<int, int>, double>{} : it->second;
}

void StatusRecorder::run(std::stop_token stop) {
  if (!watch_) return;
  while (!stop.stop_requested()) {
    auto event = watch_->next(std::chrono::milliseconds(100));
    if (!event) {
      if (watch_->closed()) return;
      continue;
    }
    if (!event->object || (event->type != "ADDED" && event->type != "MODIFIED")) continue;
    const json& job = *event->object;
    const std::string name = json_member(json_member(job, "metadata"), "name").get<std::string>();
    const json& status = json_member(job, "status");
    std::lock_guard lock(mutex_);
    auto& seen = statuses_[name];
    if (!seen.empty() && seen.back() == status) continue;  // a spec or metadata change
    if (!seen.empty()) check(name, seen.back(), status);
    seen.push_back(status);
    const json& history = json_member(json_member(status, "progress"), "history");
    if (history.is_array()) {
      for (const auto& h : history) {
        reported_[name][{static_cast<int>(number(h, "phase")),
                         static_cast<int>(number(h, "epoch"))}] = number(h, "loss");
      }
    }
  }
}

// Runs with mutex_ held, for each new status of a job.
void StatusRecorder::check(const std::string& name, const json& before, const json& after) {
  const std::size_t version = statuses_[name].size();
  auto violation = [&](const std::string& what) {
    violations_.push_back(fmt::format("job {}, status #{}: {}", name, version, what));
  };
  const json& p0 = json_member(before, "progress");
  const json& p1 = json_member(after, "progress");
  for (const char* key : {"epoch", "phase", "cost", "seconds"}) {
    if (number(p1, key) < number(p0, key)) {
      violation(fmt::format("progress.{} went back from {} to {}", key, number(p0, key),
                            number(p1, key)));
    }
  }
  const double rev0 = number(json_member(before, "plan"), "revision");
  const double rev1 = number(json_member(after, "plan"), "revision");
  if (rev1 < rev0) violation(fmt::format("plan.revision went back from {} to {}", rev0, rev1));
  const std::string phase0 = phase_of(before);
  if ((phase0 == "Succeeded" || phase0 == "Failed") && phase_of(after) != phase0) {
    violation(fmt::format("phase went from {} to {}", phase0, phase_of(after)));
  }
  const auto h0 = history_of(before);
  const auto h1 = history_of(after);
  if (!h1.empty() || h0.empty()) {
    // Entries older than the oldest one kept may have been dropped (the history is bounded).
    const int oldest_kept =
        h1.empty() ? 0 : std::min_element(h1.begin(), h1.end(), [](auto a, auto b) {
                           return a.second < b.second;
                         })->second;
    for (const auto& entry : h0) {
      if (entry.second >= oldest_kept && !h1.count(entry)) {
        violation(
            fmt::format("progress.history lost phase {} epoch {}", entry.first, entry.second));
      }
    }
  } else {
    violation(fmt::format("progress.history emptied ({} entries before)", h0.size()));
  }
}

}  // namespace depl::e2e
