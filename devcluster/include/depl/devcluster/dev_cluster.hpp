// An in-process, kubectl-compatible Kubernetes API server with simulated node pools: the test
// fixture (and the engine of `kubectl-depl dev-cluster`). start() serves HTTPS on 127.0.0.1 (port
// 0 by default) with a generated CA, writes a kubeconfig holding the CA and the admin's token,
// creates the nodes of the pools file and runs a scheduler and a kubelet that runs pods as local
// processes. Every request is authenticated and authorized (RBAC) as kube-apiserver does; the
// admin's token is all-powerful, service accounts get tokens through TokenRequest. Fault
// injection methods let client tests break it on purpose. All methods are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "depl/common/expected.hpp"
#include "depl/devcluster/api_store.hpp"

namespace depl::devcluster {

struct DevClusterOptions {
  // Node pools: a pools file path, or its YAML text (pools_yaml wins when both are set). Neither:
  // a cluster without nodes.
  std::string pools_file;
  std::string pools_yaml;
  std::uint16_t port = 0;  // 0: any free port (see DevCluster::port())
  // Plain HTTP instead of HTTPS (for clients without TLS). Requests without credentials are then
  // the admin's, as on kube-apiserver's old insecure port; bearer tokens still authenticate, and
  // their users are authorized.
  bool insecure_http = false;
  // Seed of the uids and generated names; unset: a random one, so two clusters never give the
  // same object the same uid.
  std::optional<std::uint64_t> seed;
  // image -> executable for the kubelet ("*" maps every image). Unmapped images are simulated.
  std::map<std::string, std::string> image_map;
  // How long simulated containers run before succeeding (negative: until deleted).
  std::chrono::milliseconds simulated_pod_duration = std::chrono::seconds(5);
  // First container restart delay (doubles per restart, capped at 10 s).
  std::chrono::milliseconds restart_backoff = std::chrono::milliseconds(200);
  // Where the kubeconfig and pod directories go. Empty: a fresh temporary directory, removed
  // by stop().
  std::string work_dir;
  // Kubeconfig location; empty: <work_dir>/kubeconfig.
  std::string kubeconfig_path;
  std::size_t watch_history_window = 10000;
  std::chrono::milliseconds bookmark_interval = std::chrono::seconds(60);
  // Turn the simulated cluster's loops off to test the API server alone. The kubelet comes with
  // the pod garbage collector that removes the pods of deleted nodes.
  bool run_scheduler = true;
  bool run_kubelet = true;
  // How long a node a pod is bound to must stay unknown before the pod garbage collector takes
  // the pod for orphaned (as kube-controller-manager's 40 s); a node seen deleted counts at once.
  std::chrono::milliseconds orphan_pod_quarantine = std::chrono::seconds(40);
  int server_threads = 2;
  // StoreOptions::kueue_pod_webhook: pods on a Kueue queue are created gated.
  bool kueue_pod_webhook = false;
  // The coscheduling plugin of kubernetes-sigs/scheduler-plugins is installed: the PodGroup CRD
  // (scheduling.x-k8s.io/v1alpha1) is served, and the scheduler binds the pods labelled
  // scheduling.x-k8s.io/pod-group=<group> all or nothing, once the group's minMember fit.
  bool coscheduling = false;
  // Kubernetes' own gang scheduling (1.37, KEP-4671) is on: the Workload and PodGroup API
  // (scheduling.k8s.io/v1beta1) is served as a built-in group, and the scheduler binds the pods
  // that name a PodGroup in spec.schedulingGroup.podGroupName all or nothing, once its
  // spec.schedulingPolicy.gang.minCount fit.
  bool workload_scheduling = false;
};

// What a request-matching fault or a request observer looks at (DevCluster::fail_requests_where,
// DevCluster::observe_requests).
struct RequestSummary {
  std::string method;      // "GET", "PUT", ...
  std::string path;        // percent-decoded, without the query
  std::string user_agent;  // the User-Agent header, "" when absent
  bool watch = false;      // a watch (?watch=true or a /watch/ path), not a get or a list
};

class DevCluster {
 public:
  static Expected<std::unique_ptr<DevCluster>> start(DevClusterOptions options);
  ~DevCluster();  // stop()
  DevCluster(const DevCluster&) = delete;
  DevCluster& operator=(const DevCluster&) = delete;

  std::string url() const;  // "https://127.0.0.1:PORT" ("http://..." with insecure_http)
  std::uint16_t port() const;
  std::string kubeconfig_path() const;
  std::string bearer_token() const;        // the admin's token (group system:masters)
  std::string ca_certificate_pem() const;  // "" with insecure_http
  // A token of service account `ns`/`name` (which must exist), as a TokenRequest would issue.
  Expected<std::string> service_account_token(
      const std::string& ns, const std::string& name,
      std::chrono::seconds lifetime = std::chrono::hours(1));
  // Writes a kubeconfig like the cluster's own, whose user is service account `ns`/`name`
  // (a fresh token), to `path` (mode 0600).
  Expected<void> write_service_account_kubeconfig(const std::string& ns, const std::string& name,
                                                  const std::string& path);
  // Direct access to the API semantics (tests seed objects without HTTP).
  ApiStore& store();

  // Stops serving, kills every container process, removes a temporary work_dir. Idempotent.
  void stop();

  // ---- fault injection ----------------------------------------------------------------------
  // Ends every open watch (HTTP streams and the store's subscriptions, except a test's
  // observers: WatchOptions::observer): clients must re-watch.
  void drop_watches();
  // Forgets the watch history: resuming from any earlier resourceVersion gets 410 Gone.
  void compact_history();
  // The HTTP watches of resource `plural` ("pods") lag behind the store, as behind a slow watch
  // cache: their events are kept, in order, until release_watch_events() sends them (and ends
  // the lag of every resource). Lists, gets and writes are served as usual.
  void hold_watch_events(const std::string& plural);
  void release_watch_events();
  // The next `count` resource requests answer `code` (409, 429 with Retry-After, 500, ...).
  void fail_next_requests(int count, int code);
  // Every resource request for which `match` is true answers `code` the same way, without
  // touching the store, until this is called again with an empty `match`. For one client's
  // requests only, e.g. the Lease renewals of one controller replica (by its User-Agent).
  // `match` runs on the server's threads.
  void fail_requests_where(std::function<bool(const RequestSummary&)> match, int code);
  enum class Outage {
    Refuse,              // the listener closes: connections are refused, open ones cut
    ServiceUnavailable,  // every request answers 503 with Retry-After
  };
  // Unavailable for `duration`, then back on the same port.
  void make_unavailable(std::chrono::milliseconds duration, Outage how = Outage::Refuse);
  // Node Ready condition (False also taints it unreachable); the kubelet fails its pods.
  Expected<void> set_node_ready(const std::string& node, bool ready);
  // Deletes a node, as when its machine is gone: the processes of its pods are killed at once
  // and nothing more is reported about them; the pod garbage collector then marks its pods
  // Failed (condition DisruptionTarget, reason DeletionByPodGC) and deletes them (grace 0).
  Expected<void> delete_node(const std::string& node);
  // Reclaims a spot node (one of a pool with capacityType Spot), as a cloud takes back spot
  // capacity and Karpenter drains the node: `kubectl delete node` does the same with the pool's
  // settings. The node is tainted karpenter.sh/disrupted:NoSchedule, its pods get the condition
  // DisruptionTarget and are deleted with their grace period (SIGTERM, then SIGKILL), at most
  // `notice`; then the node is removed. A replacement node of the pool registers
  // `replacement_after` later. Unset fields follow the pool (reclaimNoticeSeconds,
  // replacementSeconds). Returns once the deletion has begun.
  struct ReclaimOptions {
    std::optional<std::chrono::milliseconds> notice;
    std::optional<std::chrono::milliseconds> replacement_after;  // negative: no replacement
  };
  Expected<void> reclaim_node(const std::string& node, ReclaimOptions options = {});
  // Pid of a running container process, 0 if none (signal-handling tests).
  int container_pid(const std::string& ns, const std::string& pod, const std::string& container);
  // SIGKILLs a running container's processes (its process group), as a crash or the OOM killer
  // would: the kubelet reports exit code 137 (reason Error) and restarts it or not per the
  // pod's restartPolicy. `container` "": the pod's first. An error when none is running.
  Expected<void> kill_container(const std::string& ns, const std::string& pod,
                                const std::string& container = "");

  // ---- observation ---------------------------------------------------------------------------
  // `observe` sees every resource request the server takes (authenticated, not refused by an
  // outage), before any injected failure, e.g. to count one client's lists by its User-Agent.
  // Empty: none. Runs on the server's threads.
  void observe_requests(std::function<void(const RequestSummary&)> observe);

 private:
  struct Impl;
  explicit DevCluster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace depl::devcluster
