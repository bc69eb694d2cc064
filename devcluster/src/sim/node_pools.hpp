// The simulated cluster's nodes, from the same pools file the CLI reads (pools: [{name, gpuType,
// gpus, nodes, gpusPerNode, gpuGflops, pricePerGpuHour, bandwidthBytesPerSecond,
// storageBandwidthBytesPerSecond, startupSeconds, interPool}]). Read here rather than through
// the solver so the dev cluster stays independent of it; only the fields nodes need are read.
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
};

// Parses the JSON form of a pools file (as yaml_to_json returns it). Errors name the field,
// e.g. "pools[1].gpusPerNode: must be a non-negative integer".
Expected<std::vector<NodePool>> parse_node_pools(const nlohmann::json& document);
// Reads and parses a pools YAML file.
Expected<std::vector<NodePool>> read_node_pools_file(const std::string& path);

// Node objects (<pool>-<i>) with labels, annotations, capacity/allocatable and a Ready
// condition, as a kubelet would register them. `now` is an RFC 3339 timestamp.
std::vector<nlohmann::json> node_objects(const std::vector<NodePool>& pools,
                                         const std::string& now);

}  // namespace depl::devcluster
