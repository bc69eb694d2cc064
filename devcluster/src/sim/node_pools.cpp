#include "sim/node_pools.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>

#include "depl/common/quantity.hpp"
#include "depl/common/yaml_json.hpp"

namespace depl::devcluster {

namespace {

using json = nlohmann::json;

// A number written either as a JSON/YAML number or as a quantity string ("10G", "1.5Gi").
Expected<std::optional<double>> read_number(const json& object, const std::string& key,
                                            const std::string& where) {
  if (!object.contains(key) || object[key].is_null()) return std::optional<double>();
  const json& v = object[key];
  if (v.is_number()) return std::optional<double>(v.get<double>());
  if (v.is_string()) {
    auto q = parse_quantity(v.get<std::string>());
    if (!q) return error(where + "." + key + ": " + q.error().message);
    return std::optional<double>(*q);
  }
  return error(where + "." + key + ": must be a number or a quantity such as \"10G\"");
}

Expected<std::optional<int>> read_count(const json& object, const std::string& key,
                                        const std::string& where) {
  auto n = read_number(object, key, where);
  if (!n) return unexpected(n.error());
  if (!*n) return std::optional<int>();
  const double v = **n;
  if (!(v >= 0) || v != std::floor(v) || v > 1e6) {
    return error(where + "." + key + ": must be a non-negative integer, got " +
                 fmt::format("{}", v));
  }
  return std::optional<int>(static_cast<int>(v));
}

// Integral values print without exponent or decimals, so annotations read naturally.
std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e18)
    return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}

// A pool's size: any two of gpus, nodes and gpusPerNode determine the third (gpus alone: one
// node).
Expected<void> read_size(const json& p, const std::string& named, NodePool& pool) {
  std::optional<int> gpus, nodes, per_node;
  for (auto [key, out] : {std::pair{"gpus", &gpus}, std::pair{"nodes", &nodes},
                          std::pair{"gpusPerNode", &per_node}}) {
    auto r = read_count(p, key, named);
    if (!r) return unexpected(r.error());
    *out = *r;
  }
  if (per_node && nodes) {
    pool.gpus_per_node = *per_node;
    pool.nodes = *nodes;
    if (gpus && *gpus != pool.nodes * pool.gpus_per_node) {
      return error(fmt::format("{}.gpus: {} does not equal nodes x gpusPerNode = {}", named, *gpus,
                               pool.nodes * pool.gpus_per_node));
    }
  } else if (per_node && gpus) {
    pool.gpus_per_node = *per_node;
    if (pool.gpus_per_node == 0 || *gpus % pool.gpus_per_node != 0) {
      return error(named + ".gpus: must be a multiple of gpusPerNode");
    }
    pool.nodes = *gpus / pool.gpus_per_node;
  } else if (nodes && gpus) {
    pool.nodes = *nodes;
    if (pool.nodes == 0 || *gpus % pool.nodes != 0) {
      return error(named + ".gpus: must be a multiple of nodes");
    }
    pool.gpus_per_node = *gpus / pool.nodes;
  } else if (gpus) {
    pool.nodes = 1;
    pool.gpus_per_node = *gpus;
  } else {
    return error(named + ": give two of gpus, nodes and gpusPerNode");
  }
  return {};
}

struct NumberField {
  const char* key;
  double* out;
};

// Optional numbers (or quantities) that must be finite and non-negative; an absent one keeps
// the pool's default.
Expected<void> read_non_negative(const json& p, const std::string& named,
                                 std::initializer_list<NumberField> fields) {
  for (const NumberField& n : fields) {
    auto v = read_number(p, n.key, named);
    if (!v) return unexpected(v.error());
    if (!*v) continue;
    if (!(**v >= 0) || !std::isfinite(**v)) {
      return error(named + "." + n.key + ": must be a finite non-negative number");
    }
    *n.out = **v;
  }
  return {};
}

// The figures the solver reads (speed, price, bandwidths, startup) and the nodes' size.
Expected<void> read_figures(const json& p, const std::string& named, NodePool& pool) {
  return read_non_negative(p, named,
                           {{"gpuGflops", &pool.gpu_gflops},
                            {"pricePerGpuHour", &pool.price_per_gpu_hour},
                            {"bandwidthBytesPerSecond", &pool.bandwidth},
                            {"storageBandwidthBytesPerSecond", &pool.storage_bandwidth},
                            {"startupSeconds", &pool.startup_seconds},
                            {"cpuPerNode", &pool.cpu_per_node},
                            {"memoryPerNode", &pool.memory_per_node}});
}

// capacityType and, for spot capacity, how often its nodes are reclaimed, with what notice, and
// how soon they come back.
Expected<void> read_capacity(const json& p, const std::string& named, NodePool& pool) {
  if (p.contains("capacityType") && !p["capacityType"].is_null()) {
    const json& type = p["capacityType"];
    if (!type.is_string() || (type != "Spot" && type != "OnDemand")) {
      return error(named + ".capacityType: must be OnDemand or Spot, got " + type.dump());
    }
    pool.spot = type == "Spot";
  }
  return read_non_negative(p, named,
                           {{"interruptionsPerHour", &pool.interruptions_per_hour},
                            {"reclaimNoticeSeconds", &pool.reclaim_notice_seconds},
                            {"replacementSeconds", &pool.replacement_seconds}});
}

// taints: [{key, value, effect}], put on every node of the pool.
Expected<void> read_taints(const json& p, const std::string& named, NodePool& pool) {
  if (!p.contains("taints") || p["taints"].is_null()) return {};
  if (!p["taints"].is_array()) return error(named + ".taints: must be a list");
  for (std::size_t t = 0; t < p["taints"].size(); ++t) {
    const json& taint = p["taints"][t];
    const std::string at = fmt::format("{}.taints[{}]", named, t);
    if (!taint.is_object() || !taint.contains("key") || !taint["key"].is_string() ||
        taint["key"].get<std::string>().empty()) {
      return error(at + ".key: required, a non-empty string");
    }
    const std::string effect = taint.value("effect", "");
    if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
      return error(at + ".effect: must be NoSchedule, PreferNoSchedule or NoExecute");
    }
    if (taint.contains("value") && !taint["value"].is_string()) {
      return error(at + ".value: must be a string");
    }
    json kept = {{"key", taint["key"]}, {"effect", effect}};
    if (taint.contains("value")) kept["value"] = taint["value"];
    pool.taints.push_back(std::move(kept));
  }
  return {};
}

// zone (default "<name>-zone") and interPool, the bandwidth into this pool from each other one.
Expected<void> read_topology(const json& p, const std::string& named, NodePool& pool) {
  if (p.contains("zone")) {
    if (!p["zone"].is_string()) return error(named + ".zone: must be a string");
    pool.zone = p["zone"].get<std::string>();
  }
  if (pool.zone.empty()) pool.zone = pool.name + "-zone";
  if (p.contains("interPool") && !p["interPool"].is_null()) {
    if (!p["interPool"].is_object()) {
      return error(named + ".interPool: must be a mapping from pool name to bandwidth");
    }
    for (const auto& [source, value] : p["interPool"].items()) {
      auto v = read_number(p["interPool"], source, named + ".interPool");
      if (!v) return unexpected(v.error());
      if (*v) pool.inter_pool[source] = **v;
    }
  }
  return {};
}

// pools[i]; `earlier` are the pools before it (names are unique).
Expected<NodePool> parse_pool(const json& p, std::size_t i, const std::vector<NodePool>& earlier) {
  const std::string where = fmt::format("pools[{}]", i);
  if (!p.is_object()) return error(where + ": must be a mapping");
  NodePool pool;
  if (!p.contains("name") || !p["name"].is_string() || p["name"].get<std::string>().empty()) {
    return error(where + ".name: required, a non-empty string");
  }
  pool.name = p["name"].get<std::string>();
  const std::string named = where + " (" + pool.name + ")";
  for (const auto& other : earlier) {
    if (other.name == pool.name) return error(named + ".name: duplicate pool name");
  }
  if (p.contains("gpuType")) {
    if (!p["gpuType"].is_string()) return error(named + ".gpuType: must be a string");
    pool.gpu_type = p["gpuType"].get<std::string>();
  }
  for (auto read : {read_size, read_figures, read_capacity, read_taints, read_topology}) {
    if (auto done = read(p, named, pool); !done) return unexpected(done.error());
  }
  return pool;
}

}  // namespace

Expected<std::vector<NodePool>> parse_node_pools(const json& document) {
  if (!document.is_object() || !document.contains("pools") || !document["pools"].is_array()) {
    return error("pools: a pools file must have a top-level list named \"pools\"");
  }
  std::vector<NodePool> pools;
  const json& list = document["pools"];
  for (size_t i = 0; i < list.size(); ++i) {
    auto pool = parse_pool(list[i], i, pools);
    if (!pool) return unexpected(pool.error());
    pools.push_back(std::move(*pool));
  }
  return pools;
}

Expected<std::vector<NodePool>> read_node_pools_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error("cannot read pools file " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = yaml_to_json(text.str(), path);
  if (!doc) return unexpected(doc.error());
  auto pools = parse_node_pools(*doc);
  if (!pools) return error(path + ": " + pools.error().message);
  return pools;
}

std::vector<json> node_objects(const std::vector<NodePool>& pools, const std::string& now) {
  std::vector<json> nodes;
  for (const auto& pool : pools) {
    for (int i = 0; i < pool.nodes; ++i) {
      nodes.push_back(node_object(pool, fmt::format("{}-{}", pool.name, i), now));
    }
  }
  return nodes;
}

json node_object(const NodePool& pool, const std::string& name, const std::string& now) {
  json labels = {{"depl.dev/pool", pool.name},
                 {"topology.kubernetes.io/zone", pool.zone},
                 {"kubernetes.io/hostname", name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"}};
  if (!pool.gpu_type.empty()) labels["nvidia.com/gpu.product"] = pool.gpu_type;
  labels[kCapacityTypeLabel] = pool.spot ? "spot" : "on-demand";
  json annotations = {{"depl.dev/gpu-gflops", number_text(pool.gpu_gflops)},
                      {"depl.dev/price-per-gpu-hour", number_text(pool.price_per_gpu_hour)}};
  if (pool.bandwidth > 0) annotations["depl.dev/bandwidth"] = number_text(pool.bandwidth);
  if (pool.storage_bandwidth > 0) {
    annotations["depl.dev/storage-bandwidth"] = number_text(pool.storage_bandwidth);
  }
  if (pool.startup_seconds >= 0) {
    annotations["depl.dev/startup-seconds"] = number_text(pool.startup_seconds);
  }
  if (!pool.inter_pool.empty()) {
    std::string text;
    for (const auto& [source, bw] : pool.inter_pool) {
      text += (text.empty() ? "" : ",") + source + "=" + number_text(bw);
    }
    annotations["depl.dev/inter-pool"] = text;
  }
  if (pool.interruptions_per_hour >= 0) {
    annotations["depl.dev/interruptions-per-hour"] = number_text(pool.interruptions_per_hour);
  }
  json metadata = {{"name", name}, {"labels", labels}, {"annotations", annotations}};
  if (pool.spot) metadata["finalizers"] = json::array({kTerminationFinalizer});
  json spec = {{"podCIDR", "127.0.0.0/8"}};
  if (!pool.taints.empty()) spec["taints"] = pool.taints;
  json resources = {{"cpu", number_text(pool.cpu_per_node)},
                    {"memory", number_text(pool.memory_per_node)},
                    {"pods", std::to_string(pool.max_pods_per_node)},
                    {"ephemeral-storage", "1Ti"},
                    {"nvidia.com/gpu", std::to_string(pool.gpus_per_node)}};
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", metadata},
               {"spec", spec},
               {"status",
                {{"capacity", resources},
                 {"allocatable", resources},
                 {"conditions", json::array({{{"type", "Ready"},
                                              {"status", "True"},
                                              {"reason", "KubeletReady"},
                                              {"message", "kubelet is posting ready status"},
                                              {"lastHeartbeatTime", now},
                                              {"lastTransitionTime", now}}})},
                 {"addresses", json::array({{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                                            {{"type", "Hostname"}, {"address", name}}})},
                 {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}},
                 {"nodeInfo",
                  {{"machineID", name},
                   {"systemUUID", name},
                   {"bootID", name},
                   {"kernelVersion", "simulated"},
                   {"osImage", "depl dev cluster"},
                   {"containerRuntimeVersion", "depl://local-process"},
                   {"kubeletVersion", "v1.32.0-depl"},
                   {"kubeProxyVersion", "v1.32.0-depl"},
                   {"operatingSystem", "linux"},
                   {"architecture", "amd64"}}}}}};
  return node;
}

}  // namespace depl::devcluster
