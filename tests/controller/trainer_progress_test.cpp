// Kubeflow Trainer's progress payload mapped onto the native report.
#include "depl/controller/trainer_progress.hpp"

#include <gtest/gtest.h>

namespace depl::controller {
namespace {

std::string status_with(const std::string& metrics) {
  return R"({"trainerStatus":{"progressPercentage":50,"metrics":[)" + metrics + "]}}";
}

TEST(TrainerProgress, MapsEpochAndLossPreferringTheValidationLoss) {
  auto r = parse_trainer_report(
      status_with(R"({"name":"loss","value":"0.9"},{"name":"accuracy","value":"0.7"},)"
                  R"({"name":"eval_loss","value":"0.52"},{"name":"currentEpoch","value":"4"})"),
      "rank=1&phase=2");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(*r);
  EXPECT_EQ((*r)->phase, 2);
  EXPECT_EQ((*r)->rank, 1);
  EXPECT_EQ((*r)->epoch, 4);
  EXPECT_DOUBLE_EQ((*r)->loss, 0.52);
  // The training loss stands in; "epoch" (as Hugging Face counts it) too; numbers as numbers.
  auto plain = parse_trainer_report(
      status_with(R"({"name":"epoch","value":3.0},{"name":"loss","value":0.8})"), "phase=0&rank=0");
  ASSERT_TRUE(plain && *plain);
  EXPECT_EQ((*plain)->epoch, 3);
  EXPECT_DOUBLE_EQ((*plain)->loss, 0.8);
}

TEST(TrainerProgress, ProgressWithoutACompletedEpochAndLossRecordsNothing) {
  for (const std::string& body :
       {std::string(R"({})"), std::string(R"({"trainerStatus":{"progressPercentage":10}})"),
        status_with(R"({"name":"loss","value":"0.9"})"),
        status_with(R"({"name":"currentEpoch","value":"2"})"),
        status_with(R"({"name":"currentEpoch","value":"2.5"},{"name":"loss","value":"0.9"})"),
        status_with(R"({"name":"currentEpoch","value":"0"},{"name":"loss","value":"0.9"})")}) {
    auto r = parse_trainer_report(body, "phase=0&rank=0");
    ASSERT_TRUE(r) << body << ": " << r.error().message;
    EXPECT_FALSE(*r) << body;
  }
}

TEST(TrainerProgress, BadFieldsAreNamed) {
  const auto message = [](const std::string& body, const std::string& query = "phase=0&rank=0") {
    auto r = parse_trainer_report(body, query);
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_EQ(message("[1]").rfind("body: must be a JSON object", 0), 0u);
  EXPECT_EQ(message("{}", "rank=0"),
            "phase: required in the query (the URL in KUBEFLOW_TRAINER_SERVER_URL carries it)");
  EXPECT_EQ(message("{}", "phase=0&rank=-1"), "rank: must be an integer >= 0, got \"-1\"");
  EXPECT_EQ(message(R"({"trainerStatus":[]})"), "trainerStatus: must be an object");
  EXPECT_EQ(message(R"({"trainerStatus":{"metrics":{}}})"),
            "trainerStatus.metrics: must be an array");
  EXPECT_EQ(message(status_with(R"({"name":"x","value":"1"},{"value":"1"})")),
            "trainerStatus.metrics[1].name: required string");
  EXPECT_EQ(message(status_with(R"({"name":"eval_loss","value":"low"})")),
            "trainerStatus.metrics[0].value: must be a number (as a string), got \"low\"");
  EXPECT_EQ(message(status_with(R"({"name":"loss","value":"-1"})")),
            "trainerStatus.metrics[0].value: loss must be a finite number >= 0, got \"-1\"");
  EXPECT_EQ(message(status_with(R"({"name":"currentEpoch"})")),
            "trainerStatus.metrics[0].value: required");
}

TEST(TrainerProgress, TheWorkersUrlCarriesPhaseAndRank) {
  EXPECT_EQ(trainer_status_url("http://depl:8081", "ns", "j", 2, 3),
            "http://depl:8081/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/j/"
            "status?phase=2&rank=3");
}

}  // namespace
}  // namespace depl::controller
