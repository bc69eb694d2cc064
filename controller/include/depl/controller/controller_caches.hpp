// The informer caches the controller reconciles from, with what is fed from them: the jobs (in
// creation order, PlacementLine), every pod of the cluster (trimmed to what placement and the
// reconciler read; GPUs held per node, GpuLedger; creates not seen yet, CreateExpectations; deleted
// workers not counted yet, DepartedPods), nodes,
// the operator's Services, the GPU catalog ConfigMap and the job policy ConfigMap
// (job_policy.hpp). Each informer runs on a thread of its own between start() and stop().
#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "depl/common/clock.hpp"
#include "depl/common/random.hpp"
#include "depl/controller/create_expectations.hpp"
#include "depl/controller/departed_pods.hpp"
#include "depl/controller/gpu_ledger.hpp"
#include "depl/controller/job_reconciler.hpp"
#include "depl/controller/placement_line.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/runtime/informer.hpp"

namespace depl::controller {

struct CacheOptions {
  std::string watch_namespace;                    // jobs and Services; "" = all namespaces
  std::string catalog_namespace = "depl-system";  // where both ConfigMaps live
  std::string catalog_name = "depl-gpu-catalog";
};

class ControllerCaches {
 public:
  // The client, clock and random source must outlive the caches.
  ControllerCaches(kube::Client& client, Clock& clock, RandomSource& random, CacheOptions options);
  ~ControllerCaches();
  ControllerCaches(const ControllerCaches&) = delete;
  ControllerCaches& operator=(const ControllerCaches&) = delete;

  kube::Informer& jobs() { return *jobs_; }
  kube::Informer& pods() { return *pods_; }
  kube::Informer& nodes() { return *nodes_; }
  kube::Informer& services() { return *services_; }
  kube::Informer& config_maps() { return *config_maps_; }
  kube::Informer& job_policy() { return *job_policy_; }
  PlacementLine& line() { return line_; }
  const GpuLedger& gpus() const { return gpus_; }
  CreateExpectations& expectations() { return expectations_; }
  DepartedPods& departed() { return departed_; }

  // What the reconciler reads.
  JobCaches job_caches();

  // Starts every informer on a thread of its own (each stops at `stop` or at stop()).
  void start(std::stop_token stop);
  // Waits until every cache has synced; false when `stop` came first.
  bool wait_synced(std::stop_token stop);
  // Stops the informers and joins their threads. Idempotent.
  void stop();

 private:
  std::vector<kube::Informer*> all();

  GpuLedger gpus_;
  PlacementLine line_;
  CreateExpectations expectations_;
  DepartedPods departed_;
  std::unique_ptr<kube::Informer> jobs_;
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> nodes_;
  std::unique_ptr<kube::Informer> services_;
  std::unique_ptr<kube::Informer> config_maps_;
  std::unique_ptr<kube::Informer> job_policy_;
  std::vector<std::jthread> threads_;
};

}  // namespace depl::controller
