// The time a spot reclaim costs a running job on the dev cluster, from the reclaim's start to the
// next round's workers running: a measurement run by hand, not a test (disabled; it asserts only
// that the job survives). docs/benchmarks.md ("Spot capacity") has the figures and the command:
//   build/tests/controller_e2e_tests --gtest_also_run_disabled_tests
//     --gtest_filter='ReclaimTiming.*'
// What it includes: the node's taint and the pods' DisruptionTarget, SIGTERM, depl-sim-worker's
// checkpoint and exit 143, the kubelet's finalisation and the pod's deletion, the controller's
// reconciles (the preemption counted, the round's peers stopped, the round's pods made again),
// scheduling, and the container's start; when the reclaim takes the pool's last node, the wait
// for the replacement node too (registered as soon as the old one is gone). Not included: a
// node's startupSeconds (the dev cluster's replacement is Ready when it registers) and the
// worker's own startup and checkpoint reload (depl-sim-worker has none to speak of).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "e2e_fixture.hpp"

namespace depl::e2e {
namespace {

using Clock = std::chrono::steady_clock;

int epoch_of(const json& job) {
  return job.value("status", json::object()).value("progress", json::object()).value("epoch", 0);
}

bool live(const json& pod) {
  return !pod_terminal(pod) && !pod["metadata"].contains("deletionTimestamp");
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class ReclaimTiming : public ControllerE2e {
 protected:
  // Reclaims the node under the job `name` `reclaims` times, each once the job has moved an
  // epoch on, with a replacement `replacement_after` later; prints, per reclaim, the milliseconds
  // until the next round's first pod exists and until all its workers run, then the medians.
  void measure(const std::string& name, int reclaims, std::chrono::milliseconds replacement_after,
               const char* what);
};

void ReclaimTiming::measure(const std::string& name, int reclaims,
                            std::chrono::milliseconds replacement_after, const char* what) {
  devcluster::DevCluster& cluster = *cluster_;
  std::vector<double> created_ms, running_ms;
  int epoch = 0;
  for (int i = 0; i < reclaims; ++i) {
    const json job = wait_job(
        name, [&](const json& j) { return epoch_of(j) > epoch; }, "an epoch before the reclaim");
    epoch = epoch_of(job);
    std::set<std::string> before;
    std::string node;
    int workers = 0;
    ASSERT_TRUE(wait_until([&] {
      before.clear();
      node.clear();
      workers = 0;
      for (const auto& pod : pods_of(name)) {
        before.insert(pod["metadata"].value("uid", ""));
        if (!live(pod) || pod.value("status", json::object()).value("phase", "") != "Running")
          continue;
        node = pod["spec"].value("nodeName", "");
        ++workers;
      }
      return !node.empty();
    })) << "no running worker";
    devcluster::DevCluster::ReclaimOptions options;
    options.notice = std::chrono::seconds(10);
    options.replacement_after = replacement_after;
    const auto start = Clock::now();
    auto reclaimed = cluster.reclaim_node(node, options);
    ASSERT_TRUE(reclaimed) << reclaimed.error().message;
    double created = -1;
    bool all_running = false;
    while (!all_running && Clock::now() - start < std::chrono::seconds(60)) {
      int running = 0, fresh = 0;
      for (const auto& pod : pods_of(name)) {
        if (before.count(pod["metadata"].value("uid", "")) || !live(pod)) continue;
        ++fresh;
        if (pod.value("status", json::object()).value("phase", "") == "Running") ++running;
      }
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (fresh > 0 && created < 0) created = ms;
      if (fresh > 0 && running == fresh && running >= workers) {
        all_running = true;
        running_ms.push_back(ms);
        created_ms.push_back(created);
        std::printf(
            "%s: reclaim %d: next round's first pod after %.0f ms, %d workers running "
            "after %.0f ms\n",
            what, i + 1, created, running, ms);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(all_running) << "the round did not start again within 60 s";
  }
  std::printf(
      "%s: %d reclaims: median %.0f ms to the next round's first pod, %.0f ms to its "
      "workers running\n",
      what, reclaims, median(created_ms), median(running_ms));
}

TEST_F(ReclaimTiming, DISABLED_RestartTimeAfterAReclaimThatLeavesThePoolANode) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools-spot.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "timed", 0.3));
  measure("timed", 5, std::chrono::seconds(1), "pool keeps a node");
  wait_succeeded("timed");
}

TEST_F(ReclaimTiming, DISABLED_RestartTimeAfterAReclaimThatTakesThePoolsLastNode) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools-spot-single.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "timed", 0.3));
  measure("timed", 5, std::chrono::milliseconds(0), "pool's last node");
  wait_succeeded("timed");
}

}  // namespace
}  // namespace depl::e2e
