// pod_disruption: which ended or ending worker pods were disrupted (their node reclaimed, drained
// or lost; evicted; preempted) rather than failed.
#include "depl/controller/disruption.hpp"

#include <gtest/gtest.h>

#include "depl/common/time.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

json node(const std::string& name, bool ready, const std::string& taint = "") {
  json n = {
      {"metadata", {{"name", name}}},
      {"status",
       {{"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
  if (!taint.empty()) {
    n["spec"]["taints"] = json::array({{{"key", taint}, {"effect", "NoSchedule"}}});
  }
  return n;
}

SharedObjects nodes() {
  return {std::make_shared<const json>(node("ok", true)),
          std::make_shared<const json>(node("down", false)),
          std::make_shared<const json>(node("reclaimed", true, "karpenter.sh/disrupted"))};
}

json pod(const std::string& phase, const std::string& node_name) {
  return json{{"metadata", {{"name", "w-0"}}},
              {"spec", {{"nodeName", node_name}}},
              {"status", {{"phase", phase}}}};
}

TEST(PodDisruption, TheConditionNamesItsReason) {
  json p = pod("Running", "ok");
  p["status"]["conditions"] = json::array(
      {{{"type", "Ready"}, {"status", "False"}},
       {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}}});
  EXPECT_EQ(pod_disruption(p, nodes()), "DisruptionTarget: PreemptionByScheduler");
  p["status"]["conditions"][1]["status"] = "False";
  EXPECT_EQ(pod_disruption(p, nodes()), "");
}

// Kueue's pod integration stops every pod of a group it evicts (preempted by a workload of higher
// priority, a PodsReady timeout, node failures) with TerminationTarget=True, the stop reason and
// the eviction's message, then deletes it: a disruption like the API server's eviction, with its
// time. Before, such a pod was waited for and, once Failed on its Ready node, counted as a failure.
TEST(PodDisruption, AKueueEvictionIsADisruption) {
  json p = pod("Running", "ok");
  p["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
  p["status"]["conditions"] =
      json::array({{{"type", "TerminationTarget"},
                    {"status", "True"},
                    {"reason", "WorkloadEvicted"},
                    {"message",
                     "Preempted to accommodate a workload (UID: 1234) due to prioritization in "
                     "the ClusterQueue"},
                    {"lastTransitionTime", "2027-01-15T08:00:00Z"}}});
  EXPECT_EQ(pod_disruption(p, nodes()), "TerminationTarget: WorkloadEvicted");
  const auto at = pod_disrupted_at(p);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(*at, *parse_rfc3339("2027-01-15T08:00:00Z"));
  // Ended Failed on its Ready node after the SIGTERM: still the eviction, not a failure.
  p["status"]["phase"] = "Failed";
  EXPECT_EQ(pod_disruption(p, nodes()), "TerminationTarget: WorkloadEvicted");
  // DisruptionTarget comes first when both are set.
  p["status"]["conditions"].push_back(
      {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "EvictionByEvictionAPI"}});
  EXPECT_EQ(pod_disruption(p, nodes()), "DisruptionTarget: EvictionByEvictionAPI");
  p["status"]["conditions"] = json::array({{{"type", "TerminationTarget"}, {"status", "False"}}});
  EXPECT_EQ(pod_disruption(p, nodes()), "");
  EXPECT_FALSE(pod_disrupted_at(p).has_value());
}

TEST(PodDisruption, KubeletReasonsWithoutACondition) {
  for (const char* reason :
       {"Evicted", "Preempting", "Shutdown", "NodeShutdown", "Terminated", "NodeLost"}) {
    json p = pod("Failed", "ok");
    p["status"]["reason"] = reason;
    EXPECT_EQ(pod_disruption(p, nodes()), std::string("status.reason ") + reason);
  }
  json p = pod("Failed", "ok");
  p["status"]["reason"] = "OOMKilled";
  EXPECT_EQ(pod_disruption(p, nodes()), "");
}

// The node explains a pod that ended or is ending, not one still running there.
TEST(PodDisruption, TheNodeOfAnEndedPod) {
  EXPECT_EQ(pod_disruption(pod("Failed", "gone-node"), nodes()), "node gone-node: gone");
  EXPECT_EQ(pod_disruption(pod("Failed", "down"), nodes()), "node down: not Ready");
  EXPECT_EQ(pod_disruption(pod("Failed", "reclaimed"), nodes()),
            "node reclaimed: karpenter.sh/disrupted taint");
  EXPECT_EQ(pod_disruption(pod("Failed", "ok"), nodes()), "");
  EXPECT_EQ(pod_disruption(pod("Running", "reclaimed"), nodes()), "");
  json terminating = pod("Running", "reclaimed");
  terminating["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  EXPECT_EQ(pod_disruption(terminating, nodes()), "node reclaimed: karpenter.sh/disrupted taint");
  // No node known: nothing said.
  EXPECT_EQ(pod_disruption(pod("Failed", "gone-node"), {}), "");
  EXPECT_EQ(pod_disruption(pod("Failed", ""), nodes()), "");
}

TEST(PodDisruption, ShapesItDoesNotExpect) {
  EXPECT_EQ(pod_disruption(json(nullptr), nodes()), "");
  EXPECT_EQ(pod_disruption(json::array(), nodes()), "");
  json p = pod("Failed", "ok");
  p["status"]["conditions"] = "not a list";
  p["status"]["reason"] = 7;
  p["spec"]["nodeName"] = json::object();
  EXPECT_EQ(pod_disruption(p, nodes()), "");
}

}  // namespace
}  // namespace depl::controller
