// The simulated cluster's scheduler: a loop that binds pending pods (no spec.nodeName) to nodes
// chosen by choose_node with one pods/binding create each, as kube-scheduler does, or marks them
// PodScheduled=False/Unschedulable with the reason; it retries whenever a pod or node changes.
// Writes go through the ApiStore like any client's. With coscheduling or Kubernetes' PodGroups,
// the pods of a gang are placed all or nothing (sim/gang_scheduling.hpp).
#pragma once

#include <memory>
#include <thread>

#include "depl/devcluster/api_store.hpp"

namespace depl::devcluster {

struct SchedulerOptions {
  // Plays the coscheduling plugin: pods labelled scheduling.x-k8s.io/pod-group are bound all or
  // nothing per their PodGroup (whose CRD must be served before the scheduler starts).
  bool coscheduling = false;
  // Plays kube-scheduler's gang scheduling: pods naming a scheduling.k8s.io/v1beta1 PodGroup in
  // spec.schedulingGroup are bound all or nothing per its gang policy (the API must be served).
  bool workload_scheduling = false;
};

class Scheduler {
 public:
  explicit Scheduler(ApiStore& store, SchedulerOptions options = {});
  ~Scheduler();  // stops the loop
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

 private:
  struct Loop;
  std::unique_ptr<Loop> loop_;
  std::jthread thread_;
};

}  // namespace depl::devcluster
