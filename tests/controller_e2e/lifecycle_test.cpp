// A job's life on the dev cluster: apply -> planned -> worker pods with the variant's image, the
// worker contract in env, the pool's node selector, GPUs and an owner -> progress -> a switch of
// variant -> Succeeded (checked with the real `kubectl wait`); suspend and resume; deletion
// removes everything the job owns and stops a solve of its plan in progress.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "depl/controller/job_resource.hpp"
#include "depl/controller/worker_pods.hpp"
#include "depl/kube/resource.hpp"
#include "depl/solver/solve.hpp"
#include "e2e_fixture.hpp"
#include "http_post.hpp"

namespace depl::e2e {
namespace {

namespace resources = kube::resources;
using ::testing::IsEmpty;

std::string read_file(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string image_of(const json& pod) {
  return pod["spec"]["containers"][0].value("image", "");
}

std::string model_image(const json& job, const std::string& model) {
  for (const auto& m : job["spec"]["models"]) {
    if (m.value("name", "") == model) return m.value("image", "");
  }
  return "";
}

// The value of the first sample of `metric` whose labels include every one of `labels`
// (`name="value"` each; none for a metric without labels) in the Prometheus text `metrics`, or -1.
double sample(const std::string& metrics, const std::string& metric,
              const std::vector<std::string>& labels) {
  std::istringstream lines(metrics);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(metric + "{", 0) != 0 && line.rfind(metric + " ", 0) != 0) continue;
    bool all = true;
    for (const auto& l : labels) all = all && line.find(l) != std::string::npos;
    if (all) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

TEST_F(ControllerE2e, AppliedJobIsPlannedRunsItsPodsSwitchesVariantAndSucceeds) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  const json spec = job_from("job.yaml", "lifecycle", 0.1);
  const json created = create_job(spec);
  const std::string uid = created["metadata"].value("uid", "");

  json job = wait_job(
      "lifecycle", [](const json& j) { return condition_status(j, "Planned") == "True"; },
      "Planned=True");
  const json& phases = job["status"]["plan"]["phases"];
  ASSERT_GE(phases.size(), 2u) << job["status"].dump(1);
  const std::string first_model = phases[0].value("model", "");
  const std::string last_model = phases[phases.size() - 1].value("model", "");
  ASSERT_NE(first_model, last_model) << "the plan should switch variants: " << phases.dump();
  EXPECT_EQ(phases[0].value("pool", ""), "fast");

  // The first phase's pod, as the controller created it.
  json pod;
  ASSERT_TRUE(wait_until([&] {
    for (const auto& p : pods_->created_for("lifecycle")) {
      if (p["metadata"].value("name", "") == "lifecycle-p0-w0") pod = p;
    }
    return !pod.is_null();
  })) << "no pod lifecycle-p0-w0";
  EXPECT_EQ(image_of(pod), model_image(spec, first_model));
  EXPECT_EQ(pod_env(pod, "DEPL_JOB"), json("lifecycle"));
  EXPECT_EQ(pod_env(pod, "DEPL_NAMESPACE"), json("default"));
  EXPECT_EQ(pod_env(pod, "DEPL_PHASE"), json("0"));
  EXPECT_EQ(pod_env(pod, "DEPL_MODEL"), json(first_model));
  EXPECT_EQ(pod_env(pod, "DEPL_EPOCHS"), json(std::to_string(phases[0].value("epochs", 0))));
  EXPECT_EQ(pod_env(pod, "DEPL_START_EPOCH"), json("0"));
  EXPECT_EQ(pod_env(pod, "DEPL_DATASETS"), json("curated"));
  EXPECT_EQ(pod_env(pod, "DEPL_PROGRESS_URL"),
            json(progress_url() + "/v1/namespaces/default/jobs/lifecycle/progress"));
  // The Secret the status records, which the controller made under a name with a random part.
  const std::string token_secret = job["status"]["progressToken"].value("secret", "");
  EXPECT_EQ(token_secret.rfind("lifecycle-progress-", 0), 0u) << job["status"].dump(1);
  EXPECT_EQ(pod_env(pod, "DEPL_PROGRESS_TOKEN"),
            json({{"secretKeyRef", {{"name", token_secret}, {"key", "token"}}}}));
  EXPECT_EQ(pod_env(pod, "WORLD_SIZE"), json(std::to_string(phases[0].value("workers", 0))));
  EXPECT_EQ(pod_env(pod, "RANK"), json("0"));
  EXPECT_EQ(pod_env(pod, "MASTER_ADDR"), json("127.0.0.1"));  // RendezvousMode::Loopback
  EXPECT_TRUE(pod_env(pod, "MASTER_PORT").has_value());
  EXPECT_TRUE(pod_env(pod, "DEPL_CHECKPOINT_DIR").has_value());
  auto profile = pod_env(pod, "DEPL_LOSS_PROFILE");
  ASSERT_TRUE(profile.has_value());
  EXPECT_TRUE(json::parse(profile->get<std::string>(), nullptr, false).contains("floorLoss"));
  EXPECT_EQ(pod["spec"]["nodeSelector"].value("depl.dev/pool", ""), "fast");
  const json& resources_json = pod["spec"]["containers"][0]["resources"];
  EXPECT_EQ(resources_json["limits"].value("nvidia.com/gpu", ""), "1");
  EXPECT_EQ(resources_json["requests"].value("nvidia.com/gpu", ""), "1");
  const json& owners = pod["metadata"]["ownerReferences"];
  ASSERT_EQ(owners.size(), 1u);
  EXPECT_EQ(owners[0].value("kind", ""), "DependableTrainingJob");
  EXPECT_EQ(owners[0].value("name", ""), "lifecycle");
  EXPECT_EQ(owners[0].value("uid", ""), uid);
  EXPECT_TRUE(owners[0].value("controller", false));

  // Progress reaches the status.
  wait_job(
      "lifecycle",
      [](const json& j) {
        const json& p = j.value("status", json::object()).value("progress", json::object());
        return p.value("epoch", 0) >= 1 && p.contains("loss");
      },
      "a reported epoch in status.progress");

  // The end, the way a user waits for it.
  if (kubectl_installed()) {
    auto waited = kubectl({"wait", "--for=condition=Succeeded", "dtj/lifecycle", "--timeout=60s"},
                          std::chrono::seconds(90));
    EXPECT_EQ(waited.exit_code, 0) << waited.output;
  }
  job = wait_succeeded("lifecycle");
  EXPECT_EQ(condition_reason(job, "Succeeded"), "TargetReached");
  EXPECT_EQ(condition_status(job, "Succeeded"), "True");

  // The switch happened: a later phase's pod ran the other variant's image, from where the
  // first phase stopped.
  json switched;
  for (const auto& p : pods_->created_for("lifecycle")) {
    if (pod_env(p, "DEPL_MODEL") == json(last_model)) switched = p;
  }
  ASSERT_FALSE(switched.is_null()) << "no pod ran " << last_model;
  EXPECT_EQ(image_of(switched), model_image(spec, last_model));
  EXPECT_NE(pod_env(switched, "DEPL_PHASE"), json("0"));
  EXPECT_NE(pod_env(switched, "DEPL_START_EPOCH"), json("0"));
  // Events are recorded after the status they describe is written: wait for them.
  for (const char* reason : {"Planned", "PhaseStarted", "PhaseCompleted", "TargetReached"})
    EXPECT_TRUE(wait_until([&] { return has_event("lifecycle", reason); })) << reason;
  EXPECT_THAT(pods_->violations(), IsEmpty());

  // The controller's requests to the API server are in its metrics: pods created (201), status
  // written (PUT 200), watches opened, each with its latency.
  const auto metrics = e2e::http_get(metrics_url() + "/metrics");
  ASSERT_EQ(metrics.status, 200);
  // (Labels as plain strings: GCC 12 splits raw strings inside gtest's macros wrongly.)
  const std::string post = "verb=\"POST\"", put = "verb=\"PUT\"", watch = "verb=\"WATCH\"";
  const double posted = sample(metrics.body, "depl_api_requests_total", {post, "code=\"201\""});
  const double written = sample(metrics.body, "depl_api_requests_total", {put, "code=\"200\""});
  const double watches = sample(metrics.body, "depl_api_requests_total", {watch, "code=\"200\""});
  const double timed = sample(metrics.body, "depl_api_request_duration_seconds_count", {post});
  EXPECT_GE(posted, 2) << metrics.body;
  EXPECT_GE(written, 1);
  EXPECT_GE(watches, 6) << "one watch per informer at least";
  EXPECT_GE(timed, posted);
}

TEST_F(ControllerE2e, SuspendRemovesThePodsAndResumeCompletesWithProgressKept) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "pausing", 0.1));
  wait_job(
      "pausing",
      [](const json& j) {
        return j.value("status", json::object())
                   .value("progress", json::object())
                   .value("epoch", 0) >= 3;
      },
      "three reported epochs");

  merge_patch_job("pausing", {{"spec", {{"suspend", true}}}});
  json job = wait_job(
      "pausing", [](const json& j) { return job_phase(j) == "Suspended"; }, "phase Suspended");
  const int epoch_at_suspend = job["status"]["progress"].value("epoch", 0);
  EXPECT_GE(epoch_at_suspend, 3);
  EXPECT_EQ(condition_status(job, "Running"), "False");
  EXPECT_TRUE(wait_until([&] {
    for (const auto& p : pods_of("pausing")) {
      if (!pod_terminal(p)) return false;
    }
    return true;
  })) << "worker pods still run while suspended";
  EXPECT_TRUE(wait_until([&] { return has_event("pausing", "Suspended"); }));

  merge_patch_job("pausing", {{"spec", {{"suspend", false}}}});
  job = wait_succeeded("pausing");
  // Progress was kept: the epochs of before the suspension count, nothing restarted at 0.
  EXPECT_GT(job["status"]["progress"].value("epoch", 0), epoch_at_suspend);
  bool resumed = false;
  for (const auto& p : pods_->created_for("pausing")) {
    const auto start = pod_env(p, "DEPL_START_EPOCH");
    if (start && std::stoi(start->get<std::string>()) >= epoch_at_suspend) resumed = true;
  }
  EXPECT_TRUE(resumed) << "no pod started from the epoch the job was suspended at";
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

TEST_F(ControllerE2e, DeletingTheJobRemovesItsPodsServicesAndSecret) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "doomed", 0.5));
  const std::string selector = "depl.dev/job=doomed";
  ASSERT_TRUE(wait_until([&] {
    return !pods_of("doomed").empty() && !list(resources::services(), selector).empty() &&
           !list(resources::secrets(), selector).empty();
  })) << "the job's pod, service and secret did not all appear";

  auto removed = client_->remove(controller::job_resource(), "default", "doomed");
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_TRUE(wait_until([&] {
    return pods_of("doomed").empty() && list(resources::services(), selector).empty() &&
           list(resources::secrets(), selector).empty();
  })) << "children left: pods "
      << pods_of("doomed").size() << ", services " << list(resources::services(), selector).size()
      << ", secrets " << list(resources::secrets(), selector).size();
  EXPECT_TRUE(get_job("doomed").empty());
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

// A job deleted while its plan is being solved stops that solve: the solver is told (its budget's
// stop is requested) when the deletion is seen, not when the solve's budget runs out. The solve
// here is one that never ends by itself; the job after it is planned by the real solver.
TEST_F(ControllerE2e, DeletingAJobWhileItsPlanIsSolvedStopsTheSolve) {
  struct Blocked {
    std::mutex mutex;
    std::condition_variable changed;
    bool started = false;
    bool stopped = false;
  };
  // Shared with the solve's own thread, which may outlive the reconcile that abandons it.
  auto blocked = std::make_shared<Blocked>();
  auto calls = std::make_shared<std::atomic<int>>(0);
  solve_ = [blocked, calls](const solver::Problem& problem,
                            const solver::SolveOptions& options) -> Expected<solver::SolveResult> {
    if (calls->fetch_add(1) > 0) return solver::solve(problem, options);
    std::unique_lock lock(blocked->mutex);
    blocked->started = true;
    blocked->changed.notify_all();
    std::condition_variable_any until_stopped;
    until_stopped.wait(lock, options.budget.stop, [] { return false; });
    blocked->stopped = true;
    blocked->changed.notify_all();
    return error("stopped");
  };
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "unsolved", 0.1));
  {
    std::unique_lock lock(blocked->mutex);
    ASSERT_TRUE(blocked->changed.wait_for(lock, kWait, [&] { return blocked->started; }))
        << "the solve did not start";
  }
  auto removed = client_->remove(controller::job_resource(), "default", "unsolved");
  ASSERT_TRUE(removed) << removed.error().message;
  {
    std::unique_lock lock(blocked->mutex);
    EXPECT_TRUE(blocked->changed.wait_for(lock, kWait, [&] { return blocked->stopped; }))
        << "the solve of the deleted job was not stopped";
  }
  EXPECT_TRUE(wait_until([&] { return get_job("unsolved").empty(); }));
  EXPECT_TRUE(pods_->created_for("unsolved").empty());

  create_job(job_from("job.yaml", "next", 0.1));
  const json next = wait_job(
      "next", [](const json& j) { return condition_status(j, "Planned") == "True"; },
      "Planned=True");
  EXPECT_EQ(condition_reason(next, "Planned"), "Planned");
}

// A job deleted and created again under the same name is another job: its workers start from
// nothing, not from the checkpoint the first one left (before, both used <root>/<ns>/<name>, and
// the second job's first report was the first job's final loss). The first job's checkpoint stays
// where it was, under its UID: the controller deletes no checkpoint.
TEST_F(ControllerE2e, AJobCreatedAgainUnderTheSameNameStartsAfreshAndTheOldCheckpointStays) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "again", 0.05));
  const json first = wait_succeeded("again");
  const json first_history = first["status"]["progress"]["history"];
  ASSERT_FALSE(first_history.empty()) << first["status"].dump(1);
  ASSERT_EQ(first_history[0]["epoch"], 1);
  const fs::path first_dir =
      controller::checkpoint_dir(first, (work_dir_ / "checkpoints").string());
  ASSERT_TRUE(fs::exists(first_dir / "sim-checkpoint.json")) << first_dir;
  const std::string first_checkpoint = read_file(first_dir / "sim-checkpoint.json");

  auto removed = client_->remove(controller::job_resource(), "default", "again");
  ASSERT_TRUE(removed) << removed.error().message;
  ASSERT_TRUE(wait_until([&] { return get_job("again").empty() && pods_of("again").empty(); }));

  create_job(job_from("job.yaml", "again", 0.05));
  const json second = wait_job(
      "again",
      [](const json& j) {
        return j.contains("status") &&
               !j["status"]["progress"].value("history", json::array()).empty();
      },
      "a first report");
  EXPECT_NE(second["metadata"]["uid"], first["metadata"]["uid"]);
  const json& history = second["status"]["progress"]["history"];
  ASSERT_FALSE(history.empty());
  // depl-sim-worker draws from a seed of (job name, phase, rank, start epoch): a fresh start
  // reports exactly what the first job reported first.
  EXPECT_EQ(history[0]["epoch"], 1);
  EXPECT_EQ(history[0]["loss"], first_history[0]["loss"]) << history.dump();
  EXPECT_EQ(read_file(first_dir / "sim-checkpoint.json"), first_checkpoint);
  wait_succeeded("again");
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

// The pods watch lags behind the jobs watch, as behind a slow watch cache: the job's own status
// write (its plan, its first round started) comes back before the pods it created. The controller
// waits until its caches show what it created instead of starting the round again: each phase
// starts once (one PhaseStarted, one round), and no pod is created twice (no POST answered
// AlreadyExists).
TEST_F(ControllerE2e, ALaggingPodsWatchNeitherStartsARoundTwiceNorCreatesAPodTwice) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  auto pod_posts = std::make_shared<std::atomic<int>>(0);
  cluster_->observe_requests([pod_posts](const devcluster::RequestSummary& r) {
    if (r.method == "POST" && r.path.ends_with("/pods")) ++*pod_posts;
  });
  cluster_->hold_watch_events("pods");
  create_job(job_from("job.yaml", "lagging", 0.1));
  // The pods exist, the controller's cache does not show them, and a reconcile has found so.
  ASSERT_TRUE(wait_until([&] {
    const auto metrics = http_get(metrics_url() + "/metrics");
    return !pods_of("lagging").empty() &&
           sample(metrics.body, "depl_reconcile_awaiting_creates_total", {}) >= 1;
  })) << "no reconcile waited for the pods it had created";
  EXPECT_EQ(get_job("lagging")["status"]["progress"].value("round", 0), 1);
  cluster_->release_watch_events();

  const json done = wait_succeeded("lagging");
  cluster_->observe_requests({});
  std::map<std::string, int> started;  // PhaseStarted Events by message ("phase N: ...")
  for (const auto& e : events_of("lagging")) {
    if (e.value("reason", "") == "PhaseStarted")
      started[e.value("message", "").substr(0, 8)] += e.value("count", 1);
  }
  ASSERT_FALSE(started.empty());
  for (const auto& [phase, count] : started) EXPECT_EQ(count, 1) << phase;
  EXPECT_EQ(*pod_posts, static_cast<int>(pods_->created_for("lagging").size()));
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

// A pod of another owner (here: none) has the name of the job's first worker. The controller
// cannot create that worker: it says so in a FailedCreate Warning Event and tries again with
// backoff, in the same round; once the pod is gone, the job runs and succeeds.
TEST_F(ControllerE2e, APodOfAnotherOwnerWithAWorkersNameIsToldAndTheJobRunsOnceItIsGone) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  const json squatter = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "clash-p0-w0"}, {"namespace", "default"}}},
      {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
  auto made = client_->create(resources::pods(), "default", squatter);
  ASSERT_TRUE(made) << made.error().message;
  create_job(job_from("job.yaml", "clash", 0.1));
  const std::string told =
      "Error creating Pod clash-p0-w0: a Pod of that name already exists and is not controlled "
      "by this job; delete or rename it";
  ASSERT_TRUE(wait_until([&] {
    for (const auto& e : events_of("clash")) {
      if (e.value("reason", "") == "FailedCreate" && e.value("message", "") == told &&
          e.value("type", "") == "Warning")
        return true;
    }
    return false;
  })) << "no FailedCreate Event about the pod of another owner";
  EXPECT_EQ(get_job("clash")["status"]["progress"].value("round", 0), 1);

  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  auto removed = client_->remove(resources::pods(), "default", "clash-p0-w0", now);
  ASSERT_TRUE(removed) << removed.error().message;
  wait_succeeded("clash");
  int phase0_started = 0;
  for (const auto& e : events_of("clash")) {
    if (e.value("reason", "") == "PhaseStarted" && e.value("message", "").rfind("phase 0:", 0) == 0)
      phase0_started += e.value("count", 1);
  }
  EXPECT_EQ(phase0_started, 1);
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

}  // namespace
}  // namespace depl::e2e
