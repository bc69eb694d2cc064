// Pure parts of the dev cluster's server side: REST path parsing, version preference, the pools
// file reader and node objects, and the scheduler's decision function.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "depl/common/yaml_json.hpp"
#include "server/api_path.hpp"
#include "server/discovery.hpp"
#include "sim/node_pools.hpp"
#include "sim/scheduling.hpp"

namespace depl::devcluster {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

TEST(ApiPathTest, ParsesNamespacedClusterScopedWatchAndSubresources) {
  auto p = parse_api_path("/apis/apps/v1/namespaces/ns1/deployments/web/status");
  EXPECT_EQ(p.kind, ApiPath::Kind::Resource);
  EXPECT_EQ(p.ref.group, "apps");
  EXPECT_EQ(p.ref.ns, "ns1");
  EXPECT_EQ(p.ref.plural, "deployments");
  EXPECT_EQ(p.ref.name, "web");
  EXPECT_EQ(p.ref.subresource, "status");
  auto ns = parse_api_path("/api/v1/namespaces/ns1");
  EXPECT_EQ(ns.ref.plural, "namespaces");
  EXPECT_EQ(ns.ref.name, "ns1");
  auto ns_status = parse_api_path("/api/v1/namespaces/ns1/status");
  EXPECT_EQ(ns_status.ref.plural, "namespaces");
  EXPECT_EQ(ns_status.ref.subresource, "status");
  auto pods_in_ns = parse_api_path("/api/v1/namespaces/ns1/pods");
  EXPECT_EQ(pods_in_ns.ref.ns, "ns1");
  EXPECT_EQ(pods_in_ns.ref.plural, "pods");
  auto watch = parse_api_path("/api/v1/watch/namespaces/ns1/pods/p");
  EXPECT_TRUE(watch.legacy_watch);
  EXPECT_EQ(watch.ref.name, "p");
  EXPECT_EQ(parse_api_path("/apis/apps/v1").kind, ApiPath::Kind::ResourceList);
  EXPECT_EQ(parse_api_path("/openapi/v3/apis/apps/v1").openapi_path, "apis/apps/v1");
  EXPECT_EQ(parse_api_path("/nonsense").kind, ApiPath::Kind::NotFound);
  EXPECT_EQ(parse_api_path("/api/v1/a/b/c/d").kind, ApiPath::Kind::NotFound);
}

TEST(DiscoveryTest, PrefersGaThenBetaThenAlpha) {
  EXPECT_TRUE(version_preferred("v1", "v1beta1"));
  EXPECT_TRUE(version_preferred("v2", "v1"));
  EXPECT_TRUE(version_preferred("v1beta2", "v1beta1"));
  EXPECT_TRUE(version_preferred("v1alpha1", "foo"));
  EXPECT_FALSE(version_preferred("v1alpha1", "v1beta1"));
}

TEST(NodePoolsTest, BuildsLabelledNodesFromAPoolsFile) {
  auto doc = yaml_to_json(R"(pools:
  - {name: a100, gpuType: A100, gpus: 16, gpusPerNode: 8, gpuGflops: 19500,
     pricePerGpuHour: 2.9, bandwidthBytesPerSecond: 10G, interPool: {t4: 1G}})");
  ASSERT_TRUE(doc);
  auto pools = parse_node_pools(*doc);
  ASSERT_TRUE(pools) << pools.error().message;
  auto nodes = node_objects(*pools, "2026-01-01T00:00:00Z");
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1]["metadata"]["name"], "a100-1");
  EXPECT_EQ(nodes[0]["metadata"]["labels"]["nvidia.com/gpu.product"], "A100");
  EXPECT_EQ(nodes[0]["metadata"]["annotations"]["depl.dev/bandwidth"], "10000000000");
  EXPECT_EQ(nodes[0]["metadata"]["annotations"]["depl.dev/inter-pool"], "t4=1000000000");
  EXPECT_EQ(nodes[0]["status"]["allocatable"]["nvidia.com/gpu"], "8");
}

TEST(NodePoolsTest, BadPoolsNameTheField) {
  auto bad = [](const std::string& yaml) {
    auto doc = yaml_to_json(yaml);
    auto pools = parse_node_pools(*doc);
    return pools ? std::string("ok") : pools.error().message;
  };
  EXPECT_THAT(bad("pools: [{name: a, gpus: 10, gpusPerNode: 4}]"), HasSubstr("pools[0] (a).gpus"));
  EXPECT_THAT(bad("pools: [{name: a, nodes: 2, gpusPerNode: -1}]"), HasSubstr("gpusPerNode"));
  EXPECT_THAT(bad("pools: [{name: a, gpus: 8, gpuGflops: fast}]"), HasSubstr("gpuGflops"));
  EXPECT_THAT(bad("pools: [{gpus: 8}]"), HasSubstr("pools[0].name"));
  EXPECT_THAT(bad("nodes: []"), HasSubstr("pools"));
}

// Every field of a pool, and the error of each kind of bad value, word for word.
TEST(NodePoolsTest, ReadsEveryFieldAndNamesEachBadOne) {
  auto doc = yaml_to_json(R"(pools:
  - {name: a, nodes: 2, gpusPerNode: 4, startupSeconds: 30, cpuPerNode: 8, memoryPerNode: 64Gi,
     capacityType: Spot, interruptionsPerHour: 0.5, reclaimNoticeSeconds: 120,
     replacementSeconds: 60, taints: [{key: k, value: v, effect: NoSchedule}], zone: z1,
     storageBandwidthBytesPerSecond: 1G}
  - {name: b, gpus: 8, nodes: 2, interPool: {a: 2G}})");
  ASSERT_TRUE(doc);
  auto pools = parse_node_pools(*doc);
  ASSERT_TRUE(pools) << pools.error().message;
  ASSERT_EQ(pools->size(), 2u);
  const NodePool& a = (*pools)[0];
  EXPECT_EQ(a.gpus_per_node, 4);
  EXPECT_EQ(a.nodes, 2);
  EXPECT_EQ(a.startup_seconds, 30);
  EXPECT_EQ(a.cpu_per_node, 8);
  EXPECT_EQ(a.memory_per_node, 64.0 * (1ull << 30));
  EXPECT_TRUE(a.spot);
  EXPECT_EQ(a.interruptions_per_hour, 0.5);
  EXPECT_EQ(a.reclaim_notice_seconds, 120);
  EXPECT_EQ(a.replacement_seconds, 60);
  EXPECT_EQ(a.taints, (nlohmann::json{{{"key", "k"}, {"effect", "NoSchedule"}, {"value", "v"}}}));
  EXPECT_EQ(a.zone, "z1");
  EXPECT_EQ(a.storage_bandwidth, 1e9);
  const NodePool& b = (*pools)[1];
  EXPECT_EQ(b.gpus_per_node, 4);
  EXPECT_FALSE(b.spot);
  EXPECT_EQ(b.zone, "b-zone");
  EXPECT_EQ(b.inter_pool, (std::map<std::string, double>{{"a", 2e9}}));
  EXPECT_EQ(b.startup_seconds, -1);

  auto bad = [](const std::string& yaml) {
    auto d = yaml_to_json(yaml);
    auto p = parse_node_pools(*d);
    return p ? std::string("ok") : p.error().message;
  };
  EXPECT_EQ(bad("pools: [3]"), "pools[0]: must be a mapping");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 1}, {name: a, gpus: 1}]"),
            "pools[1] (a).name: duplicate pool name");
  EXPECT_EQ(bad("pools: [{name: a, gpuType: [x], gpus: 1}]"),
            "pools[0] (a).gpuType: must be a string");
  EXPECT_EQ(bad("pools: [{name: a, nodes: 2}]"),
            "pools[0] (a): give two of gpus, nodes and gpusPerNode");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 5, nodes: 2}]"),
            "pools[0] (a).gpus: must be a multiple of nodes");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 1, startupSeconds: -1}]"),
            "pools[0] (a).startupSeconds: must be a finite non-negative number");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 1, capacityType: spot}]"),
            "pools[0] (a).capacityType: must be OnDemand or Spot, got \"spot\"");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 1, replacementSeconds: -2}]"),
            "pools[0] (a).replacementSeconds: must be a finite non-negative number");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 1, taints: x}]"), "pools[0] (a).taints: must be a list");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 1, taints: [{key: k, effect: Never}]}]"),
            "pools[0] (a).taints[0].effect: must be NoSchedule, PreferNoSchedule or NoExecute");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 1, taints: [{effect: NoSchedule}]}]"),
            "pools[0] (a).taints[0].key: required, a non-empty string");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 1, zone: [z]}]"), "pools[0] (a).zone: must be a string");
  EXPECT_EQ(bad("pools: [{name: a, gpus: 1, interPool: [b]}]"),
            "pools[0] (a).interPool: must be a mapping from pool name to bandwidth");
}

TEST(SchedulingTest, HonoursTaintsAndTolerations) {
  json node = {
      {"metadata", {{"name", "n"}, {"labels", {{"pool", "x"}}}}},
      {"spec", {{"taints", {{{"key", "gpu"}, {"value", "yes"}, {"effect", "NoSchedule"}}}}}},
      {"status",
       {{"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "10"}}},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  json pod = {{"spec", {{"containers", {{{"name", "c"}}}}}}};
  auto refused = choose_node(pod, {node}, {});
  EXPECT_FALSE(refused.node);
  EXPECT_THAT(refused.message, HasSubstr("untolerated taint {gpu: yes}"));
  pod["spec"]["tolerations"] = {{{"key", "gpu"}, {"operator", "Exists"}}};
  EXPECT_EQ(choose_node(pod, {node}, {}).node, "n");
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3";
  NodeUsage used{{"n", PodResources{2, 0, 0, 1}}};
  auto full = choose_node(pod, {node}, used);
  EXPECT_FALSE(full.node);
  EXPECT_THAT(full.message, HasSubstr("Insufficient cpu"));
}

json gpu_node(const std::string& name, int gpus, const std::string& pool = "a") {
  return {{"metadata", {{"name", name}, {"labels", {{"pool", pool}}}}},
          {"status",
           {{"allocatable", {{"cpu", "64"}, {"memory", "256Gi"}, {"nvidia.com/gpu", gpus}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json gpu_pod(int gpus) {
  return {{"spec",
           {{"containers",
             {{{"name", "c"}, {"resources", {{"requests", {{"nvidia.com/gpu", gpus}}}}}}}}}}};
}

TEST(SchedulingTest, TheFittingNodeLeftWithFewestFreeGpusWinsThenTheName) {
  const std::vector<json> nodes = {gpu_node("d", 8), gpu_node("c", 4), gpu_node("b", 4),
                                   gpu_node("a", 2)};
  // a cannot take 3; b and c are left with 1 each: the name decides.
  EXPECT_EQ(choose_node(gpu_pod(3), nodes, {}).node, "b");
  // With 2 of b's GPUs in use, c is the only one left with 1.
  NodeUsage used{{"b", PodResources{0, 0, 2, 1}}};
  EXPECT_EQ(choose_node(gpu_pod(3), nodes, used).node, "c");
  EXPECT_EQ(choose_node(gpu_pod(2), nodes, used).node, "a");
}

TEST(SchedulingTest, ANodeThatWouldWinIsPassedOverWhenItsLabelsTaintsOrStateRefuseThePod) {
  std::vector<json> nodes = {gpu_node("a", 2, "x"), gpu_node("b", 2), gpu_node("c", 3),
                             gpu_node("d", 4), gpu_node("e", 8)};
  json pod = gpu_pod(2);
  pod["spec"]["nodeSelector"] = {{"pool", "a"}};
  EXPECT_EQ(choose_node(pod, nodes, {}).node, "b");  // a is the tightest fit, but pool x
  nodes[1]["spec"]["taints"] = {{{"key", "k"}, {"value", "v"}, {"effect", "NoSchedule"}}};
  EXPECT_EQ(choose_node(pod, nodes, {}).node, "c");
  nodes[2]["spec"]["unschedulable"] = true;
  EXPECT_EQ(choose_node(pod, nodes, {}).node, "d");
  nodes[3]["status"]["conditions"][0]["status"] = "False";
  EXPECT_EQ(choose_node(pod, nodes, {}).node, "e");
  // None left: every node's reason is counted, in kube-scheduler's words and order.
  NodeUsage used{{"e", PodResources{0, 0, 7, 1}}};
  auto none = choose_node(pod, nodes, used);
  EXPECT_FALSE(none.node);
  EXPECT_EQ(none.message,
            "0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match "
            "Pod's node affinity/selector, 1 node(s) had untolerated taint {k: v}, 1 node(s) were "
            "not ready, 1 node(s) were unschedulable.");
}

TEST(SchedulingTest, NodeFactsAreReadOnce) {
  json node = gpu_node("n", 8);
  node["status"]["allocatable"]["pods"] = "3";
  node["spec"]["unschedulable"] = true;
  const NodeFacts f = node_facts(node);
  EXPECT_EQ(f.node, &node);
  EXPECT_EQ(f.name, "n");
  EXPECT_TRUE(f.ready);
  EXPECT_TRUE(f.unschedulable);
  EXPECT_EQ(f.allocatable.gpu, 8);
  EXPECT_EQ(f.allocatable.pods, 3);
  EXPECT_DOUBLE_EQ(f.allocatable.memory, 256.0 * 1024 * 1024 * 1024);
}

}  // namespace
}  // namespace depl::devcluster
