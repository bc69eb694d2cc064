// trim_cached_pod: the controller's own workers stay whole; every other pod keeps exactly what
// GPU accounting reads, so accounting gives the same answer on the trimmed cache.
#include "depl/controller/pod_cache.hpp"

#include <gtest/gtest.h>

#include "depl/controller/pool_discovery.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

json other_pod(const std::string& name, const std::string& node, int gpus,
               const std::string& phase) {
  json resources = {{"requests", {{"cpu", "500m"}, {"memory", "1Gi"}}},
                    {"limits", {{"cpu", "1"}, {"memory", "2Gi"}}}};
  if (gpus > 0) resources["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "team-a"},
            {"uid", "uid-" + name},
            {"resourceVersion", "42"},
            {"creationTimestamp", "2026-11-22T05:00:00Z"},
            {"labels", {{"app", "web"}, {"pod-template-hash", "abc"}}},
            {"annotations", {{"kubectl.kubernetes.io/restartedAt", "2026-11-22T05:00:00Z"}}},
            {"ownerReferences", json::array({{{"apiVersion", "apps/v1"},
                                              {"kind", "ReplicaSet"},
                                              {"name", "web-abc"},
                                              {"uid", "rs-uid"},
                                              {"controller", true}}})}}},
          {"spec",
           {{"nodeName", node},
            {"containers",
             json::array({{{"name", "main"},
                           {"image", "registry.example.com/web:1"},
                           {"env", json::array({{{"name", "A"}, {"value", "1"}}})},
                           {"resources", resources}},
                          {{"name", "sidecar"}, {"image", "registry.example.com/proxy:2"}}})},
            {"volumes", json::array({{{"name", "data"}, {"emptyDir", json::object()}}})}}},
          {"status",
           {{"phase", phase},
            {"podIP", "10.0.0.7"},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json gpu_node(const std::string& name) {
  return {{"metadata",
           {{"name", name},
            {"labels", {{"depl.dev/pool", "a"}, {"nvidia.com/gpu.product", "A100"}}},
            {"annotations",
             {{"depl.dev/gpu-gflops", "120000"}, {"depl.dev/price-per-gpu-hour", "2.5"}}}}},
          {"status",
           {{"allocatable", {{"nvidia.com/gpu", "8"}}},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

TEST(PodCache, OtherWorkloadsKeepWhatGpuAccountingReads) {
  const json original = other_pod("web-1", "n1", 2, "Running");
  json pod = original;
  trim_cached_pod(pod);
  EXPECT_EQ(pod["metadata"]["name"], "web-1");
  EXPECT_EQ(pod["metadata"]["namespace"], "team-a");
  EXPECT_EQ(pod["metadata"]["resourceVersion"], "42");
  EXPECT_FALSE(pod["metadata"].contains("ownerReferences"));
  EXPECT_FALSE(pod["metadata"].contains("labels"));
  EXPECT_FALSE(pod["metadata"].contains("annotations"));
  EXPECT_FALSE(pod["spec"].contains("volumes"));
  EXPECT_FALSE(pod["spec"]["containers"][0].contains("env"));
  ASSERT_EQ(pod["spec"]["containers"].size(), 1u);  // the sidecar has no GPUs
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"],
            json({{"limits", {{"nvidia.com/gpu", "2"}}}}));
  EXPECT_EQ(pod["status"], json({{"phase", "Running"}}));
  EXPECT_LT(pod.dump().size(), original.dump().size() * 2 / 3);

  EXPECT_EQ(pod_gpu_request(pod), 2);
  EXPECT_TRUE(pod_holds_gpus(pod));
  for (const char* phase : {"Pending", "Succeeded", "Failed"}) {
    json other = other_pod("web-2", "n1", 1, phase);
    const bool holds = pod_holds_gpus(other);
    trim_cached_pod(other);
    EXPECT_EQ(pod_holds_gpus(other), holds) << phase;
    EXPECT_EQ(pod_is_terminal(other),
              std::string(phase) == "Succeeded" || phase == std::string("Failed"));
  }
  json cpu_only = other_pod("web-4", "n1", 0, "Running");
  trim_cached_pod(cpu_only);
  EXPECT_EQ(cpu_only["spec"], json({{"nodeName", "n1"}}));
  EXPECT_FALSE(pod_holds_gpus(cpu_only));
  json deleting = other_pod("web-3", "n1", 1, "Running");
  deleting["metadata"]["deletionTimestamp"] = "2026-11-22T06:00:00Z";
  trim_cached_pod(deleting);
  EXPECT_TRUE(deleting["metadata"].contains("deletionTimestamp"));
}

TEST(PodCache, AccountingIsTheSameOnTrimmedPods) {
  std::vector<json> pods = {other_pod("a", "n1", 3, "Running"), other_pod("b", "n1", 0, "Running"),
                            other_pod("c", "n2", 8, "Succeeded"),
                            other_pod("d", "n2", 2, "Pending")};
  std::vector<json> trimmed = pods;
  for (auto& p : trimmed) trim_cached_pod(p);
  const std::vector<json> nodes = {gpu_node("n1"), gpu_node("n2")};
  const auto full = discover_pools(nodes, pods, {}, PoolDefaults{});
  const auto cached = discover_pools(nodes, trimmed, {}, PoolDefaults{});
  ASSERT_EQ(full.pools.size(), 1u);
  ASSERT_EQ(cached.pools.size(), 1u);
  EXPECT_EQ(full.pools[0].gpus, 16 - 3 - 2);
  EXPECT_EQ(cached.pools[0].gpus, full.pools[0].gpus);
}

// A failed worker pod of the operator's job "job".
json own_worker() {
  json worker = other_pod("job-p0-w0", "n1", 1, "Failed");
  worker["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "depl.dev/v1alpha1"},
                                                        {"kind", "DependableTrainingJob"},
                                                        {"name", "job"},
                                                        {"uid", "job-uid"},
                                                        {"controller", true}}});
  return worker;
}

TEST(PodCache, TheOperatorsOwnWorkersKeepWhatDecideReads) {
  json worker = own_worker();
  worker["spec"]["containers"][0]["env"] =
      json::array({{{"name", "DEPL_JOB"}, {"value", "job"}},
                   {{"name", "DEPL_MODEL"}, {"value", "small"}},
                   {{"name", "DEPL_LOSS_PROFILE"}, {"value", "{\"initialLoss\": 2.3}"}}});
  worker["status"]["containerStatuses"] = json::array(
      {{{"name", "main"},
        {"image", "registry.example.com/web:1"},
        {"state", {{"terminated", {{"exitCode", 3}, {"reason", "Error"}, {"startedAt", "x"}}}}}}});
  const json original = worker;
  trim_cached_pod(worker);
  EXPECT_EQ(worker["metadata"]["labels"], original["metadata"]["labels"]);
  EXPECT_EQ(worker["metadata"]["annotations"], original["metadata"]["annotations"]);
  EXPECT_EQ(worker["spec"]["containers"][0]["env"],
            json::array({{{"name", "DEPL_MODEL"}, {"value", "small"}}}));
  EXPECT_EQ(worker["status"]["containerStatuses"][0]["state"],
            json({{"terminated", {{"exitCode", 3}, {"reason", "Error"}}}}));
  EXPECT_FALSE(worker["status"].contains("conditions"));
  EXPECT_EQ(pod_gpu_request(worker), 1);
}

// What tells a worker's preemption (disruption.hpp) stays: status.reason and the disruption
// conditions with their time, not the others. Without them only the node's state could tell a
// preemption: a worker evicted from a healthy node, or stopped by Kueue, would count as a
// failure.
TEST(PodCache, TheOperatorsOwnWorkersKeepWhatTellsAPreemption) {
  json worker = own_worker();
  worker["status"]["reason"] = "Evicted";
  const json disruption = {{"type", "DisruptionTarget"},
                           {"status", "True"},
                           {"reason", "EvictionByEvictionAPI"},
                           {"lastTransitionTime", "2027-01-15T07:58:00Z"}};
  json with_message = disruption;
  with_message["message"] = "Eviction API: evicting";
  worker["status"]["conditions"].push_back(with_message);
  json other = other_pod("web-0", "n1", 1, "Failed");
  other["status"]["reason"] = "Evicted";
  other["status"]["conditions"].push_back(with_message);
  trim_cached_pod(worker);
  trim_cached_pod(other);
  EXPECT_EQ(worker["status"]["reason"], "Evicted");
  EXPECT_EQ(worker["status"]["conditions"], json::array({disruption}));
  EXPECT_FALSE(other["status"].contains("reason")) << "another workload's pod keeps none of it";
  EXPECT_FALSE(other["status"].contains("conditions"));
}

}  // namespace
}  // namespace depl::controller
