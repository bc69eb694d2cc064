// The simulated cluster's nodes, from the same pools file the CLI reads (pools: [{name, gpuType,
// gpus, nodes, gpusPerNode, gpuGflops, pricePerGpuHour, bandwidthBytesPerSecond,
// storageBandwidthBytesPerSecond, startupSeconds, interPool, capacityType,
// interruptionsPerHour}], plus the dev cluster's own taints, reclaimNoticeSeconds and
// replacementSeconds). Read here rather than through the solver so the dev cluster stays
// independent of it; only the fields nodes need are read.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"

namespace depl::devcluster {

struct NodePool {
  std::string name;
  std::string gpu_type;  // nvidia.com/gpu.product
  int nodes = 1;
  int gpus_per_node = 0;
  double gpu_gflops = 0;
  double price_per_gpu_hour = 0;
  double bandwidth = 0;                      // bytes/s, 0 = not given
  double storage_bandwidth = 0;              // bytes/s, 0 = not given
  double startup_seconds = -1;               // < 0 = not given
  std::map<std::string, double> inter_pool;  // source pool -> bytes/s into this pool
  std::string zone;                          // topology.kubernetes.io/zone (default "<name>-zone")
  double cpu_per_node = 64;                  // cores
  double memory_per_node = 512.0 * (1ull << 30);  // bytes
  int max_pods_per_node = 110;
  // Spot capacity: its nodes are labelled karpenter.sh/capacity-type=spot and carry Karpenter's
  // termination finalizer, so deleting one reclaims it gracefully (sim/node_termination.hpp).
  bool spot = false;
  double interruptions_per_hour = -1;  // < 0 = not given (no annotation)
  nlohmann::json taints = nlohmann::json::array();  // [{key, value, effect}] on every node
  // How long a reclaimed node's pods have before the node is gone (the cloud's notice).
  double reclaim_notice_seconds = 30;
  // A reclaimed node is replaced by a new one of the pool after this long (< 0: never).
  double replacement_seconds = -1;
};

// Karpenter's finalizer on the nodes it manages: a deleted node stays until it is drained.
inline constexpr const char* kTerminationFinalizer = "karpenter.sh/termination";
inline constexpr const char* kCapacityTypeLabel = "karpenter.sh/capacity-type";

// Parses the JSON form of a pools file (as yaml_to_json returns it). Errors name the field,
// e.g. "pools[1].gpusPerNode: must be a non-negative integer".
Expected<std::vector<NodePool>> parse_node_pools(const nlohmann::json& document);
// Reads and parses a pools YAML file.
Expected<std::vector<NodePool>> read_node_pools_file(const std::string& path);

// Node objects (<pool>-<i>) with labels, annotations, capacity/allocatable and a Ready
// condition, as a kubelet would register them. `now` is an RFC 3339 timestamp.
std::vector<nlohmann::json> node_objects(const std::vector<NodePool>& pools,
                                         const std::string& now);
// One node of `pool`, named `name` (a replacement gets a fresh name).
nlohmann::json node_object(const NodePool& pool, const std::string& name, const std::string& now);

}  // namespace depl::devcluster
