#include "depl/controller/pool_discovery.hpp"

#include <gtest/gtest.h>

namespace depl::controller {
namespace {

using nlohmann::json;

json node(const std::string& name, const std::string& pool, int gpus, bool ready = true,
          json annotations = json::object()) {
  return json{
      {"metadata",
       {{"name", name},
        {"labels", {{"depl.dev/pool", pool}, {"nvidia.com/gpu.product", "NVIDIA-A100"}}},
        {"annotations", annotations}}},
      {"status",
       {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}, {"cpu", "8"}}},
        {"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
}

json pod(const std::string& node_name, int gpus, const std::string& phase = "Running",
         const std::string& owner = "") {
  json p = {
      {"metadata", {{"name", "p"}}},
      {"spec",
       {{"nodeName", node_name},
        {"containers",
         json::array({{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", gpus}}}}}}})}}},
      {"status", {{"phase", phase}}}};
  if (!owner.empty()) p["metadata"]["ownerReferences"] = json::array({{{"uid", owner}}});
  return p;
}

GpuCatalog catalog() {
  return {{"NVIDIA-A100", {19500, 3.0}}};
}

TEST(PoolDiscovery, CountsFreeGpusPerPool) {
  std::vector<json> nodes = {node("a-0", "a", 8), node("a-1", "a", 8), node("b-0", "b", 4)};
  std::vector<json> pods = {pod("a-0", 3), pod("a-1", 8, "Succeeded"), pod("b-0", 1)};
  auto found = discover_pools(nodes, pods, catalog(), PoolDefaults{});
  ASSERT_EQ(found.pools.size(), 2u);
  EXPECT_EQ(found.pools[0].name, "a");
  EXPECT_EQ(found.pools[0].gpus, 13);  // 16 minus 3 in use; the finished pod frees its GPUs
  EXPECT_EQ(found.pools[0].nodes, 2);
  EXPECT_EQ(found.pools[1].gpus, 3);
  EXPECT_DOUBLE_EQ(found.pools[0].gpu_gflops, 19500);
  EXPECT_DOUBLE_EQ(found.pools[0].price_per_gpu_hour, 3.0);
  EXPECT_EQ(found.pool_label.at("a"), "depl.dev/pool");
}

TEST(PoolDiscovery, LeavesOutNotReadyCordonedAndUnknownNodes) {
  json cordoned = node("a-2", "a", 8);
  cordoned["spec"]["unschedulable"] = true;
  json unknown = node("c-0", "c", 8);
  unknown["metadata"]["labels"]["nvidia.com/gpu.product"] = "Mystery-GPU";
  std::vector<json> nodes = {node("a-0", "a", 8), node("a-1", "a", 8, false), cordoned, unknown};
  auto found = discover_pools(nodes, {}, catalog(), PoolDefaults{});
  ASSERT_EQ(found.pools.size(), 1u);
  EXPECT_EQ(found.pools[0].gpus, 8);
  ASSERT_EQ(found.notes.size(), 3u);
  EXPECT_NE(found.notes[0].find("not Ready"), std::string::npos);
  EXPECT_NE(found.notes[1].find("cordoned"), std::string::npos);
  EXPECT_NE(found.notes[2].find("Mystery-GPU"), std::string::npos);
}

TEST(PoolDiscovery, AnnotationsOverrideCatalogConservatively) {
  std::vector<json> nodes = {
      node("a-0", "a", 8, true,
           {{"depl.dev/gpu-gflops", "20000"},
            {"depl.dev/bandwidth", "10G"},
            {"depl.dev/inter-pool", "b=2G,c=1G"},
            {"depl.dev/price-per-gpu-hour", "4"}}),
      node("a-1", "a", 8, true, {{"depl.dev/bandwidth", "5G"}, {"depl.dev/inter-pool", "b=3G"}})};
  auto found = discover_pools(nodes, {}, catalog(), PoolDefaults{});
  ASSERT_EQ(found.pools.size(), 1u);
  const auto& p = found.pools[0];
  EXPECT_DOUBLE_EQ(p.gpu_gflops, 19500);  // the slower node sets the pace
  EXPECT_DOUBLE_EQ(p.price_per_gpu_hour, 4);
  EXPECT_DOUBLE_EQ(p.bandwidth, 5e9);
  EXPECT_DOUBLE_EQ(p.inter_pool.at("b"), 2e9);
  EXPECT_DOUBLE_EQ(p.inter_pool.at("c"), 1e9);
}

TEST(PoolDiscovery, OwnPodsAndReservations) {
  std::vector<json> nodes = {node("a-0", "a", 8)};
  std::vector<json> pods = {pod("a-0", 2, "Running", "job-1"), pod("a-0", 1, "Pending")};
  auto mine = discover_pools(nodes, pods, catalog(), PoolDefaults{}, "job-1");
  EXPECT_EQ(mine.pools[0].gpus, 7);
  auto reserved = discover_pools(nodes, pods, catalog(), PoolDefaults{}, "job-1", {{"a", 5}});
  EXPECT_EQ(reserved.pools[0].gpus, 2);
  auto over = discover_pools(nodes, pods, catalog(), PoolDefaults{}, "", {{"a", 50}});
  EXPECT_EQ(over.pools[0].gpus, 0);
}

TEST(PoolDiscovery, WellKnownCloudLabels) {
  json gke = node("g-0", "x", 4);
  gke["metadata"]["labels"].erase("depl.dev/pool");
  gke["metadata"]["labels"]["cloud.google.com/gke-nodepool"] = "gpu-pool";
  auto found = discover_pools(std::vector<json>{gke}, {}, catalog(), PoolDefaults{});
  ASSERT_EQ(found.pools.size(), 1u);
  EXPECT_EQ(found.pools[0].name, "gpu-pool");
  EXPECT_EQ(found.pool_label.at("gpu-pool"), "cloud.google.com/gke-nodepool");
}

// Each cloud's spot label makes a pool spot, with the documented default rate unless the node's
// annotation says otherwise; on-demand pools are never interrupted.
TEST(PoolDiscovery, SpotLabelsOfEveryCloudAndTheRateAnnotation) {
  const std::vector<std::pair<std::string, std::string>> spot_labels = {
      {"karpenter.sh/capacity-type", "spot"},
      {"eks.amazonaws.com/capacityType", "SPOT"},
      {"cloud.google.com/gke-spot", "true"},
      {"cloud.google.com/gke-preemptible", "true"},
      {"kubernetes.azure.com/scalesetpriority", "spot"}};
  for (const auto& [key, value] : spot_labels) {
    json spot = node("s-0", "s", 8);
    spot["metadata"]["labels"][key] = value;
    auto found =
        discover_pools(std::vector<json>{spot, node("o-0", "o", 8)}, {}, catalog(), PoolDefaults{});
    ASSERT_EQ(found.pools.size(), 2u) << key;
    EXPECT_EQ(found.pools[0].capacity_type, solver::CapacityType::OnDemand) << key;
    EXPECT_DOUBLE_EQ(found.pools[0].interruptions_per_hour, 0) << key;
    EXPECT_EQ(found.pools[1].capacity_type, solver::CapacityType::Spot) << key;
    EXPECT_DOUBLE_EQ(found.pools[1].interruptions_per_hour,
                     solver::kDefaultSpotInterruptionsPerHour)
        << key;
  }
  json on_demand = node("o-0", "o", 8);
  on_demand["metadata"]["labels"]["karpenter.sh/capacity-type"] = "on-demand";
  json rated = node("s-0", "s", 8, true, {{"depl.dev/interruptions-per-hour", "0.75"}});
  rated["metadata"]["labels"]["cloud.google.com/gke-spot"] = "true";
  auto found = discover_pools(std::vector<json>{on_demand, rated}, {}, catalog(), PoolDefaults{});
  ASSERT_EQ(found.pools.size(), 2u);
  EXPECT_EQ(found.pools[0].capacity_type, solver::CapacityType::OnDemand);
  EXPECT_DOUBLE_EQ(found.pools[1].interruptions_per_hour, 0.75);
}

// A pool mixing spot and on-demand nodes is planned as spot (a phase may land on a spot node),
// at the highest rate of its nodes, and the operator is told.
TEST(PoolDiscovery, MixedPoolIsPlannedAsSpotAndSaysSo) {
  json spot = node("a-1", "a", 8, true, {{"depl.dev/interruptions-per-hour", "0.3"}});
  spot["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot";
  auto found =
      discover_pools(std::vector<json>{node("a-0", "a", 8), spot}, {}, catalog(), PoolDefaults{});
  ASSERT_EQ(found.pools.size(), 1u);
  EXPECT_EQ(found.pools[0].capacity_type, solver::CapacityType::Spot);
  EXPECT_DOUBLE_EQ(found.pools[0].interruptions_per_hour, 0.3);
  ASSERT_EQ(found.notes.size(), 1u);
  EXPECT_NE(found.notes[0].find("spot and on-demand"), std::string::npos) << found.notes[0];
}

// The spot taints a pool's nodes carry become the tolerations of that pool (and of no other);
// a node being reclaimed (a reclaim taint) is leaving and is left out.
TEST(PoolDiscovery, SpotTaintsAndReclaimedNodes) {
  json aks = node("s-0", "s", 8);
  aks["metadata"]["labels"]["kubernetes.azure.com/scalesetpriority"] = "spot";
  aks["spec"]["taints"] =
      json::array({{{"key", "kubernetes.azure.com/scalesetpriority"},
                    {"value", "spot"},
                    {"effect", "NoSchedule"}},
                   {{"key", "example.com/dedicated"}, {"value", "ml"}, {"effect", "NoSchedule"}}});
  json leaving = node("s-1", "s", 8);
  leaving["metadata"]["labels"]["kubernetes.azure.com/scalesetpriority"] = "spot";
  leaving["spec"]["taints"] =
      json::array({{{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}});
  auto found = discover_pools(std::vector<json>{aks, leaving, node("o-0", "o", 8)}, {}, catalog(),
                              PoolDefaults{});
  ASSERT_EQ(found.pools.size(), 2u);
  EXPECT_EQ(found.pools[1].name, "s");
  EXPECT_EQ(found.pools[1].gpus, 8) << "the node being reclaimed is not counted";
  ASSERT_EQ(found.spot_tolerations.count("s"), 1u);
  EXPECT_EQ(found.spot_tolerations.at("s"),
            json::array({{{"key", "kubernetes.azure.com/scalesetpriority"},
                          {"operator", "Equal"},
                          {"value", "spot"},
                          {"effect", "NoSchedule"}}}));
  EXPECT_EQ(found.spot_tolerations.count("o"), 0u);
  ASSERT_EQ(found.notes.size(), 1u);
  EXPECT_NE(found.notes[0].find("being reclaimed"), std::string::npos) << found.notes[0];
}

// The informer's node objects are parsed once per version: a node that changes is a new object,
// and what discovery then reports follows it (the memo is keyed by object, not by name).
TEST(PoolDiscovery, SharedNodesFollowEveryNewVersion) {
  auto a0 = std::make_shared<const json>(node("a-0", "a", 8));
  auto a1 = std::make_shared<const json>(node("a-1", "a", 8));
  SharedObjects nodes = {a0, a1};
  auto first = discover_pools(nodes, {}, catalog(), PoolDefaults{});
  ASSERT_EQ(first.pools.size(), 1u);
  EXPECT_EQ(first.pools[0].gpus, 16);
  // The same objects again: the same answer.
  EXPECT_EQ(discover_pools(nodes, {}, catalog(), PoolDefaults{}).pools[0].gpus, 16);
  // a-1 goes NotReady, then is relabelled into another pool, annotated slower: each version
  // counts, whatever the memo held for the name.
  nodes[1] = std::make_shared<const json>(node("a-1", "a", 8, false));
  auto not_ready = discover_pools(nodes, {}, catalog(), PoolDefaults{});
  EXPECT_EQ(not_ready.pools[0].gpus, 8);
  ASSERT_EQ(not_ready.notes.size(), 1u);
  nodes[1] =
      std::make_shared<const json>(node("a-1", "b", 8, true, {{"depl.dev/gpu-gflops", "9000"}}));
  auto moved = discover_pools(nodes, {}, catalog(), PoolDefaults{});
  ASSERT_EQ(moved.pools.size(), 2u);
  EXPECT_EQ(moved.pools[1].name, "b");
  EXPECT_DOUBLE_EQ(moved.pools[1].gpu_gflops, 9000);
  EXPECT_TRUE(moved.notes.empty());
  // Many versions later (past what the memo keeps) the answers still follow the objects.
  for (int i = 1; i <= 300; ++i) {
    nodes[0] = std::make_shared<const json>(node("a-0", "a", 1 + i % 8));
    EXPECT_EQ(discover_pools(nodes, {}, catalog(), PoolDefaults{}).pools[0].gpus, 1 + i % 8);
  }
}

TEST(PoolDiscovery, CatalogParsingReportsBadEntries) {
  json cm = {{"data",
              {{"NVIDIA-A100", R"({"gflops": 19500, "pricePerGpuHour": 2.9})"},
               {"Broken", "not json"},
               {"NoSpeed", R"({"pricePerGpuHour": 1})"}}}};
  std::vector<std::string> problems;
  auto c = parse_gpu_catalog(cm, problems);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_DOUBLE_EQ(c.at("NVIDIA-A100").price_per_gpu_hour, 2.9);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[1].find("NoSpeed.gflops"), std::string::npos) << problems[1];
}

}  // namespace
}  // namespace depl::controller
