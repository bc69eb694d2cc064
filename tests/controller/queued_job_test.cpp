// decide() for a job admitted through a queue (Kueue plain-pod groups): its workers carry the
// group metadata, pods held by scheduling gates make the job Queued (not failed, not stuck), the
// wait is recorded, and a wait that threatens the deadline has the plan made again.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "depl/common/yaml_json.hpp"
#include "depl/controller/job_decision.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/queue_admission.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const auto kStart = std::chrono::system_clock::from_time_t(1'800'000'000);
const std::string kStartText = "2027-01-15T08:00:00Z";  // kStart

json queued_job(const json& queue_spec, const json& labels = json::object()) {
  std::ifstream in(std::string(DEPL_SOURCE_DIR) + "/examples/quickstart/job.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = yaml_to_json(text.str());
  EXPECT_TRUE(parsed.has_value());
  json job = *parsed;
  job["metadata"]["namespace"] = "default";
  job["metadata"]["uid"] = "uid-quickstart";
  job["metadata"]["generation"] = 1;
  job["metadata"]["creationTimestamp"] = kStartText;
  if (!labels.empty()) job["metadata"]["labels"] = labels;
  for (const auto& [k, v] : queue_spec.items()) job["spec"][k] = v;
  return job;
}

SharedObjects a100_nodes() {
  SharedObjects out;
  for (const char* name : {"a100-0", "a100-1"}) {
    out.push_back(std::make_shared<const json>(
        json{{"metadata",
              {{"name", name},
               {"labels", {{"depl.dev/pool", "a100"}, {"nvidia.com/gpu.product", "a100"}}},
               {"annotations",
                {{"depl.dev/gpu-gflops", "120000"},
                 {"depl.dev/price-per-gpu-hour", "2.5"},
                 {"depl.dev/bandwidth", "12.5G"},
                 {"depl.dev/storage-bandwidth", "1G"}}}}},
             {"status",
              {{"allocatable", {{"nvidia.com/gpu", "8"}}},
               {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}}));
  }
  return out;
}

JobView view_of(json job) {
  JobView v;
  v.job = std::move(job);
  v.nodes = a100_nodes();
  v.new_token_secret = "quickstart-progress-a1b2c3d4";
  v.now = kStart;
  return v;
}

DecideOptions options() {
  DecideOptions o;
  o.progress_url = "http://127.0.0.1:9999";
  o.seconds_now = [] { return 0.0; };
  return o;
}

// Applies a decision as the executor, with Kueue's webhook gating the pods it creates.
void apply_gated(JobView& v, const Decision& d) {
  if (d.status) v.job["status"] = *d.status;
  if (d.ensure_token_secret) {
    v.job["status"]["progressToken"] = {{"secret", v.new_token_secret}, {"sha256", "3f7a"}};
  }
  for (json o : d.create) {
    o["metadata"]["uid"] = "uid-" + o["metadata"]["name"].get<std::string>();
    o["metadata"]["creationTimestamp"] = kStartText;
    if (o["kind"] == "Pod") {
      o["spec"]["schedulingGates"] = json::array({{{"name", "kueue.x-k8s.io/admission"}}});
      o["status"] = {{"phase", "Pending"}};
      v.owned_pods.push_back(o);
    } else {
      v.owned_services.push_back(o);
    }
  }
}

bool has_event(const Decision& d, const std::string& reason) {
  for (const auto& e : d.events) {
    if (e.reason == reason) return true;
  }
  return false;
}

std::string condition_reason(const json& status, const std::string& type) {
  for (const auto& c : status.value("conditions", json::array())) {
    if (c.value("type", "") == type) return c.value("reason", "");
  }
  return "";
}

TEST(QueuedJob, ARoundsWorkersFormOnePodGroupOnTheQueue) {
  for (const json& job : {queued_job({{"queueName", "team-a"}}),
                          queued_job(json::object(), {{"kueue.x-k8s.io/queue-name", "team-a"}})}) {
    const Decision d = decide(view_of(job), options());
    ASSERT_TRUE(d.status);
    const auto plan = plan_from_json(*d.status);
    ASSERT_TRUE(plan);
    const int workers = plan->phases[0].workers;
    int pods = 0;
    for (const auto& o : d.create) {
      if (o["kind"] != "Pod") continue;
      ++pods;
      EXPECT_EQ(o["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "team-a");
      EXPECT_EQ(o["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"], "quickstart-p0-v1-r1");
      EXPECT_EQ(o["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"],
                std::to_string(workers));
      EXPECT_EQ(o["metadata"]["annotations"]["kueue.x-k8s.io/retriable-in-group"], "false");
    }
    EXPECT_EQ(pods, workers);
  }
  // Without a queue, no pod says anything of Kueue.
  const Decision plain = decide(view_of(queued_job(json::object())), options());
  for (const auto& o : plain.create) {
    EXPECT_FALSE(o["metadata"]["labels"].contains("kueue.x-k8s.io/pod-group-name"));
  }
}

TEST(QueuedJob, GatedWorkersMakeTheJobQueuedUntilTheyAreAdmitted) {
  JobView v = view_of(queued_job({{"queueName", "team-a"}}));
  apply_gated(v, decide(v, options()));
  // Held by the gate for two minutes: Queued since the pods were made, nothing failed or removed.
  v.now = kStart + seconds(120);
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_EQ((*d.status)["phase"], phases::kQueued) << d.status->dump(2);
  EXPECT_NE((*d.status)["message"].get<std::string>().find("waiting for admission by queue "
                                                           "team-a since " +
                                                           kStartText),
            std::string::npos)
      << (*d.status)["message"];
  EXPECT_EQ(condition_status(*d.status, conditions::kQueued), true);
  EXPECT_EQ(condition_reason(*d.status, conditions::kQueued), "WaitingForAdmission");
  EXPECT_EQ(condition_status(*d.status, "Running"), false);
  EXPECT_EQ((*d.status)["queue"]["since"], kStartText);
  EXPECT_TRUE(has_event(d, "Queued"));
  EXPECT_TRUE(d.remove.empty());
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(progress_from_json(*d.status).failures, 0);
  // The job looks again when the wait would threaten the deadline, not before.
  ASSERT_TRUE(d.requeue_after);
  const auto plan = plan_from_json(*d.status);
  ASSERT_TRUE(plan);
  EXPECT_EQ(d.requeue_after->count(),
            static_cast<long>(std::ceil(2400 - plan->duration_seconds - 120)));
  v.job["status"] = *d.status;

  // A later look changes nothing while the gate holds.
  v.now = kStart + seconds(180);
  d = decide(v, options());
  EXPECT_FALSE(d.status) << d.status->dump(2);
  EXPECT_FALSE(has_event(d, "Queued"));

  // Kueue admits the group: the gates go and the pods run.
  for (auto& pod : v.owned_pods) {
    pod["spec"].erase("schedulingGates");
    pod["spec"]["nodeName"] = "a100-0";
    pod["status"]["phase"] = "Running";
  }
  v.now = kStart + seconds(200);
  d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_EQ((*d.status)["phase"], "Running");
  EXPECT_EQ(condition_status(*d.status, conditions::kQueued), false);
  EXPECT_EQ(condition_reason(*d.status, conditions::kQueued), "Admitted");
  EXPECT_EQ(condition_status(*d.status, "Running"), true);
  EXPECT_TRUE(has_event(d, "Admitted"));
  EXPECT_FALSE((*d.status)["queue"].contains("since"));
  EXPECT_DOUBLE_EQ((*d.status)["queue"]["waitedSeconds"].get<double>(), 200);
}

TEST(QueuedJob, AWaitThatThreatensTheDeadlineHasThePlanMadeAgainOnce) {
  JobView v = view_of(queued_job({{"queueName", "team-a"}}));
  apply_gated(v, decide(v, options()));
  const auto plan = plan_from_json(v.job["status"]);
  ASSERT_TRUE(plan);
  const double slack = 2400 - plan->duration_seconds;
  ASSERT_GT(slack, 0);
  v.now = kStart + seconds(static_cast<long>(std::ceil(slack)) + 1);
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_TRUE(has_event(d, "QueueDelay"));
  EXPECT_EQ((*d.status)["replanRequested"], true);
  EXPECT_EQ((*d.status)["queue"]["replanned"], true);
  ASSERT_TRUE(d.requeue_after);
  EXPECT_EQ(d.requeue_after->count(), 0);

  // The next reconcile plans for what is left of the deadline: the time waited is gone from it.
  v.job["status"] = *d.status;
  v.now += seconds(1);
  d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_FALSE(d.status->value("replanRequested", false)) << d.status->dump(2);
  EXPECT_FALSE(has_event(d, "QueueDelay"));
  v.job["status"] = *d.status;
  v.now += seconds(1);
  EXPECT_FALSE(has_event(decide(v, options()), "QueueDelay"));  // once per wait
}

TEST(QueuedJob, AQueueNameThatIsNoLocalQueueNameIsAnInvalidSpec) {
  const Decision d = decide(view_of(queued_job({{"queueName", "Team_A"}})), options());
  ASSERT_TRUE(d.status);
  EXPECT_EQ(condition_status(*d.status, "Valid"), false);
  EXPECT_NE((*d.status)["message"].get<std::string>().find("spec.queueName \"Team_A\""),
            std::string::npos)
      << (*d.status)["message"];
  EXPECT_TRUE(d.create.empty());
}

}  // namespace
}  // namespace depl::controller
