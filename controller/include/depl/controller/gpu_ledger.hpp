// GPUs held by pods, per node and per controlling owner, kept up to date from the pods
// informer's events. Placement needs "GPUs in use on each node" and "GPUs a job's pods hold" on
// every reconcile; summing them over every pod of the cluster each time made a reconcile cost
// O(pods), and a burst of jobs O(jobs x pods).
//
// Thread-safety: one writer (the informer thread, through the handlers), many readers. The
// change listener runs on the writer's thread, after the ledger's lock is released.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "depl/controller/pool_discovery.hpp"
#include "depl/kube/runtime/informer.hpp"

namespace depl::controller {

class GpuLedger {
 public:
  // Handlers to add to the pods informer before any that enqueue work, so a reconcile started
  // by a pod event already sees that event here.
  kube::ResourceEventHandlers handlers();

  // Records `pod` as it is now (what it holds replaces what it held before).
  void put(const nlohmann::json& pod);
  void remove(const nlohmann::json& pod);

  // GPUs held on each node, leaving out the pods whose controller has uid `except_owner`.
  GpusByNode by_node(const std::string& except_owner = "") const;
  // GPUs held by the pods whose controller has uid `owner`.
  int held_by(const std::string& owner) const;

  // `listener(owner_uid)` is called after every put()/remove() that may have changed what the
  // pods of that owner hold ("" for pods without a controller). One listener; set it before
  // the informer runs.
  void on_owner_change(std::function<void(const std::string&)> listener);

 private:
  struct Holding {
    std::string node;
    std::string owner;  // uid of the controller ownerReference, "" without one
    int gpus = 0;
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Holding> by_pod_;  // "namespace/name" -> what it holds
  GpusByNode by_node_;
  std::unordered_map<std::string, GpusByNode> by_owner_;  // owner uid -> node -> GPUs
  std::unordered_map<std::string, int> total_by_owner_;   // owner uid -> GPUs
  std::function<void(const std::string&)> listener_;
};

}  // namespace depl::controller
