// Queue admission (Kueue plain-pod groups): the queue a job names, the group metadata, which pods
// a gate holds, and the time waited against the deadline.
#include "depl/controller/queue_admission.hpp"

#include <gtest/gtest.h>

#include "depl/common/kubernetes_names.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

json job_with(const json& spec, const json& labels = json::object()) {
  return {{"metadata", {{"name", "j"}, {"labels", labels}}}, {"spec", spec}};
}

TEST(QueueAdmission, TheQueueComesFromTheSpecThenTheLabel) {
  EXPECT_EQ(queue_name_of(job_with(json::object())), "");
  EXPECT_EQ(queue_name_of(job_with(json::object(), {{kQueueNameLabel, "team-a"}})), "team-a");
  EXPECT_EQ(queue_name_of(job_with({{"queueName", "gpu"}}, {{kQueueNameLabel, "team-a"}})), "gpu");
  EXPECT_FALSE(queue_name_problem(job_with({{"queueName", "gpu.team-a"}})));
  EXPECT_FALSE(queue_name_problem(job_with(json::object())));
  auto bad = queue_name_problem(job_with({{"queueName", "Team_A"}}));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->rfind("spec.queueName \"Team_A\": a queue name is a LocalQueue's name", 0), 0u)
      << *bad;
  auto long_label =
      queue_name_problem(job_with(json::object(), {{kQueueNameLabel, std::string(64, 'q')}}));
  ASSERT_TRUE(long_label);
  EXPECT_EQ(long_label->rfind("metadata.labels[kueue.x-k8s.io/queue-name]", 0), 0u) << *long_label;
}

TEST(QueueAdmission, GroupNamesAreWorkloadNamesOfAtMost63) {
  EXPECT_EQ(pod_group_name("train", 2, 1, 3), "train-p1-v2-r3");
  const std::string job(57, 'a');  // the longest job name the controller accepts
  const std::string a = pod_group_name(job, 12, 3, 100);
  const std::string b = pod_group_name(job, 12, 3, 101);
  EXPECT_LE(a.size(), 63u);
  EXPECT_TRUE(is_dns1123_subdomain(a)) << a;
  EXPECT_TRUE(is_label_value(a)) << a;
  EXPECT_NE(a, b);
  EXPECT_EQ(a, pod_group_name(job, 12, 3, 100));  // stable
}

TEST(QueueAdmission, APodJoinsItsGroup) {
  json pod = {{"metadata", {{"name", "w0"}, {"labels", {{"depl.dev/job", "j"}}}}}};
  join_pod_group(pod, "team-a", "j-p0-v1-r1", 4);
  EXPECT_EQ(pod["metadata"]["labels"], (json{{"depl.dev/job", "j"},
                                             {"kueue.x-k8s.io/queue-name", "team-a"},
                                             {"kueue.x-k8s.io/pod-group-name", "j-p0-v1-r1"}}));
  EXPECT_EQ(pod["metadata"]["annotations"], (json{{"kueue.x-k8s.io/pod-group-total-count", "4"},
                                                  {"kueue.x-k8s.io/retriable-in-group", "false"}}));
}

TEST(QueueAdmission, OnlyAPendingUnboundPodWithGatesIsHeld) {
  json gated = {{"metadata", {{"name", "w0"}}},
                {"spec",
                 {{"schedulingGates",
                   json::array({{{"name", "kueue.x-k8s.io/admission"}}, {{"name", "x/y"}}})}}},
                {"status", {{"phase", "Pending"}}}};
  EXPECT_EQ(holding_gates(gated), "kueue.x-k8s.io/admission, x/y");
  json ungated = gated;
  ungated["spec"].erase("schedulingGates");
  EXPECT_EQ(holding_gates(ungated), "");
  json empty = gated;
  empty["spec"]["schedulingGates"] = json::array();
  EXPECT_EQ(holding_gates(empty), "");
  json deleting = gated;
  deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_EQ(holding_gates(deleting), "");
  json failed = gated;
  failed["status"]["phase"] = "Failed";
  EXPECT_EQ(holding_gates(failed), "");
}

TEST(QueueAdmission, TheWaitIsRecordedAndCounted) {
  const auto t0 = std::chrono::system_clock::from_time_t(1767225600);  // 2026-01-01T00:00:00Z
  QueueRecord q;
  q.since = "2026-01-01T00:00:00Z";
  q.waited_seconds = 30;
  q.replanned = true;
  const json status = {{"queue", to_json(q)}};
  EXPECT_EQ(queue_from_json(status), q);
  EXPECT_DOUBLE_EQ(queued_seconds(q, t0 + std::chrono::seconds(90)), 120);
  q.since.clear();
  EXPECT_DOUBLE_EQ(queued_seconds(q, t0 + std::chrono::seconds(90)), 30);
  // What cannot be read is absent.
  const QueueRecord garbled =
      queue_from_json({{"queue", {{"since", "yesterday"}, {"waitedSeconds", -4}}}});
  EXPECT_EQ(garbled, QueueRecord{});
  EXPECT_EQ(queue_from_json(json::object()), QueueRecord{});

  EXPECT_FALSE(seconds_until_wait_threatens_deadline(std::nullopt, 100, 50));
  EXPECT_DOUBLE_EQ(*seconds_until_wait_threatens_deadline(600, 400, 50), 150);
  EXPECT_LE(*seconds_until_wait_threatens_deadline(600, 400, 250), 0);
}

}  // namespace
}  // namespace depl::controller
