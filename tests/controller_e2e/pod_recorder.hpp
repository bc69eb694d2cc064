// Watches every pod of the dev cluster's store (each event, in order, not a sampled list) and
// checks invariants at every step: never two live pods for one (job, phase, rank), never more
// GPUs bound to a node than it has and, when asked, never more GPUs promised to a pool (live,
// not terminating pods) than the pool has. Also remembers each pod name's incarnations (uids).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/devcluster/api_store.hpp"

namespace depl::e2e {

class PodRecorder {
 public:
  explicit PodRecorder(devcluster::ApiStore& store);
  ~PodRecorder();
  PodRecorder(const PodRecorder&) = delete;
  PodRecorder& operator=(const PodRecorder&) = delete;

  // Also check the pool promise (off by default: losing a node shrinks a pool while its pods
  // are still being removed, which is not the controller's over-commit).
  void check_pools(bool on);

  // Invariant breaches seen so far, one sentence each.
  std::vector<std::string> violations() const;
  // uids a pod name had, in order of creation.
  std::vector<std::string> incarnations(const std::string& ns, const std::string& name) const;
  // Every pod object as first seen (ADDED), in order; for images, env and owners.
  std::vector<nlohmann::json> created() const;
  // Pods of `job` (label depl.dev/job) created so far.
  std::vector<nlohmann::json> created_for(const std::string& job) const;
  // Pods of `job` deleted so far, each as it was when deleted (its last status), in order.
  std::vector<nlohmann::json> deleted_for(const std::string& job) const;

 private:
  void run(std::stop_token stop);
  void check(const std::string& changed_node);

  devcluster::ApiStore& store_;
  std::shared_ptr<devcluster::WatchSubscription> watch_;
  mutable std::mutex mutex_;
  std::map<std::string, nlohmann::json> live_;  // ns/name -> pod
  std::map<std::string, std::vector<std::string>> incarnations_;
  std::vector<nlohmann::json> created_;
  std::vector<nlohmann::json> deleted_;
  std::vector<std::string> violations_;
  bool check_pools_ = false;
  std::jthread thread_;
};

// GPUs a pod requests (nvidia.com/gpu over its containers).
int gpu_request(const nlohmann::json& pod);
bool pod_terminal(const nlohmann::json& pod);

}  // namespace depl::e2e
