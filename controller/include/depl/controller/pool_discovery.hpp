// Turns the cluster's Nodes and Pods into the solver's node pools: which pools exist, how many
// GPUs are free in each, and what they cost and deliver. Pure: the caller passes the informer
// caches' contents; nothing here talks to the API server.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/solver/problem.hpp"

namespace depl::controller {

// Labels that name a node's pool, in the order they are tried.
inline constexpr const char* kPoolLabels[] = {
    "depl.dev/pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
};
inline constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
inline constexpr const char* kGpuResource = "nvidia.com/gpu";
// Node annotations that override the catalog and the defaults.
inline constexpr const char* kGflopsAnnotation = "depl.dev/gpu-gflops";
inline constexpr const char* kPriceAnnotation = "depl.dev/price-per-gpu-hour";
inline constexpr const char* kBandwidthAnnotation = "depl.dev/bandwidth";
inline constexpr const char* kStorageBandwidthAnnotation = "depl.dev/storage-bandwidth";
inline constexpr const char* kStartupAnnotation = "depl.dev/startup-seconds";
// "poolA=10G,poolB=1G": bandwidth from each named pool into this node's pool.
inline constexpr const char* kInterPoolAnnotation = "depl.dev/inter-pool";
// Expected interruptions of one worker per hour on the node (docs/depl-model.md section 1).
inline constexpr const char* kInterruptionsAnnotation = "depl.dev/interruptions-per-hour";

// Node labels that clouds and autoscalers put on spot (preemptible) capacity, with the value
// that means spot. A spot node may also carry a NoSchedule taint with one of these keys (AKS
// always does, GKE when asked); the controller tolerates it on the pods of a phase it placed on
// that pool, and nowhere else.
struct SpotLabel {
  const char* key;
  const char* value;
};
inline constexpr SpotLabel kSpotLabels[] = {
    {"karpenter.sh/capacity-type", "spot"},
    {"eks.amazonaws.com/capacityType", "SPOT"},
    {"cloud.google.com/gke-spot", "true"},
    {"cloud.google.com/gke-preemptible", "true"},
    {"kubernetes.azure.com/scalesetpriority", "spot"},
};
// Taints that announce a node's reclaim or drain (Karpenter's disruption, the AWS Node
// Termination Handler's spot interruption notice, GKE's impending termination): the node is
// leaving, its pods are being disrupted, not failing.
inline constexpr const char* kReclaimTaints[] = {
    "karpenter.sh/disrupted",
    "karpenter.sh/disruption",
    "aws-node-termination-handler/spot-itn",
    "aws-node-termination-handler/rebalance-recommendation",
    "cloud.google.com/impending-node-termination",
    "node.kubernetes.io/out-of-service",
};

// Sustained GFLOP/s and default price of one GPU of a product, from the depl-gpu-catalog
// ConfigMap (key: product name as in nvidia.com/gpu.product; value: JSON
// {"gflops": 19500, "pricePerGpuHour": 2.9}).
struct GpuCatalogEntry {
  double gflops = 0;
  double price_per_gpu_hour = 0;
};
using GpuCatalog = std::map<std::string, GpuCatalogEntry>;

// Reads the ConfigMap's data; entries that cannot be read are reported in `problems`.
GpuCatalog parse_gpu_catalog(const nlohmann::json& config_map, std::vector<std::string>& problems);

struct PoolDefaults {
  double bandwidth = 1.25e9;         // bytes/s between workers when no annotation says
  double storage_bandwidth = 2.5e8;  // bytes/s from remote storage when no annotation says
};

// GPUs that other jobs were promised in a pool but whose pods do not exist yet.
struct Reservation {
  std::string pool;
  int gpus = 0;
};

struct DiscoveredPools {
  std::vector<solver::Pool> pools;  // sorted by name
  // The node label that names each pool (worker pods select their pool with it).
  std::map<std::string, std::string> pool_label;
  // Per spot pool, the tolerations of the spot taints its nodes carry (a JSON array; absent for
  // pools without such taints). Worker pods of a phase placed there get exactly these.
  std::map<std::string, nlohmann::json> spot_tolerations;
  // Why a node or pool was left out ("node a100-3: NotReady"), for status messages and logs.
  std::vector<std::string> notes;
};

// Objects shared with the informer caches (immutable; no copy per reconcile).
using SharedObjects = std::vector<std::shared_ptr<const nlohmann::json>>;
// GPUs held on each node (by node name).
using GpusByNode = std::map<std::string, int>;

// Builds pools from Nodes (objects as served by the API) and the GPUs already held on each node
// (see gpus_held_by_node; the controller keeps them in a GpuLedger). NotReady, unschedulable
// and pool-less nodes are left out, and so are GPU nodes whose GFLOP/s are unknown.
// `reservations` are subtracted last (never below 0).
DiscoveredPools discover_pools(const SharedObjects& nodes, const GpusByNode& gpus_in_use,
                               const GpuCatalog& catalog, const PoolDefaults& defaults,
                               const std::vector<Reservation>& reservations = {});
// The same from Nodes and Pods held by value (tests, files): GPUs requested by pods that hold
// them count as used, except pods owned by `owner_uid` (the job being planned keeps its own
// GPUs).
DiscoveredPools discover_pools(const std::vector<nlohmann::json>& nodes,
                               const std::vector<nlohmann::json>& pods, const GpuCatalog& catalog,
                               const PoolDefaults& defaults, const std::string& owner_uid = "",
                               const std::vector<Reservation>& reservations = {});
// Whether a pod holds GPUs on a node: bound, not finished, requesting some.
bool pod_holds_gpus(const nlohmann::json& pod);
// GPUs held per node by `pods`, leaving out those with an ownerReference to `owner_uid`.
GpusByNode gpus_held_by_node(const std::vector<nlohmann::json>& pods,
                             const std::string& owner_uid = "");

// The pool a node belongs to, or "" when none of kPoolLabels is set; `label` receives the key.
std::string node_pool(const nlohmann::json& node, std::string* label = nullptr);
// Spot when one of kSpotLabels says so, else on-demand.
solver::CapacityType node_capacity_type(const nlohmann::json& node);
// True when the node's Ready condition is True.
bool node_ready(const nlohmann::json& node);
// The GPUs `node` offers to plans as discovery counts them: its allocatable GPUs when it is in
// a pool, Ready, not cordoned and not being reclaimed; 0 otherwise.
int node_offered_gpus(const nlohmann::json& node);
// The key of the first reclaim taint (kReclaimTaints) on the node, or "" when it has none.
std::string node_reclaim_taint(const nlohmann::json& node);
// GPUs a pod asks for (the larger of requests and limits, summed over its containers).
int pod_gpu_request(const nlohmann::json& pod);
// True for pods in phase Succeeded or Failed.
bool pod_is_terminal(const nlohmann::json& pod);

}  // namespace depl::controller
