// The administrator's job policy: the ServiceAccounts, tolerations and images a job may ask for,
// read from the depl-job-policy ConfigMap and enforced by decide() as InvalidSpec naming the
// field: whoever may create a job must not get pods with any ServiceAccount, a toleration of
// every taint and any image.
#include "depl/controller/job_policy.hpp"

#include <gtest/gtest.h>

#include "decision_fixture.hpp"
#include "depl/controller/job_decision.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

json job_asking(json pod_template, const std::string& image = "registry.example.com/ml/full:1") {
  return json{{"metadata", {{"name", "j"}, {"namespace", "ml"}}},
              {"spec",
               {{"podTemplate", std::move(pod_template)},
                {"models", json::array({{{"name", "full"}, {"image", image}}})}}}};
}

json config_map(json data) {
  return json{{"metadata", {{"name", kJobPolicyConfigMap}}}, {"data", std::move(data)}};
}

TEST(JobPolicy, TheDefaultsAllowNoAccountNoTolerationAndAnyImage) {
  const JobPolicy policy;
  EXPECT_TRUE(check_job_policy(job_asking(json::object()), policy).empty());
  const auto problems =
      check_job_policy(job_asking({{"serviceAccountName", "cluster-admin-sa"},
                                   {"tolerations", json::array({{{"operator", "Exists"}}})}}),
                       policy);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].rfind("spec.podTemplate.serviceAccountName: \"cluster-admin-sa\" is not "
                              "allowed",
                              0),
            0u)
      << problems[0];
  EXPECT_EQ(problems[1].rfind("spec.podTemplate.tolerations[0]: ", 0), 0u) << problems[1];
  EXPECT_NE(problems[1].find("jobPolicy.tolerations"), std::string::npos) << problems[1];
}

TEST(JobPolicy, WhatTheAdministratorListsIsAllowed) {
  auto policy = parse_job_policy(config_map(
      {{"serviceAccounts", R"(["trainer"])"},
       {"tolerations", R"([{"key":"spot","operator":"Exists","effect":"NoSchedule"}])"},
       {"images", R"(["registry.example.com/ml/*","docker.io/library/busybox:1.36"])"}}));
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_TRUE(
      check_job_policy(job_asking({{"serviceAccountName", "trainer"},
                                   {"tolerations", json::array({{{"key", "spot"},
                                                                 {"operator", "Exists"},
                                                                 {"effect", "NoSchedule"}}})}}),
                       *policy)
          .empty());
  // Compared on key, operator, value and effect: a wider toleration is not the one allowed.
  EXPECT_EQ(
      check_job_policy(
          job_asking({{"tolerations", json::array({{{"key", "spot"}, {"operator", "Exists"}}})}}),
          *policy)
          .size(),
      1u);
  EXPECT_TRUE(
      check_job_policy(job_asking(json::object(), "docker.io/library/busybox:1.36"), *policy)
          .empty());
  const auto image =
      check_job_policy(job_asking(json::object(), "evil.example.com/miner:1"), *policy);
  ASSERT_EQ(image.size(), 1u);
  EXPECT_EQ(image[0].rfind("spec.models[0].image: \"evil.example.com/miner:1\" is not allowed", 0),
            0u)
      << image[0];
  // An image merely starting like an allowed one without the prefix's slash is refused.
  EXPECT_EQ(
      check_job_policy(job_asking(json::object(), "registry.example.com/mlx:1"), *policy).size(),
      1u);
}

TEST(JobPolicy, AnUnreadablePolicyNamesTheKey) {
  auto bad = parse_job_policy(config_map({{"images", "registry.example.com/*"}}));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("data.images: must be a JSON list"), std::string::npos)
      << bad.error().message;
  auto empty = parse_job_policy(config_map(json::object()));
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->images, std::vector<std::string>{"*"});
}

// decide() refuses a job that asks for more than the policy allows, naming the field, and runs
// nothing; once the administrator allows it, the job is looked at anew.
TEST(JobPolicy, DecideRefusesWhatThePolicyDoesNotAllow) {
  JobView v;
  v.job = fixture::quickstart_job();
  v.job["spec"]["podTemplate"] = {{"serviceAccountName", "trainer"}};
  v.now = std::chrono::system_clock::from_time_t(1'800'000'000);
  DecideOptions options;
  options.seconds_now = [] { return 0.0; };
  Decision d = decide(v, options);
  ASSERT_TRUE(d.status);
  EXPECT_EQ((*d.status)["phase"], "Pending");
  EXPECT_NE((*d.status)["message"].get<std::string>().find(
                "spec.podTemplate.serviceAccountName: \"trainer\" is not allowed"),
            std::string::npos)
      << (*d.status)["message"];
  EXPECT_TRUE(d.create.empty());
  bool told = false;
  for (const auto& e : d.events) told = told || e.reason == "InvalidSpec";
  EXPECT_TRUE(told);

  v.policy.service_accounts = {"trainer"};
  v.job["status"] = *d.status;
  const Decision allowed = decide(v, options);
  ASSERT_TRUE(allowed.status);
  EXPECT_EQ(allowed.status->value("message", "").find("is not allowed"), std::string::npos)
      << (*allowed.status)["message"];

  // A policy that cannot be read allows nothing, and says so.
  v.policy_problem = "ConfigMap depl-job-policy data.images: must be a JSON list, got \"x\"";
  v.policy = JobPolicy{{}, {}, {}};
  v.job["spec"].erase("podTemplate");
  const Decision unreadable = decide(v, options);
  ASSERT_TRUE(unreadable.status);
  EXPECT_NE(unreadable.status->value("message", "").find("job policy cannot be read"),
            std::string::npos)
      << (*unreadable.status)["message"];
}

}  // namespace
}  // namespace depl::controller
