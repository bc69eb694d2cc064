// The simulated cluster's pod garbage collector: the part of kube-controller-manager's podgc that
// a lost node needs. A pod bound to a node that no longer exists has no kubelet left to finish
// it; like podgc it is marked Failed with a DisruptionTarget condition (reason DeletionByPodGC)
// unless it already ended, then deleted with grace period 0, terminating or not.
#pragma once

#include <chrono>
#include <memory>
#include <thread>

#include "depl/devcluster/api_store.hpp"

namespace depl::devcluster {

struct PodGcOptions {
  // How long a node name must stay unknown before its pods count as orphaned. podgc waits 40 s
  // for every node (one may register late); a node this collector saw deleted counts at once.
  std::chrono::milliseconds quarantine = std::chrono::seconds(40);
};

class PodGarbageCollector {
 public:
  PodGarbageCollector(ApiStore& store, PodGcOptions options);
  ~PodGarbageCollector();  // stops the loop
  PodGarbageCollector(const PodGarbageCollector&) = delete;
  PodGarbageCollector& operator=(const PodGarbageCollector&) = delete;

 private:
  struct Loop;
  std::unique_ptr<Loop> loop_;
  std::jthread thread_;
};

}  // namespace depl::devcluster
