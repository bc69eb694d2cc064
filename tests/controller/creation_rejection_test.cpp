// The backstop's pure half: which refusals count, the message the user reads (the API server's
// field and the job's field it came from), and recording a refusal once per spec generation.
#include "depl/controller/creation_rejection.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "depl/controller/job_status.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

json a_job(long generation) {
  return json{
      {"metadata", {{"name", "mnist"}, {"namespace", "ml"}, {"generation", generation}}},
      {"spec",
       {{"models", json::array({{{"name", "full"}},
                                {{"name", "small"},
                                 {"env", json::array({{{"name", "A"}, {"value", "1"}},
                                                      {{"name", "B"}, {"value", "2"}}})}}})}}},
      {"status", {{"phase", "Running"}}}};
}

// A worker pod of variant `small`, shaped as build_worker_pod makes it: the contract's variables,
// then the model's env.
json a_pod() {
  return json{{"kind", "Pod"},
              {"metadata", {{"name", "mnist-p0-w1"}}},
              {"spec",
               {{"tolerations", json::array({{{"key", "nvidia.com/gpu"}}, {{"key", "spot"}}})},
                {"containers",
                 json::array({{{"name", "worker"},
                               {"env", json::array({{{"name", "DEPL_JOB"}},
                                                    {{"name", "DEPL_MODEL"}, {"value", "small"}},
                                                    {{"name", "A"}},
                                                    {{"name", "B"}}})}}})}}}};
}

kube::ApiError refusal(const json& causes) {
  kube::ApiError e;
  e.code = 422;
  e.reason = "Invalid";
  e.message = "Pod \"mnist-p0-w1\" is invalid: ...";
  e.details = {{"causes", causes}};
  return e;
}

TEST(CreationRejection, OnlyInvalidAndBadRequestAreRefusals) {
  for (int code : {400, 422}) EXPECT_TRUE(is_rejection(kube::ApiError{code})) << code;
  for (int code : {0, 403, 404, 409, 429, 500, 503})
    EXPECT_FALSE(is_rejection(kube::ApiError{code})) << code;
}

TEST(CreationRejection, MessageNamesThePodsFieldAndTheJobsFieldItCameFrom) {
  const std::string message = rejection_message(
      a_job(1), a_pod(),
      refusal(json::array(
          {{{"field", "spec.containers[0].resources.limits[example.com/fpga]"},
            {"message", "Invalid value: \"500m\": must be an integer"}},
           {{"field", "spec.containers[0].env[3].name"}, {"message", "Invalid value: \"B\""}},
           {{"field", "spec.tolerations[1].operator"}, {"message", "Unsupported value"}},
           {{"field", "spec.nodeSelector"}, {"message", "Invalid value"}},
           {{"field", "spec.containers[0].env[0].name"}, {"message", "Required value"}}})));
  EXPECT_EQ(message,
            "the API server refused Pod mnist-p0-w1 (422 Invalid): "
            "spec.containers[0].resources.limits[example.com/fpga]: Invalid value: \"500m\": must "
            "be an integer (from the job's spec.models[1].resources); "
            "spec.containers[0].env[3].name: Invalid value: \"B\" (from the job's "
            "spec.models[1].env[1]); "
            "spec.tolerations[1].operator: Unsupported value (from the job's "
            "spec.podTemplate.tolerations[0]); "
            "spec.nodeSelector: Invalid value (from the job's spec.podTemplate.nodeSelector); "
            "spec.containers[0].env[0].name: Required value");
}

TEST(CreationRejection, NamesOfObjectsComeFromTheJobsName) {
  const json service = {{"kind", "Service"}, {"metadata", {{"name", "1mnist-p0"}}}};
  EXPECT_THAT(
      rejection_message(a_job(1), service,
                        refusal(json::array({{{"field", "metadata.name"},
                                              {"message", "Invalid value: \"1mnist-p0\""}}}))),
      HasSubstr("refused Service 1mnist-p0 (422 Invalid): metadata.name: Invalid value: "
                "\"1mnist-p0\" (from the job's metadata.name)"));
}

TEST(CreationRejection, WithoutCausesTheMessageIsTheAPIServers) {
  kube::ApiError bad{400, "BadRequest",
                     "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the "
                     "regular expression"};
  EXPECT_EQ(rejection_message(a_job(1), a_pod(), bad),
            "the API server refused Pod mnist-p0-w1 (400 BadRequest): Pod in version \"v1\" cannot "
            "be handled as a Pod: quantities must match the regular expression");
}

TEST(CreationRejection, MessageIsBounded) {
  kube::ApiError bad{400, "BadRequest", std::string(5000, 'x') + "\xc3\xa9"};
  const std::string message = rejection_message(a_job(1), a_pod(), bad);
  EXPECT_LE(message.size(), kMaxRejectionMessage);
  EXPECT_THAT(message, HasSubstr("xxx..."));
}

TEST(CreationRejection, FailedCreateMessageGivesTheObjectAndTheAnswer) {
  kube::ApiError quota{403, "Forbidden",
                       "pods \"mnist-p0-w1\" is forbidden: exceeded quota: gpus, requested: "
                       "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=8, limited: "
                       "requests.nvidia.com/gpu=8"};
  EXPECT_FALSE(is_rejection(quota));
  EXPECT_EQ(failed_create_message(a_pod(), quota),
            "Error creating Pod mnist-p0-w1: 403 Forbidden: pods \"mnist-p0-w1\" is forbidden: "
            "exceeded quota: gpus, requested: requests.nvidia.com/gpu=2, used: "
            "requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8");
  // Bounded, and cut on a character boundary: an "\xc3\xa9" whose second byte is the first one
  // past the cut goes whole.
  const std::string prefix = "Error creating Pod mnist-p0-w1: 500 InternalError: ";
  const std::size_t xs = kMaxRejectionMessage - 4 - prefix.size();
  kube::ApiError long_one{500, "InternalError", std::string(xs, 'x') + "\xc3\xa9 and more"};
  EXPECT_EQ(failed_create_message(a_pod(), long_one), prefix + std::string(xs, 'x') + "...");
}

TEST(CreationRejection, RecordedOncePerSpecGeneration) {
  const json job = a_job(2);
  auto recorded = job_recording_rejection(job, job, "refused", "2026-11-22T05:00:00Z");
  ASSERT_TRUE(recorded.has_value());
  const json& status = (*recorded)["status"];
  EXPECT_EQ(condition_status(status, "Valid"), false);
  EXPECT_EQ(condition_status(status, "Running"), false);
  EXPECT_EQ(status["phase"], "Pending");
  EXPECT_EQ(status["message"], "refused");
  EXPECT_EQ(recorded_rejection(decode_status(status), 2), "refused");
  EXPECT_EQ(recorded_rejection(decode_status(status), 3), std::nullopt)
      << "a changed spec is tried afresh";
  // The same refusal again: nothing to write, so no second Event.
  EXPECT_EQ(job_recording_rejection(job, *recorded, "refused", "2026-11-22T05:01:00Z"),
            std::nullopt);
  // Another message for the same generation is written.
  EXPECT_TRUE(job_recording_rejection(job, *recorded, "refused again", "2026-11-22T05:01:00Z"));
  // The spec changed after the object was built: the next reconcile builds anew.
  EXPECT_EQ(job_recording_rejection(job, a_job(3), "refused", "2026-11-22T05:00:00Z"),
            std::nullopt);
}

TEST(CreationRejection, OnlyARefusalCounts) {
  JobStatus status;
  set_condition(status, "Valid", false, "InvalidSpec", "bad", 1, "2026-11-22T05:00:00Z");
  EXPECT_EQ(recorded_rejection(status, 1), std::nullopt);
  set_condition(status, "Valid", true, "Valid", "the spec is valid", 1, "2026-11-22T05:00:00Z");
  EXPECT_EQ(recorded_rejection(status, 1), std::nullopt);
  EXPECT_EQ(recorded_rejection(JobStatus{}, 1), std::nullopt);
  EXPECT_THAT(rejection_message(a_job(1), a_pod(), refusal(json::array())), Not(HasSubstr("from")));
}

}  // namespace
}  // namespace depl::controller
