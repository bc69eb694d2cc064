#include "depl/controller/pool_discovery.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "depl/common/quantity.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

const json* find_path(const json& object, std::initializer_list<const char*> path) {
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string string_at(const json& object, std::initializer_list<const char*> path) {
  const json* v = find_path(object, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// A quantity that may be written as a JSON number or a string; nullopt when absent or bad.
std::optional<double> quantity_of(const json* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_number()) return v->get<double>();
  if (!v->is_string()) return std::nullopt;
  auto q = parse_quantity(v->get<std::string>());
  if (!q) return std::nullopt;
  return *q;
}

std::optional<double> annotation_quantity(const json& node, const char* key) {
  const json* annotations = find_path(node, {"metadata", "annotations"});
  if (annotations == nullptr || !annotations->is_object()) return std::nullopt;
  auto it = annotations->find(key);
  if (it == annotations->end()) return std::nullopt;
  return quantity_of(&*it);
}

int gpus_of(const json* resources) {
  auto q = quantity_of(resources);
  return q ? static_cast<int>(std::floor(*q + 1e-9)) : 0;
}

// Pool-level figures are taken conservatively across the pool's nodes: the slowest GPU, the
// highest price, the lowest bandwidths, the longest startup.
struct PoolAccumulator {
  solver::Pool pool;
  bool first = true;
  bool mixed_capacity = false;
  json spot_tolerations = json::array();
};

void merge_min(double& into, double value, bool first) {
  into = first ? value : std::min(into, value);
}
void merge_max(double& into, double value, bool first) {
  into = first ? value : std::max(into, value);
}

}  // namespace

bool node_ready(const json& node) {
  const json* conditions = find_path(node, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const auto& c : *conditions) {
    if (c.is_object() && c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

std::string node_pool(const json& node, std::string* label) {
  const json* labels = find_path(node, {"metadata", "labels"});
  if (labels == nullptr || !labels->is_object()) return "";
  for (const char* key : kPoolLabels) {
    auto it = labels->find(key);
    if (it != labels->end() && it->is_string() && !it->get<std::string>().empty()) {
      if (label != nullptr) *label = key;
      return it->get<std::string>();
    }
  }
  return "";
}

solver::CapacityType node_capacity_type(const json& node) {
  const json* labels = find_path(node, {"metadata", "labels"});
  if (labels == nullptr || !labels->is_object()) return solver::CapacityType::OnDemand;
  for (const SpotLabel& spot : kSpotLabels) {
    auto it = labels->find(spot.key);
    if (it != labels->end() && it->is_string() && it->get<std::string>() == spot.value) {
      return solver::CapacityType::Spot;
    }
  }
  return solver::CapacityType::OnDemand;
}

std::string node_reclaim_taint(const json& node) {
  const json* taints = find_path(node, {"spec", "taints"});
  if (taints == nullptr || !taints->is_array()) return "";
  for (const auto& taint : *taints) {
    if (!taint.is_object()) continue;
    const std::string key = taint.value("key", "");
    for (const char* reclaim : kReclaimTaints) {
      if (key == reclaim) return key;
    }
  }
  return "";
}

bool pod_is_terminal(const json& pod) {
  const std::string phase = string_at(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

int pod_gpu_request(const json& pod) {
  const json* containers = find_path(pod, {"spec", "containers"});
  if (containers == nullptr || !containers->is_array()) return 0;
  int total = 0;
  for (const auto& c : *containers) {
    const int requested = gpus_of(find_path(c, {"resources", "requests", kGpuResource}));
    const int limited = gpus_of(find_path(c, {"resources", "limits", kGpuResource}));
    total += std::max(requested, limited);
  }
  return total;
}

GpuCatalog parse_gpu_catalog(const json& config_map, std::vector<std::string>& problems) {
  GpuCatalog catalog;
  const json* data = find_path(config_map, {"data"});
  if (data == nullptr || !data->is_object()) return catalog;
  for (auto it = data->begin(); it != data->end(); ++it) {
    const std::string where = fmt::format("depl-gpu-catalog data.{}", it.key());
    if (!it->is_string()) {
      problems.push_back(where + ": must be a JSON string");
      continue;
    }
    json entry = json::parse(it->get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (!entry.is_object()) {
      problems.push_back(where +
                         ": must be JSON like {\"gflops\": 19500, \"pricePerGpuHour\": 2.9}");
      continue;
    }
    auto gflops = quantity_of(entry.contains("gflops") ? &entry["gflops"] : nullptr);
    auto price =
        quantity_of(entry.contains("pricePerGpuHour") ? &entry["pricePerGpuHour"] : nullptr);
    if (!gflops || *gflops <= 0) {
      problems.push_back(where + ".gflops: must be a number > 0");
      continue;
    }
    if (!price || *price < 0) {
      problems.push_back(where + ".pricePerGpuHour: must be a number >= 0");
      continue;
    }
    catalog[it.key()] = {*gflops, *price};
  }
  return catalog;
}

bool pod_holds_gpus(const json& pod) {
  return !string_at(pod, {"spec", "nodeName"}).empty() && !pod_is_terminal(pod) &&
         pod_gpu_request(pod) > 0;
}

GpusByNode gpus_held_by_node(const std::vector<json>& pods, const std::string& owner_uid) {
  GpusByNode used;
  for (const auto& pod : pods) {
    if (!pod_holds_gpus(pod)) continue;
    if (!owner_uid.empty()) {
      const json* owners = find_path(pod, {"metadata", "ownerReferences"});
      bool own = false;
      if (owners != nullptr && owners->is_array()) {
        for (const auto& o : *owners)
          own = own || (o.is_object() && o.value("uid", "") == owner_uid);
      }
      if (own) continue;
    }
    used[string_at(pod, {"spec", "nodeName"})] += pod_gpu_request(pod);
  }
  return used;
}

DiscoveredPools discover_pools(const std::vector<json>& nodes, const std::vector<json>& pods,
                               const GpuCatalog& catalog, const PoolDefaults& defaults,
                               const std::string& owner_uid,
                               const std::vector<Reservation>& reservations) {
  SharedObjects borrowed;
  borrowed.reserve(nodes.size());
  // Aliasing pointers without an owner: valid for the call, which is all they are used for.
  for (const auto& n : nodes) borrowed.emplace_back(std::shared_ptr<const json>(), &n);
  return discover_pools(borrowed, gpus_held_by_node(pods, owner_uid), catalog, defaults,
                        reservations);
}

namespace {

// What discovery reads of one node, parsed once per version of the node.
struct NodeFacts {
  std::string name, pool, label, product;
  bool ready = false;
  bool cordoned = false;
  std::string reclaim_taint;  // non-empty: the node is being reclaimed or drained
  int allocatable = 0;        // GPUs
  solver::CapacityType capacity = solver::CapacityType::OnDemand;
  json spot_tolerations = json::array();  // for the node's taints keyed by a spot label
  std::optional<double> gflops, price, bandwidth, storage_bandwidth, startup, interruptions;
  std::vector<std::pair<std::string, double>> inter_pool;  // source pool, bytes/s (> 0)
};

NodeFacts read_node(const json& node) {
  NodeFacts f;
  f.name = string_at(node, {"metadata", "name"});
  f.pool = node_pool(node, &f.label);
  if (f.pool.empty()) return f;
  f.ready = node_ready(node);
  const json* unschedulable = find_path(node, {"spec", "unschedulable"});
  f.cordoned =
      unschedulable != nullptr && unschedulable->is_boolean() && unschedulable->get<bool>();
  f.reclaim_taint = node_reclaim_taint(node);
  f.allocatable = gpus_of(find_path(node, {"status", "allocatable", kGpuResource}));
  f.capacity = node_capacity_type(node);
  if (const json* taints = find_path(node, {"spec", "taints"}); taints && taints->is_array()) {
    for (const auto& taint : *taints) {
      if (!taint.is_object()) continue;
      const std::string key = taint.value("key", "");
      const std::string effect = taint.value("effect", "");
      bool spot_key = false;
      for (const SpotLabel& spot : kSpotLabels) spot_key = spot_key || key == spot.key;
      if (!spot_key || (effect != "NoSchedule" && effect != "NoExecute")) continue;
      json toleration = {{"key", key}, {"operator", "Equal"}, {"effect", effect}};
      toleration["value"] = taint.value("value", "");
      f.spot_tolerations.push_back(std::move(toleration));
    }
  }
  f.product = string_at(node, {"metadata", "labels", kGpuProductLabel});
  f.gflops = annotation_quantity(node, kGflopsAnnotation);
  f.price = annotation_quantity(node, kPriceAnnotation);
  f.bandwidth = annotation_quantity(node, kBandwidthAnnotation);
  f.storage_bandwidth = annotation_quantity(node, kStorageBandwidthAnnotation);
  f.startup = annotation_quantity(node, kStartupAnnotation);
  f.interruptions = annotation_quantity(node, kInterruptionsAnnotation);
  const std::string inter = string_at(node, {"metadata", "annotations", kInterPoolAnnotation});
  std::size_t start = 0;
  while (start < inter.size()) {
    std::size_t end = inter.find(',', start);
    if (end == std::string::npos) end = inter.size();
    const std::string item = inter.substr(start, end - start);
    const std::size_t eq = item.find('=');
    if (eq != std::string::npos) {
      auto bw = parse_quantity(item.substr(eq + 1));
      if (bw && *bw > 0) f.inter_pool.emplace_back(item.substr(0, eq), *bw);
    }
    start = end + 1;
  }
  return f;
}

// Every reconcile that plans reads every node; parsing them (labels, annotations, quantities)
// was the controller's largest cost in a burst of jobs (~40% of its CPU with 200 nodes). The
// informer's objects are immutable (a change is a new object), so an object's address names one
// version of a node for as long as the memo holds a reference to it. Objects without an owner
// (the by-value overload's aliases of a caller's vector) are parsed every time.
class NodeFactsMemo {
 public:
  std::vector<std::shared_ptr<const NodeFacts>> facts(const SharedObjects& nodes) {
    std::vector<std::shared_ptr<const NodeFacts>> out;
    out.reserve(nodes.size());
    std::lock_guard lock(mutex_);
    for (const auto& node : nodes) {
      if (node.use_count() == 0) {
        out.push_back(std::make_shared<const NodeFacts>(read_node(*node)));
        continue;
      }
      auto [it, inserted] = memo_.try_emplace(node.get());
      if (inserted) it->second = {node, std::make_shared<const NodeFacts>(read_node(*node))};
      out.push_back(it->second.second);
    }
    // Forget versions no longer listed once they outnumber the nodes.
    if (memo_.size() > 2 * nodes.size() + 64) {
      std::unordered_map<const json*, Entry> kept;
      for (const auto& node : nodes) {
        if (auto it = memo_.find(node.get()); it != memo_.end()) kept.insert(*it);
      }
      memo_ = std::move(kept);
    }
    return out;
  }

 private:
  using Entry = std::pair<std::shared_ptr<const json>, std::shared_ptr<const NodeFacts>>;
  std::mutex mutex_;
  std::unordered_map<const json*, Entry> memo_;
};

NodeFactsMemo& node_facts_memo() {
  static NodeFactsMemo memo;
  return memo;
}

}  // namespace

int node_offered_gpus(const json& node) {
  const NodeFacts f = read_node(node);
  if (f.pool.empty() || !f.ready || f.cordoned || !f.reclaim_taint.empty()) return 0;
  return std::max(0, f.allocatable);
}

DiscoveredPools discover_pools(const SharedObjects& nodes, const GpusByNode& gpus_in_use,
                               const GpuCatalog& catalog, const PoolDefaults& defaults,
                               const std::vector<Reservation>& reservations) {
  DiscoveredPools out;
  std::map<std::string, PoolAccumulator> pools;
  for (const auto& facts : node_facts_memo().facts(nodes)) {
    const NodeFacts& node = *facts;
    const std::string& name = node.name;
    const std::string& pool = node.pool;
    if (pool.empty()) continue;  // not a node the operator schedules on
    if (!node.ready) {
      out.notes.push_back(fmt::format("node {}: not Ready, left out of pool {}", name, pool));
      continue;
    }
    if (node.cordoned) {
      out.notes.push_back(fmt::format("node {}: cordoned, left out of pool {}", name, pool));
      continue;
    }
    if (!node.reclaim_taint.empty()) {
      out.notes.push_back(fmt::format("node {}: being reclaimed ({} taint), left out of pool {}",
                                      name, node.reclaim_taint, pool));
      continue;
    }
    const int allocatable = node.allocatable;
    if (allocatable <= 0) continue;
    const std::string& product = node.product;
    auto catalog_it = catalog.find(product);
    std::optional<double> gflops = node.gflops;
    std::optional<double> price = node.price;
    if (!gflops && catalog_it != catalog.end()) gflops = catalog_it->second.gflops;
    if (!price && catalog_it != catalog.end()) price = catalog_it->second.price_per_gpu_hour;

    PoolAccumulator& acc = pools[pool];
    acc.pool.name = pool;
    out.pool_label.emplace(pool, node.label);
    if (!gflops || *gflops <= 0) {
      out.notes.push_back(fmt::format(
          "node {}: GFLOP/s of GPU \"{}\" unknown (annotate {} or add it to depl-gpu-catalog)",
          name, product, kGflopsAnnotation));
      continue;
    }
    const auto held = gpus_in_use.find(name);
    const int used = held != gpus_in_use.end() ? held->second : 0;
    acc.pool.gpus += std::max(0, allocatable - used);
    acc.pool.nodes += 1;
    acc.pool.gpus_per_node = std::max(acc.pool.gpus_per_node, allocatable);
    if (acc.pool.gpu_type.empty()) acc.pool.gpu_type = product;
    merge_min(acc.pool.gpu_gflops, *gflops, acc.first);
    merge_max(acc.pool.price_per_gpu_hour, price.value_or(0), acc.first);
    merge_min(acc.pool.bandwidth, node.bandwidth.value_or(defaults.bandwidth), acc.first);
    merge_min(acc.pool.storage_bandwidth,
              node.storage_bandwidth.value_or(defaults.storage_bandwidth), acc.first);
    merge_max(acc.pool.startup_seconds, node.startup.value_or(0), acc.first);
    // A pool with one spot node is planned as spot: a phase may land on that node.
    const double rate = node.interruptions && *node.interruptions >= 0
                            ? *node.interruptions
                            : solver::default_interruptions_per_hour(node.capacity);
    if (!acc.first && acc.pool.capacity_type != node.capacity) {
      acc.mixed_capacity = true;
    }
    if (node.capacity == solver::CapacityType::Spot) {
      acc.pool.capacity_type = solver::CapacityType::Spot;
    }
    merge_max(acc.pool.interruptions_per_hour, rate, acc.first);
    for (const auto& toleration : node.spot_tolerations) {
      if (std::find(acc.spot_tolerations.begin(), acc.spot_tolerations.end(), toleration) ==
          acc.spot_tolerations.end()) {
        acc.spot_tolerations.push_back(toleration);
      }
    }
    for (const auto& [from, bw] : node.inter_pool) {
      auto [it, inserted] = acc.pool.inter_pool.emplace(from, bw);
      if (!inserted) it->second = std::min(it->second, bw);
    }
    acc.first = false;
  }

  for (auto& [name, acc] : pools) {
    if (acc.first) continue;  // no usable node
    for (const auto& r : reservations) {
      if (r.pool == name) acc.pool.gpus = std::max(0, acc.pool.gpus - r.gpus);
    }
    if (acc.mixed_capacity) {
      out.notes.push_back(fmt::format(
          "pool {}: spot and on-demand nodes, planned as spot ({} interruptions per hour); "
          "label them into two pools to plan them apart",
          name, acc.pool.interruptions_per_hour));
    }
    if (acc.pool.capacity_type == solver::CapacityType::Spot && !acc.spot_tolerations.empty()) {
      out.spot_tolerations.emplace(name, std::move(acc.spot_tolerations));
    }
    out.pools.push_back(std::move(acc.pool));
  }
  return out;
}

}  // namespace depl::controller
