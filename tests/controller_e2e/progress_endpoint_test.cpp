// The controller's progress endpoint, as a worker (or an attacker) reaches it: a wrong or
// missing token is 401, an oversized body 413, malformed JSON or fields 400, each with a message
// saying what is wrong, and none of them leaves a trace in the job's status. The job's own
// worker is paced slowly so that it reports nothing while the test runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "depl/common/base64.hpp"
#include "depl/kube/resource.hpp"
#include "e2e_fixture.hpp"
#include "http_post.hpp"

namespace depl::e2e {
namespace {

using ::testing::HasSubstr;

json progress_of(const json& job) {
  auto status = job.find("status");
  if (status == job.end() || !status->contains("progress")) return json::object();
  return (*status)["progress"];
}

// The token in the Secret the job's status names (the test reads it; the controller never does).
std::string token_of(const json& job, kube::Client& client) {
  const std::string name = job.value("status", json::object())
                               .value("progressToken", json::object())
                               .value("secret", "");
  if (name.empty()) return "";
  auto secret = client.get(kube::resources::secrets(), "default", name);
  if (!secret) return "";
  return depl::base64_decode((*secret)["data"].value("token", "")).value_or("");
}

TEST_F(ControllerE2e, ProgressEndpointRejectsBadReportsAndRecordsNothing) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "guarded", 600));  // its worker's first epoch ends after the test
  json job = wait_job(
      "guarded", [](const json& j) { return job_phase(j) == "Running"; }, "phase Running");
  const std::string token = token_of(job, *client_);
  ASSERT_FALSE(token.empty()) << "no progress-token Secret";
  const json before = progress_of(get_job("guarded"));
  ASSERT_EQ(before.value("epoch", 0), 0) << before.dump();

  const std::string url = progress_url() + "/v1/namespaces/default/jobs/guarded/progress";
  const std::string report = R"({"phase":0,"rank":0,"epoch":1,"loss":1.5})";

  HttpAnswer wrong = http_post(url, std::string(token.size(), 'x'), report);
  EXPECT_EQ(wrong.status, 401) << wrong.body;
  EXPECT_THAT(wrong.body, HasSubstr("wrong progress token"));

  HttpAnswer missing = http_post(url, "", report);
  EXPECT_EQ(missing.status, 401) << missing.body;
  EXPECT_THAT(missing.body, HasSubstr("missing bearer token"));

  const std::string huge =
      R"({"phase":0,"rank":0,"epoch":1,"loss":1.5,"pad":")" + std::string(128 * 1024, 'a') + "\"}";
  HttpAnswer oversized = http_post(url, token, huge);
  EXPECT_EQ(oversized.status, 413) << oversized.body.substr(0, 200);
  EXPECT_THAT(oversized.body, HasSubstr("larger than"));

  HttpAnswer malformed = http_post(url, token, R"({"phase":0,"rank":0,"epoch":1,"loss":)");
  EXPECT_EQ(malformed.status, 400) << malformed.body;
  EXPECT_THAT(malformed.body, HasSubstr("body: must be JSON"));

  HttpAnswer bad_field = http_post(url, token, R"({"phase":0,"rank":0,"epoch":"one","loss":1.5})");
  EXPECT_EQ(bad_field.status, 400) << bad_field.body;
  EXPECT_THAT(bad_field.body, HasSubstr("epoch: must be an integer"));

  HttpAnswer bad_loss = http_post(url, token, R"({"phase":0,"rank":0,"epoch":1,"loss":-2})");
  EXPECT_EQ(bad_loss.status, 400) << bad_loss.body;
  EXPECT_THAT(bad_loss.body, HasSubstr("loss: must be a finite number >= 0"));

  // Nothing of the above reached the status.
  job = get_job("guarded");
  EXPECT_EQ(progress_of(job).value("epoch", 0), 0) << job["status"].dump(1);
  EXPECT_FALSE(progress_of(job).contains("history")) << job["status"].dump(1);

  // The same report with the job's token is recorded: the check above could have seen one.
  HttpAnswer good = http_post(url, token, report);
  EXPECT_EQ(good.status, 200) << good.body;
  EXPECT_THAT(good.body, HasSubstr("\"action\":\"continue\""));
  job = get_job("guarded");
  EXPECT_EQ(progress_of(job).value("epoch", 0), 1) << job["status"].dump(1);
  EXPECT_EQ(progress_of(job).value("loss", 0.0), 1.5);
}

// A Secret made beforehand under a name a token Secret could have (<job>-progress-token), by
// someone who may create Secrets in the namespace but not the job, must not pass for the job's:
// its maker could report for the job. The controller makes the Secret under a name with a random
// part, checks reports against the hash the status records, and never reads a Secret.
TEST_F(ControllerE2e, ASecretMadeBeforeTheJobCannotPassForItsToken) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  const json planted = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata", {{"name", "hijacked-progress-token"}, {"namespace", "default"}}},
      {"type", "Opaque"},
      {"stringData", {{"token", "chosen-by-a-stranger"}}}};
  ASSERT_TRUE(client_->create(kube::resources::secrets(), "default", planted));
  create_job(job_from("job.yaml", "hijacked", 600));  // no report of its own during the test
  const json job = wait_job(
      "hijacked", [](const json& j) { return job_phase(j) == "Running"; }, "phase Running");
  const std::string recorded = job["status"]["progressToken"].value("secret", "");
  EXPECT_NE(recorded, "hijacked-progress-token");
  EXPECT_EQ(recorded.rfind("hijacked-progress-", 0), 0u) << job["status"].dump(1);
  EXPECT_EQ(job["status"]["progressToken"].value("sha256", "").size(), 64u);
  // The job's pods read the controller's Secret, and the planted token is refused.
  for (const auto& pod : pods_of("hijacked")) {
    EXPECT_EQ(pod_env(pod, "DEPL_PROGRESS_TOKEN"),
              json({{"secretKeyRef", {{"name", recorded}, {"key", "token"}}}}));
  }
  const std::string url = progress_url() + "/v1/namespaces/default/jobs/hijacked/progress";
  const std::string report = R"({"phase":0,"rank":0,"epoch":1,"loss":0.01})";
  HttpAnswer hijack = http_post(url, "chosen-by-a-stranger", report);
  EXPECT_EQ(hijack.status, 401) << hijack.body;
  EXPECT_EQ(progress_of(get_job("hijacked")).value("epoch", 0), 0);
  // The job's own token is taken.
  HttpAnswer own = http_post(url, token_of(job, *client_), report);
  EXPECT_EQ(own.status, 200) << own.body;
}

}  // namespace
}  // namespace depl::e2e
