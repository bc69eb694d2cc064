// Watches every DependableTrainingJob of the dev cluster's store (each version the store
// writes, in order, not a sampled list) and checks at every step that a job's status never goes
// backwards: progress.epoch, progress.phase, progress.cost and progress.seconds never decrease,
// plan.revision never decreases, a finished job stays finished, and a reported epoch once in
// progress.history stays there (until the bounded history drops it as the oldest). Also keeps
// every (phase, epoch) -> loss the history ever held, to check acknowledged reports against.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/devcluster/api_store.hpp"

namespace depl::e2e {

class StatusRecorder {
 public:
  // The CRD must exist already.
  explicit StatusRecorder(devcluster::ApiStore& store);
  ~StatusRecorder();
  StatusRecorder(const StatusRecorder&) = delete;
  StatusRecorder& operator=(const StatusRecorder&) = delete;

  std::vector<std::string> violations() const;
  // Every status version of job `name` seen, in order.
  std::vector<nlohmann::json> statuses(const std::string& name) const;
  // (phase, epoch) -> loss of every entry progress.history ever held for job `name`.
  std::map<std::pair<int, int>, double> reported(const std::string& name) const;

 private:
  void run(std::stop_token stop);
  void check(const std::string& name, const nlohmann::json& before, const nlohmann::json& after);

  std::shared_ptr<devcluster::WatchSubscription> watch_;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<nlohmann::json>> statuses_;  // by job name
  std::map<std::string, std::map<std::pair<int, int>, double>> reported_;
  std::vector<std::string> violations_;
  std::jthread thread_;
};

}  // namespace depl::e2e
