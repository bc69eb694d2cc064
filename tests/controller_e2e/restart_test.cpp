// The depl-controller binary killed with SIGKILL at seeded-random moments of a job's life, 20
// times in a row, and started again each time: during cache sync, right after it became ready,
// after its n-th write (a status, a pod, an event: between the writes of one reconcile), or a
// random delay into its run. The workers retry their reports across the gaps (the progress
// endpoint keeps its port). At the end the job must have finished as its workers' reports say,
// with no duplicate pod, no status going backwards and no acknowledged report lost.
// DEPL_E2E_SEED=<n> replays another draw.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <random>

#include "process_fixture.hpp"

namespace depl::e2e {
namespace {

constexpr int kKills = 20;

int progress_epoch(const json& job) {
  return job.value("status", json::object()).value("progress", json::object()).value("epoch", 0);
}

TEST_F(ControllerProcessE2e, ControllerKilledTwentyTimesMidJobLosesNothingAndTheJobCompletes) {
  const std::uint64_t seed = seed_from_env(20260611);
  std::mt19937_64 rng(seed);
  RecordProperty("seed", std::to_string(seed));
  SCOPED_TRACE(fmt::format("seed {} (DEPL_E2E_SEED={} replays it)", seed, seed));

  ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools.yaml"));
  // The progress endpoint keeps its address across restarts, as behind a Service.
  const std::uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  const std::vector<std::string> flags = {"--progress-addr", fmt::format("127.0.0.1:{}", port)};

  json job = patient_job("crashy", 0.1);
  job["spec"]["target"]["loss"] = 0.35;  // a longer run: about 30 epochs over two phases
  create_job(job);

  int kills_while_running = 0;
  std::vector<std::string> rounds;
  for (int round = 0; round < kKills; ++round) {
    const std::string identity = fmt::format("crashy-controller-{}", round);
    auto by_me = [identity](const Write& w) { return w.identity == identity; };
    auto controller = spawn_controller(identity, flags);
    ASSERT_TRUE(controller->started());
    std::string when;
    switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
      case 0: {  // while it lists and syncs its caches
        const int ms = std::uniform_int_distribution<int>(0, 150)(rng);
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));  // the kill time, drawn
        when = fmt::format("{} ms after exec", ms);
        break;
      }
      case 1: {  // a random delay into its run
        ASSERT_TRUE(wait_for_log(*controller, "caches synced"));
        const int ms = std::uniform_int_distribution<int>(0, 250)(rng);
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));  // the kill time, drawn
        when = fmt::format("{} ms after ready", ms);
        break;
      }
      default: {  // right after its n-th write, often between two writes of one reconcile
        ASSERT_TRUE(wait_for_log(*controller, "caches synced"));
        const int n = std::uniform_int_distribution<int>(1, 4)(rng);
        // While the job runs its worker reports every 0.1 s, and each report is a write; a
        // finished job (the scenario outlived it) is written no more.
        const bool wrote =
            writes_->wait_for(by_me, static_cast<std::size_t>(n), std::chrono::seconds(5));
        when = wrote ? fmt::format("after write {}", n)
                     : fmt::format("waiting for write {} (none came)", n);
        break;
      }
    }
    const std::string phase = job_phase(get_job("crashy"));
    if (phase != "Succeeded" && phase != "Failed") ++kills_while_running;
    controller->signal(SIGKILL);
    EXPECT_EQ(controller->wait(std::chrono::seconds(10)), 128 + SIGKILL);
    rounds.push_back(
        fmt::format("#{} killed {}, {} writes, job {}", round, when, writes_->count(by_me), phase));
  }

  auto last = spawn_controller("crashy-controller-last", flags);
  json done = wait_job(
      "crashy",
      [](const json& j) { return job_phase(j) == "Succeeded" || job_phase(j) == "Failed"; },
      "the job to finish", std::chrono::seconds(90));
  EXPECT_EQ(job_phase(done), "Succeeded") << done.value("status", json::object()).dump(1);
  std::string story;
  for (const auto& r : rounds) story += r + "\n";
  // Most kills should land while the job runs, or the scenario tests little.
  EXPECT_GE(kills_while_running, kKills * 3 / 4) << story;
  std::cout << "[ restarts ] seed " << seed << ", " << kills_while_running << " of " << kKills
            << " kills while the job ran, which ended at epoch " << progress_epoch(done)
            << " after " << statuses_->statuses("crashy").size() << " status versions\n"
            << story;

  expect_job_invariants("crashy");
  // Pods were adopted across restarts, not replaced: each (phase, rank) pod name had one
  // incarnation unless the phase itself restarted.
  for (const auto& pod : pods_->created_for("crashy")) {
    const std::string name = pod["metadata"].value("name", "");
    EXPECT_EQ(pods_->incarnations("default", name).size(), 1u) << name << " was recreated";
  }
}

// A controller away for five seconds mid-phase (killed, and started again on the same port, as a
// rescheduled pod behind its Service): the workers, with the contract's default retry deadline,
// wait it out, and none fails. Before, a report was tried five times over 1.6 s, then
// depl-sim-worker exited 4, a failure of the phase: four such outages failed the job.
TEST_F(ControllerProcessE2e, WorkersWaitOutAControllerAwayForSecondsWithTheDefaultRetry) {
  ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools.yaml"));
  const std::uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  const std::vector<std::string> flags = {"--progress-addr", fmt::format("127.0.0.1:{}", port)};
  json job = job_from("job.yaml", "outage", 0.2);
  for (json& model : job["spec"]["models"]) {
    // Acknowledged reports are logged for the checks; the retry deadline is the default.
    model["env"].push_back(
        {{"name", "DEPL_SIM_ACK_FILE"}, {"value", acks_file("outage").string()}});
  }
  create_job(job);
  auto first = spawn_controller("outage-controller-0", flags);
  ASSERT_TRUE(first->started());
  wait_job(
      "outage", [](const json& j) { return progress_epoch(j) >= 2; }, "epoch 2 reported");
  first->signal(SIGKILL);
  EXPECT_EQ(first->wait(std::chrono::seconds(10)), 128 + SIGKILL);
  // The outage itself: the workers report into it (an epoch every 0.2 s).
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const int epoch_at_return = progress_epoch(get_job("outage"));
  auto second = spawn_controller("outage-controller-1", flags);
  ASSERT_TRUE(second->started());
  const json done = wait_succeeded("outage");
  EXPECT_GT(progress_epoch(done), epoch_at_return);
  second->signal(SIGTERM);
  EXPECT_EQ(second->wait(std::chrono::seconds(30)), 0);
  expect_job_invariants("outage");  // among others: no worker pod failed
}

}  // namespace
}  // namespace depl::e2e
