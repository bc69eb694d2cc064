// The reconciler end to end on a scripted API server: the caches as the informers fill them
// (pods trimmed as the pods informer keeps them, deletions delivered to DepartedPods), decide()
// and the executor's requests.
#include "depl/controller/job_reconciler.hpp"

#include <gtest/gtest.h>

#include "decision_fixture.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/controller_metrics.hpp"
#include "depl/controller/departed_pods.hpp"
#include "depl/controller/pod_cache.hpp"
#include "depl/controller/worker_pods.hpp"
#include "depl/kube/testing/scripted_transport.hpp"

namespace depl::controller {
namespace {

using kube::testing::ScriptedTransport;
using nlohmann::json;

kube::ObjectPtr object(json o) {
  return std::make_shared<const json>(std::move(o));
}

// A running job (the quickstart's first round on its pools), its caches and a reconciler whose
// API server answers the status writes from `conflicts` (the first of them 409 Conflict while
// it is positive) and takes every other write.
struct Fixture {
  std::shared_ptr<ScriptedTransport> transport = std::make_shared<ScriptedTransport>();
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>(fixture::kNow);
  kube::Client client = make_client();
  kube::Store jobs, pods, nodes, services, config_maps, job_policy;
  GpuLedger gpus;
  PlacementLine line{gpus};
  CreateExpectations expectations{*clock};
  DepartedPods departed{*clock};
  MetricsRegistry metrics;
  std::vector<EventSpec> events;
  std::unique_ptr<JobReconciler> reconciler;
  int conflicts = 0;
  json job;
  std::vector<json> worker_pods;

  Fixture() {
    describe_controller_metrics(metrics);
    ReconcilerOptions options;
    options.decide = fixture::options();
    reconciler = std::make_unique<JobReconciler>(
        client,
        JobCaches{jobs, pods, gpus, line, nodes, services, config_maps, job_policy, expectations,
                  departed},
        *clock, [this](const json&, const EventSpec& e) { events.push_back(e); }, metrics, options);
    transport->set_handler([this](const kube::HttpRequest& r) -> ScriptedTransport::Outcome {
      const bool status_write = r.method == "PUT" && r.path.ends_with("/status");
      if (status_write && conflicts > 0) {
        --conflicts;
        return kube::HttpResponse{
            409,
            {},
            kube::testing::status_body(409, "Conflict", "the object has been modified").dump()};
      }
      if (r.method == "GET") return kube::HttpResponse{200, {}, job.dump()};
      return kube::HttpResponse{r.method == "POST" ? 201 : 200, {}, r.body.empty() ? "{}" : r.body};
    });

    // The job's first round, as decide() starts it, on the fixture's nodes.
    JobView v = fixture::job_view(fixture::quickstart_job(),
                                  {fixture::gpu_node("a100-0", "a100", 8, 120000, 2.5),
                                   fixture::gpu_node("a100-1", "a100", 8, 120000, 2.5)});
    fixture::apply(v, decide(v, fixture::options()));
    job = v.job;
    job["metadata"]["name"] = "quickstart";
    job["metadata"]["resourceVersion"] = "10";
    jobs.apply(object(job));
    for (const auto& n : v.nodes) nodes.apply(n);
    for (const auto& s : v.owned_services) services.apply(object(s));
    for (json pod : v.owned_pods) {
      pod["metadata"]["ownerReferences"] = json::array({owner_reference(job)});
      pod["spec"]["nodeName"] = "a100-0";
      worker_pods.push_back(pod);
      cache_pod(pod);
    }
  }

  kube::Client make_client() {
    kube::ClientOptions options;
    options.clock = clock;
    options.random = std::make_shared<RandomSource>(3);
    options.rate_limit = {0, 0};
    options.retry.max_attempts = 1;
    return kube::Client(transport, nullptr, options);
  }

  // The pods informer's update: the pod as the cache keeps it, seen by DepartedPods first.
  void cache_pod(json pod) {
    trim_cached_pod(pod);
    departed.seen(pod);
    pods.apply(object(std::move(pod)));
  }

  // The pods informer's deletion: gone from the cache, its final object to DepartedPods.
  void delete_pod(json pod) {
    trim_cached_pod(pod);
    pods.remove(kube::ObjectKey::of(pod));
    departed.departed(pod);
  }

  Expected<kube::Action, kube::ReconcileError> reconcile() {
    return reconciler->reconcile(kube::ObjectKey{"default", "quickstart"}, {});
  }

  // The informers show the pods and Services created so far.
  void cache_created() {
    for (const auto& r : transport->requests()) {
      if (r.request.method != "POST") continue;
      json created = json::parse(r.request.body);
      created["metadata"]["uid"] = "uid-created-" + created["metadata"]["name"].get<std::string>();
      if (r.request.path.ends_with("/pods")) cache_pod(std::move(created));
      if (r.request.path.ends_with("/services")) services.apply(object(std::move(created)));
    }
  }

  // The status of the last status write sent.
  json last_status_written() const {
    json last;
    for (const auto& r : transport->requests()) {
      if (r.request.method == "PUT" && r.request.path.ends_with("/status"))
        last = json::parse(r.request.body)["status"];
    }
    return last;
  }

  int preempted_events() const {
    return static_cast<int>(std::count_if(events.begin(), events.end(), [](const EventSpec& e) {
      return e.reason == "WorkerPreempted";
    }));
  }
};

// A worker's node is reclaimed: its pod gets DisruptionTarget and is deleted with a grace
// period. The reconcile that sees it terminating counts the preemption, but its status write
// loses to a progress report's (409 Conflict); by the next reconcile the worker has exited and
// the pod is gone from the cache. Its final object, kept by DepartedPods, still counts: once,
// persisted with the status write that follows, and never again once the status records it.
// Before, the preemption was lost with the pod (the spot e2e ended with fewer than 3).
TEST(JobReconciler, APreemptionWhosePodIsGoneBeforeTheStatusLandsIsCounted) {
  Fixture f;
  ASSERT_FALSE(f.worker_pods.empty());
  json reclaimed = f.worker_pods[0];
  reclaimed["metadata"]["deletionTimestamp"] = format_rfc3339(fixture::kNow);
  reclaimed["status"]["conditions"] =
      json::array({{{"type", "DisruptionTarget"},
                    {"status", "True"},
                    {"reason", "EvictionByEvictionAPI"},
                    {"lastTransitionTime", format_rfc3339(fixture::kNow)}}});
  f.cache_pod(reclaimed);

  f.conflicts = 1;
  auto lost = f.reconcile();
  ASSERT_FALSE(lost.has_value()) << "the status write conflicts";
  EXPECT_EQ(f.last_status_written()["progress"].value("preemptions", 0), 1);

  // The worker checkpointed and exited; the pod is deleted.
  reclaimed["status"]["phase"] = "Failed";
  f.delete_pod(reclaimed);
  auto counted = f.reconcile();
  ASSERT_TRUE(counted.has_value()) << counted.error().message;
  json status = f.last_status_written();
  EXPECT_EQ(status["progress"].value("preemptions", 0), 1) << status.dump(1);
  EXPECT_EQ(status["progress"].value("failures", 0), 0);
  EXPECT_EQ(status["preemptions"]["a100"]["count"], 1);
  EXPECT_EQ(status["preemptions"]["a100"]["lastCause"], "DisruptionTarget: EvictionByEvictionAPI");
  EXPECT_EQ(f.preempted_events(), 1) << "told once: the conflicting reconcile posted nothing";

  // The watches bring the round's objects and the written status: the pod is recorded and
  // forgotten.
  f.cache_created();
  f.job["status"] = status;
  f.job["metadata"]["resourceVersion"] = "11";
  f.jobs.apply(object(f.job));
  auto again = f.reconcile();
  ASSERT_TRUE(again.has_value()) << again.error().message;
  const json after = f.last_status_written();
  EXPECT_EQ(after["progress"].value("preemptions", 0), 1);
  EXPECT_EQ(f.preempted_events(), 1);
  const std::string owner = f.job["metadata"]["uid"].get<std::string>();
  EXPECT_TRUE(f.departed.of(owner, {}).empty()) << "recorded, so no longer kept";
}

// A worker fails on its own (exit code 1). The reconcile that sees it counts the failure and
// stops the round, but its status write loses to a progress report's (409 Conflict); by the next
// reconcile the round's pods are gone: the failed one, and its peer, deleted while it ran, which
// exited 143 on SIGTERM and so ended Failed too. The failed worker counts against backoffLimit,
// once; its peer does not. Before, a departed pod counted only as a preemption, and the failure
// was lost with the pod.
TEST(JobReconciler, AFailureWhosePodIsGoneBeforeTheStatusLandsIsCounted) {
  Fixture f;
  ASSERT_GE(f.worker_pods.size(), 1u);
  auto terminated = [](json pod, int code) {
    pod["status"]["phase"] = "Failed";
    pod["status"]["containerStatuses"] =
        json::array({{{"name", "worker"}, {"state", {{"terminated", {{"exitCode", code}}}}}}});
    return pod;
  };
  auto deleted = [](json pod) {
    pod["metadata"]["deletionTimestamp"] = format_rfc3339(fixture::kNow + std::chrono::seconds(30));
    pod["metadata"]["deletionGracePeriodSeconds"] = 30;
    return pod;
  };
  const json failed = terminated(f.worker_pods[0], 1);
  f.cache_pod(failed);

  f.conflicts = 1;
  auto lost = f.reconcile();
  ASSERT_FALSE(lost.has_value()) << "the status write conflicts";
  EXPECT_EQ(f.last_status_written()["progress"].value("failures", 0), 1);

  // The reconcile's deletions landed: the failed pod goes, and a peer stopped by SIGTERM ends
  // Failed (143) once deleted.
  f.cache_pod(deleted(failed));
  f.delete_pod(deleted(failed));
  json peer = f.worker_pods.size() > 1 ? f.worker_pods[1] : json();
  if (!peer.is_null()) {
    f.cache_pod(deleted(peer));
    f.delete_pod(terminated(deleted(peer), 143));
  }
  auto counted = f.reconcile();
  ASSERT_TRUE(counted.has_value()) << counted.error().message;
  json status = f.last_status_written();
  EXPECT_EQ(status["progress"].value("failures", 0), 1) << status.dump(1);
  EXPECT_EQ(status["progress"].value("preemptions", 0), 0);
  const auto failed_events = std::count_if(
      f.events.begin(), f.events.end(), [](const auto& e) { return e.reason == "WorkerFailed"; });
  EXPECT_EQ(failed_events, 1) << "told once: the conflicting reconcile posted nothing";
  const std::string failed_uid = failed["metadata"]["uid"].get<std::string>();
  EXPECT_NE(std::find(status["failedPods"].begin(), status["failedPods"].end(), failed_uid),
            status["failedPods"].end());
}

// A job whose backoffLimit is 0 fails at the first failure, even when the failed worker's pod is
// gone before any reconcile saw it Failed from the caches: DepartedPods saw it fail.
TEST(JobReconciler, ADepartedFailureEndsTheJobPastItsBackoffLimit) {
  Fixture f;
  f.job["spec"]["backoffLimit"] = 0;
  f.jobs.apply(object(f.job));
  json failed = f.worker_pods[0];
  failed["status"]["phase"] = "Failed";
  failed["status"]["containerStatuses"] =
      json::array({{{"name", "worker"}, {"state", {{"terminated", {{"exitCode", 1}}}}}}});
  f.departed.seen(failed);  // the update the informer delivered, before the reconcile ran
  for (const json& pod : f.worker_pods) {
    if (pod["metadata"]["uid"] == failed["metadata"]["uid"]) {
      json gone = failed;
      gone["metadata"]["deletionTimestamp"] = format_rfc3339(fixture::kNow);
      gone["metadata"]["deletionGracePeriodSeconds"] = 0;
      f.delete_pod(gone);
    }
  }
  auto ended = f.reconcile();
  ASSERT_TRUE(ended.has_value()) << ended.error().message;
  json status = f.last_status_written();
  EXPECT_EQ(status.value("phase", ""), "Failed") << status.dump(1);
  EXPECT_EQ(status["progress"].value("failures", 0), 1);
}

// What DepartedPods keeps: the job's pods that had not succeeded, by uid, stamped deleted when the
// API server deleted them at once; nothing of other pods; each until the status records it or
// it expires.
TEST(DepartedPods, KeepsTheJobsUnfinishedPodsUntilRecordedOrExpired) {
  FakeClock clock(fixture::kNow);
  DepartedPods departed(clock, std::chrono::minutes(5));
  json job = fixture::quickstart_job();
  job["metadata"]["name"] = "quickstart";
  auto pod = [&](const std::string& uid, const std::string& phase) {
    return json{{"metadata",
                 {{"name", "quickstart-p0-" + uid},
                  {"namespace", "default"},
                  {"uid", uid},
                  {"ownerReferences", json::array({owner_reference(job)})}}},
                {"status", {{"phase", phase}}}};
  };
  departed.departed(pod("a", "Failed"));
  departed.departed(pod("b", "Running"));
  departed.departed(pod("done", "Succeeded"));
  json stranger = pod("other", "Failed");
  stranger["metadata"].erase("ownerReferences");
  departed.departed(stranger);

  auto kept = departed.of("uid-quickstart", {});
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0]["metadata"]["uid"], "a");
  EXPECT_FALSE(kept[0]["metadata"].contains("deletionTimestamp")) << "failed, then deleted";
  EXPECT_EQ(kept[1]["metadata"]["uid"], "b");
  EXPECT_EQ(kept[1]["metadata"]["deletionTimestamp"], format_rfc3339(fixture::kNow));

  EXPECT_EQ(departed.of("uid-quickstart", {"a"}).size(), 1u);
  EXPECT_EQ(departed.of("uid-quickstart", {}).size(), 1u) << "a is forgotten, b is not";
  clock.advance(std::chrono::minutes(5));
  EXPECT_TRUE(departed.of("uid-quickstart", {}).empty()) << "expired";
}

// A worker that failed on its own is kept as it failed (no deletionTimestamp): one seen Failed
// before its deletion was asked for, whatever its final object says. One deleted while running,
// which ended Failed on the way (exit 143 on SIGTERM), keeps its deletionTimestamp: ended by its
// deletion, not failed.
TEST(DepartedPods, KeepsAWorkerSeenFailedBeforeItsDeletionAsFailed) {
  FakeClock clock(fixture::kNow);
  DepartedPods departed(clock);
  json job = fixture::quickstart_job();
  job["metadata"]["name"] = "quickstart";
  auto pod = [&](const std::string& uid, const std::string& phase, bool deleting) {
    json p{{"metadata",
            {{"name", "quickstart-p0-" + uid},
             {"namespace", "default"},
             {"uid", uid},
             {"ownerReferences", json::array({owner_reference(job)})}}},
           {"status", {{"phase", phase}}}};
    if (deleting) {
      p["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
      p["metadata"]["deletionGracePeriodSeconds"] = 30;
    }
    return p;
  };
  departed.seen(pod("failed", "Running", false));
  departed.seen(pod("failed", "Failed", false));
  departed.seen(pod("failed", "Failed", true));
  departed.departed(pod("failed", "Failed", true));
  departed.seen(pod("stopped", "Running", false));
  departed.seen(pod("stopped", "Running", true));
  departed.departed(pod("stopped", "Failed", true));

  auto kept = departed.of("uid-quickstart", {});
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0]["metadata"]["uid"], "failed");
  EXPECT_FALSE(kept[0]["metadata"].contains("deletionTimestamp"));
  EXPECT_FALSE(kept[0]["metadata"].contains("deletionGracePeriodSeconds"));
  EXPECT_EQ(kept[1]["metadata"]["uid"], "stopped");
  EXPECT_TRUE(kept[1]["metadata"].contains("deletionTimestamp"));

  // Once deleted, a uid is no longer remembered as failed.
  departed.departed(pod("failed", "Failed", true));
  auto again = departed.of("uid-quickstart", {"stopped"});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again[0]["metadata"].contains("deletionTimestamp"));
}

}  // namespace
}  // namespace depl::controller
