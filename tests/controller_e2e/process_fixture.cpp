#include "process_fixture.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "depl/controller/job_resource.hpp"
#include "depl/kube/resource.hpp"

namespace depl::e2e {

namespace resources = kube::resources;
using ::testing::IsEmpty;

fs::path controller_binary() {
  if (const char* other = std::getenv("DEPL_E2E_CONTROLLER")) return other;
  return fs::path(DEPL_BINARY_DIR) / "bin" / "depl-controller";
}

std::uint64_t seed_from_env(std::uint64_t fallback) {
  const char* text = std::getenv("DEPL_E2E_SEED");
  return text ? std::strtoull(text, nullptr, 10) : fallback;
}

void ControllerProcessE2e::SetUp() {
  ControllerE2e::SetUp();
  if (IsSkipped()) return;
  if (access(controller_binary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << controller_binary()
                 << " is not built (cmake --build <build> --target depl-controller)";
  }
}

void ControllerProcessE2e::TearDown() {
  ControllerE2e::TearDown();  // stops the cluster: no write or watch event after this
  statuses_.reset();
  writes_.reset();
}

void ControllerProcessE2e::start_recorded_cluster(const std::string& pools_file,
                                                  ClusterSetup setup) {
  ASSERT_NO_FATAL_FAILURE(start_cluster(pools_file, setup));
  writes_ = std::make_unique<WriteLog>(cluster_->store());
  statuses_ = std::make_unique<StatusRecorder>(cluster_->store());
  origin_ = std::chrono::steady_clock::now();
}

std::unique_ptr<ControllerProcess> ControllerProcessE2e::spawn_controller(
    const std::string& identity, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--kubeconfig",        controller_kubeconfig().string(),
                                   "--identity",          identity,
                                   "--metrics-addr",      "127.0.0.1:0",
                                   "--health-addr",       "127.0.0.1:0",
                                   "--rendezvous",        "loopback",
                                   "--checkpoint-root",   (work_dir_ / "checkpoints").string(),
                                   "--catalog-namespace", kControllerNamespace};
  args.insert(args.end(), extra.begin(), extra.end());
  auto process = std::make_unique<ControllerProcess>(controller_binary(), args,
                                                     work_dir_ / (identity + ".log"));
  EXPECT_TRUE(process->started()) << "cannot start " << controller_binary();
  return process;
}

bool ControllerProcessE2e::wait_for_log(ControllerProcess& process, const std::string& text,
                                        std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (process.log().find(text) != std::string::npos) return true;
    if (!process.running() || std::chrono::steady_clock::now() > until) {
      ADD_FAILURE() << "no \"" << text << "\" in the log of " << process.log_file() << ":\n"
                    << process.log();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

json ControllerProcessE2e::patient_job(const std::string& name, double epoch_seconds) const {
  json job = job_from("job.yaml", name, epoch_seconds);
  job["spec"]["training"]["workers"]["min"] = 2;
  for (json& model : job["spec"]["models"]) {
    model["env"].push_back({{"name", "DEPL_PROGRESS_RETRY_SECONDS"}, {"value", "60"}});
    model["env"].push_back({{"name", "DEPL_SIM_ACK_FILE"}, {"value", acks_file(name).string()}});
  }
  return job;
}

std::vector<Ack> ControllerProcessE2e::acks(const std::string& job) const {
  std::vector<Ack> out;
  std::ifstream in(acks_file(job));
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_object()) {
      ADD_FAILURE() << "unreadable line in " << acks_file(job) << ": " << line;
      continue;
    }
    out.push_back({j.value("phase", 0), j.value("rank", 0), j.value("epoch", 0),
                   j.value("loss", 0.0), j.value("action", "")});
  }
  return out;
}

void ControllerProcessE2e::expect_job_invariants(const std::string& name, bool pods_may_fail) {
  EXPECT_THAT(pods_->violations(), IsEmpty());
  EXPECT_THAT(statuses_->violations(), IsEmpty());

  // Acknowledged reports are in the status (the recorder saw every version of it). The recorder
  // reads the store's watch on a thread of its own: let it catch up with the status the API
  // serves now before reading what it saw (on a loaded machine it can lag behind the last write).
  const json served = get_job(name).value("status", json::object());
  EXPECT_TRUE(wait_until([&] {
    const auto seen = statuses_->statuses(name);
    return !seen.empty() && seen.back() == served;
  })) << "the status recorder never saw the job's last status";
  const auto reported = statuses_->reported(name);
  int acked_continue = 0;
  int last_epoch = 0;
  double last_loss = 0;
  for (const Ack& a : acks(name)) {
    if (a.rank != 0) continue;
    auto it = reported.find({a.phase, a.epoch});
    // Reports answered checkpointAndExit may rightly be unrecorded (past the phase's end, or
    // the job finished): the last one that counts is the last one recorded.
    if (it != reported.end() && a.epoch > last_epoch) {
      last_epoch = a.epoch;
      last_loss = a.loss;
    }
    if (a.action == "continue") {
      ++acked_continue;
      EXPECT_TRUE(it != reported.end())
          << "phase " << a.phase << " epoch " << a.epoch
          << " was acknowledged (continue) but never appeared in status.progress.history";
    }
    if (it != reported.end()) {
      EXPECT_DOUBLE_EQ(it->second, a.loss) << "phase " << a.phase << " epoch " << a.epoch;
    }
  }
  EXPECT_GT(acked_continue, 0) << "no report was acknowledged: the check above saw nothing";

  // The outcome is the one the workers' reports call for. The report that finished the job may
  // be recorded without its answer ever reaching the worker (its pod is stopped as the job
  // ends), so the last recorded epoch may be past the last acknowledged one, never before it.
  const json job = get_job(name);
  const json& status = job.value("status", json::object());
  const json progress = status.value("progress", json::object());
  const int final_epoch = progress.value("epoch", -1);
  EXPECT_GE(final_epoch, last_epoch) << "the last acknowledged epoch (loss " << last_loss << ")";
  auto final_report = reported.find({progress.value("phase", -1), final_epoch});
  ASSERT_TRUE(final_report != reported.end()) << "epoch " << final_epoch << " was never reported";
  EXPECT_DOUBLE_EQ(progress.value("loss", -1.0), final_report->second);
  const double target = job["spec"]["target"].value("loss", 0.0);
  if (job_phase(job) == "Succeeded") {
    EXPECT_EQ(condition_reason(job, "Succeeded"), "TargetReached");
    EXPECT_LE(progress.value("loss", 1e9), target);
  } else {
    EXPECT_EQ(job_phase(job), "Failed") << status.dump(1);
  }
  if (!pods_may_fail) {
    EXPECT_EQ(progress.value("failures", -1), 0) << "a worker pod failed";
    EXPECT_FALSE(has_event(name, "WorkerFailed"));
  }

  // Every pod left has a live owner.
  std::set<std::string> live_uids;
  for (const auto& j : list(controller::job_resource())) live_uids.insert(j["metadata"]["uid"]);
  for (const auto& pod : list(resources::pods())) {
    bool owned = false;
    for (const auto& o : pod["metadata"].value("ownerReferences", json::array()))
      owned = owned || live_uids.count(o.value("uid", "")) > 0;
    EXPECT_TRUE(owned) << "pod " << pod["metadata"].value("name", "") << " has no live owner";
  }

  // Deleting the job lets the garbage collector remove everything it owned.
  const std::string selector = "depl.dev/job=" + name;
  auto removed = client_->remove(controller::job_resource(), "default", name);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_TRUE(wait_until([&] {
    return pods_of(name).empty() && list(resources::services(), selector).empty() &&
           list(resources::secrets(), selector).empty();
  })) << "the job's pods, Services or Secret outlived it";
}

}  // namespace depl::e2e
