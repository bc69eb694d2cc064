// depl-controller as a library call: connects to the API server, starts the informers, the
// progress, metrics and health endpoints, optionally leader election, and reconciles
// DependableTrainingJobs until `stop`. The depl-controller binary and `kubectl depl demo` both
// run it.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>

#include "depl/common/expected.hpp"
#include "depl/controller/stoppable_solve.hpp"
#include "depl/controller/worker_pods.hpp"
#include "depl/solver/solve.hpp"

namespace depl::controller {

struct ControllerConfig {
  std::string kubeconfig;  // "" = KUBECONFIG / ~/.kube/config, or in-cluster when present
  std::string context;
  std::string watch_namespace;  // "" = all namespaces
  std::string metrics_addr = ":8080";
  std::string progress_addr = ":8081";
  std::string progress_advertise_url;  // "" = derived (see docs/operations.md)
  std::string health_addr = ":8082";
  bool leader_elect = false;
  std::string leader_election_namespace;  // "" = the controller's namespace
  std::string leader_election_id = "depl-controller";
  // client-go's defaults; leaseDuration is written to the Lease in whole seconds (rounded up).
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
  // "" = hostname + pid. Also sent in every request's User-Agent, so the API server's audit
  // trail tells the replicas apart.
  std::string identity;
  int workers = 4;
  // Client-side request rate limit towards the API server (token bucket; qps <= 0: none).
  // Off by default, as in controller-runtime since v0.21 on SIG API Machinery's advice: the API
  // server's Priority and Fairness (GA since Kubernetes 1.29, on by default since 1.20) sheds
  // load with 429 and Retry-After, which the client honours. A client-side limit only delays a
  // burst: each job placed costs about 5 + workers writes, so a thousand jobs at 50/s take 80 s.
  double kube_api_qps = 0;
  int kube_api_burst = 100;
  std::string catalog_namespace;  // "" = the controller's namespace
  std::string checkpoint_root;
  RendezvousMode rendezvous = RendezvousMode::Dns;
  // Gang scheduling for jobs that do not set spec.gangScheduling (gang_scheduling.hpp).
  bool gang_scheduling = false;
  // The longest a job waits for its spot pool's nodes to come back (DecideOptions).
  std::chrono::seconds spot_capacity_wait{600};
  double default_bandwidth = 1.25e9;
  double default_storage_bandwidth = 2.5e8;
  // Each solve's budget (0: no limit). With `workers` solves at once the defaults fit the
  // chart's 512Mi memory limit; past the time the job gets the best plan found by then.
  std::chrono::milliseconds solve_time_budget = solver::kDefaultTimeBudget;
  std::size_t solve_memory_budget = solver::kDefaultMemoryBudget;
  // The solver; solver::solve when empty. Injected by tests (a solve that blocks until stopped).
  SolveFunction solve;
};

// Bound addresses, reported once everything listens (port 0 becomes a real port).
struct ControllerEndpoints {
  std::string metrics_url;
  std::string progress_url;  // the advertised one
  std::string health_url;
};

// Runs until `stop` is requested. `on_ready` (optional) is called once the endpoints listen and
// the caches have synced. Returns an error (naming the flag or the file) when it cannot start.
Expected<void> run_controller(const ControllerConfig& config, std::stop_token stop,
                              std::function<void(const ControllerEndpoints&)> on_ready = {});

}  // namespace depl::controller
