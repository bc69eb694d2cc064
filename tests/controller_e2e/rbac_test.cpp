// The controller runs as the chart's ServiceAccount under the chart's own RBAC (e2e_fixture), so
// every scenario checks that the chart grants what the controller needs. This one takes a
// permission away and sees the controller get the 403 a real API server gives, and say so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e_fixture.hpp"

namespace depl::e2e {
namespace {

TEST_F(ControllerE2e, WithoutTheChartsPermissionToCreatePodsTheJobReportsTheForbiddenCreate) {
  ClusterSetup setup;
  bool removed = false;
  // The rule that lets it create pods (which may name other resources too) keeps its other
  // resources; pods get a rule of their own, without create.
  setup.edit_rbac = [&removed](std::vector<json>& objects) {
    for (json& object : objects) {
      if (object.value("kind", "") != "ClusterRole") continue;
      json rules = json::array();
      for (json rule : object["rules"]) {
        const json resources = rule.value("resources", json::array());
        const json verbs = rule.value("verbs", json::array());
        const bool pods = std::find(resources.begin(), resources.end(), "pods") != resources.end();
        const bool create = std::find(verbs.begin(), verbs.end(), "create") != verbs.end();
        if (!pods || !create) {
          rules.push_back(rule);
          continue;
        }
        removed = true;
        json others = rule;
        others["resources"] = json::array();
        for (const auto& r : resources) {
          if (r != "pods") others["resources"].push_back(r);
        }
        if (!others["resources"].empty()) rules.push_back(others);
        json without_create = rule;
        without_create["resources"] = json::array({"pods"});
        without_create["verbs"] = json::array();
        for (const auto& v : verbs) {
          if (v != "create") without_create["verbs"].push_back(v);
        }
        rules.push_back(without_create);
      }
      object["rules"] = rules;
    }
  };
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml", setup));
  ASSERT_TRUE(removed) << "the chart's ClusterRole grants no create on pods to take away";
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "forbidden", 0.05));
  const std::string expected =
      "pods is forbidden: User \"system:serviceaccount:depl-system:depl-operator\" cannot "
      "create resource \"pods\" in API group \"\" in the namespace \"default\"";
  std::string seen;
  EXPECT_TRUE(wait_until([&] {
    for (const auto& e : events_of("forbidden")) {
      if (e.value("reason", "") != "FailedCreate") continue;
      seen = e.value("message", "");
      if (seen.find(expected) != std::string::npos) return true;
    }
    return false;
  })) << "no FailedCreate event naming the refused create; last one seen: "
      << seen;
  EXPECT_TRUE(pods_of("forbidden").empty());
}

}  // namespace
}  // namespace depl::e2e
