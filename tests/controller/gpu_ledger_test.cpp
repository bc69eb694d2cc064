// GpuLedger: what pods hold follows their events, whatever the delete event carries, and
// agrees with summing over the pods (gpus_held_by_node).
#include "depl/controller/gpu_ledger.hpp"

#include <gtest/gtest.h>

namespace depl::controller {
namespace {

using nlohmann::json;

json pod(const std::string& name, const std::string& node, int gpus, const std::string& phase,
         const std::string& owner = "") {
  json p = {{"metadata", {{"namespace", "default"}, {"name", name}}},
            {"spec",
             {{"containers",
               json::array({{{"name", "c"},
                             {"resources",
                              {{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}},
            {"status", {{"phase", phase}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  if (!owner.empty()) {
    p["metadata"]["ownerReferences"] =
        json::array({{{"uid", owner}, {"controller", true}, {"kind", "DependableTrainingJob"}}});
  }
  return p;
}

TEST(GpuLedger, FollowsEachPodThroughItsLife) {
  GpuLedger ledger;
  ledger.put(pod("a", "", 2, "Pending", "job-1"));  // not bound yet: holds nothing
  EXPECT_TRUE(ledger.by_node().empty());
  ledger.put(pod("a", "n1", 2, "Pending", "job-1"));
  ledger.put(pod("b", "n1", 1, "Running", "job-2"));
  ledger.put(pod("c", "n2", 4, "Running"));
  EXPECT_EQ(ledger.by_node(), (GpusByNode{{"n1", 3}, {"n2", 4}}));
  EXPECT_EQ(ledger.by_node("job-1"), (GpusByNode{{"n1", 1}, {"n2", 4}}));
  EXPECT_EQ(ledger.held_by("job-1"), 2);
  EXPECT_EQ(ledger.held_by("job-3"), 0);

  ledger.put(pod("a", "n1", 2, "Succeeded", "job-1"));  // finished: its GPUs are free
  EXPECT_EQ(ledger.held_by("job-1"), 0);
  EXPECT_EQ(ledger.by_node(), (GpusByNode{{"n1", 1}, {"n2", 4}}));
  ledger.put(pod("a", "n1", 2, "Running", "job-1"));  // a new incarnation under the same name
  ledger.put(pod("a", "n1", 2, "Running", "job-1"));  // the same state twice counts once
  EXPECT_EQ(ledger.held_by("job-1"), 2);

  // A delete whose final state says nothing about GPUs still releases what the pod held.
  ledger.remove(json{{"metadata", {{"namespace", "default"}, {"name", "c"}}}});
  ledger.remove(pod("a", "n1", 0, "Failed", "job-1"));
  EXPECT_EQ(ledger.by_node(), (GpusByNode{{"n1", 1}}));
  EXPECT_EQ(ledger.held_by("job-1"), 0);
}

TEST(GpuLedger, AgreesWithSummingOverThePods) {
  const std::vector<json> pods = {pod("a", "n1", 2, "Running", "job-1"),
                                  pod("b", "n1", 1, "Pending", "job-2"),
                                  pod("c", "n2", 4, "Failed", "job-2"),
                                  pod("d", "n2", 3, "Running"), pod("e", "", 8, "Pending")};
  GpuLedger ledger;
  auto handlers = ledger.handlers();
  for (const auto& p : pods) handlers.on_add(std::make_shared<const json>(p));
  EXPECT_EQ(ledger.by_node(), gpus_held_by_node(pods));
  EXPECT_EQ(ledger.by_node("job-2"), gpus_held_by_node(pods, "job-2"));
}

}  // namespace
}  // namespace depl::controller
