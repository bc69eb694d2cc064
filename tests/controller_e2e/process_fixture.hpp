// The end-to-end fixture for scenarios that run the real depl-controller binary as child
// processes (killed with SIGKILL and restarted, or two replicas with leader election) instead
// of the in-process controller: on top of ControllerE2e it records every write the store applies
// (WriteLog, with the writing replica's identity) and every status version of every job
// (StatusRecorder), and checks what must hold at the end of any such scenario.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "controller_process.hpp"
#include "e2e_fixture.hpp"
#include "status_recorder.hpp"
#include "write_log.hpp"

namespace depl::e2e {

// build/bin/depl-controller, or the binary DEPL_E2E_CONTROLLER names (to run the scenarios
// against another build of it, e.g. one without a fix, and see them fail).
fs::path controller_binary();

// DEPL_E2E_SEED when set (to replay another draw of a scenario's random moments), else
// `fallback`.
std::uint64_t seed_from_env(std::uint64_t fallback);

// One line of a worker's DEPL_SIM_ACK_FILE: a report the progress endpoint acknowledged.
struct Ack {
  int phase = 0;
  int rank = 0;
  int epoch = 0;
  double loss = 0;
  std::string action;
};

class ControllerProcessE2e : public ControllerE2e {
 protected:
  void SetUp() override;
  void TearDown() override;

  // start_cluster, then the write log and the status recorder.
  void start_recorded_cluster(const std::string& pools_file, ClusterSetup setup = {});

  // Starts depl-controller against the cluster as `identity` (also its log file's name), with
  // the flags every scenario needs (loopback rendezvous, checkpoints in the work directory,
  // metrics and health on port 0) and `extra`.
  std::unique_ptr<ControllerProcess> spawn_controller(const std::string& identity,
                                                      const std::vector<std::string>& extra);
  // Waits until `text` is in its log; false when it exited first or after `timeout`.
  bool wait_for_log(ControllerProcess& process, const std::string& text,
                    std::chrono::milliseconds timeout = kWait);

  // testdata/job.yaml as `name` with two ranks per phase, every worker paced at
  // `epoch_seconds`, retrying reports for a minute (DEPL_PROGRESS_RETRY_SECONDS) and
  // logging acknowledged ones to acks_file(name).
  json patient_job(const std::string& name, double epoch_seconds) const;
  fs::path acks_file(const std::string& job) const {
    return work_dir_ / ("acks-" + job + ".jsonl");
  }
  std::vector<Ack> acks(const std::string& job) const;

  // The checks every scenario ends with, for job `name` that has finished: no two live pods
  // for one (phase, rank) ever; its status never went backwards; every report acknowledged with
  // "continue" is in the status history with its loss; the status ends at or past the last
  // acknowledged epoch, with the loss of the last report recorded, and the outcome matches it
  // (Succeeded: that loss is at or below the target); no worker pod failed (unless the scenario
  // makes them fail: `pods_may_fail`); every pod left has a live owner; and deleting the job
  // removes its pods, Services and Secret.
  void expect_job_invariants(const std::string& name, bool pods_may_fail = false);

  std::unique_ptr<WriteLog> writes_;
  std::unique_ptr<StatusRecorder> statuses_;
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
};

}  // namespace depl::e2e
