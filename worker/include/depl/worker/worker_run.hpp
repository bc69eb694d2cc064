// A whole run of the reference worker: load the shards, restore or initialise the model (converting
// a checkpoint of another variant), rendezvous with the other ranks, train epoch by epoch, report
// each epoch (a JSON line on `out`, and in operator mode a progress POST whose answer may stop the
// run), and checkpoint after every epoch, and mid-epoch when told to stop. Also the --bench
// measurement.
#pragma once

#include <ostream>

#include "depl/common/expected.hpp"
#include "depl/worker/trainer.hpp"
#include "depl/worker/worker_config.hpp"

namespace depl::worker {

// The exit code of a worker that stopped because it was told to (SIGTERM) after checkpointing
// where it was: 128 + SIGTERM, what a shell reports for a process SIGTERM ended.
inline constexpr int kExitTerminated = 143;

struct RunSummary {
  int first_epoch = 0;                 // epochs completed when training started (after any resume)
  int last_epoch = 0;                  // epochs completed when the run ended
  bool stopped_by_controller = false;  // the controller answered checkpointAndExit
  // The progress endpoint did not take a report within the retry deadline: the run stopped after
  // checkpointing that epoch, and the process exits kExitProgressUnreachable.
  bool progress_unreachable = false;
  // Told to stop (WorkerConfig::termination_requested) in the middle of an epoch: the checkpoint
  // holds the step every rank stopped after; the process exits kExitTerminated.
  bool terminated = false;
  int stopped_at_step = 0;  // samples of epoch last_epoch + 1 trained when terminated
  Evaluation last;                     // validation figures after the last epoch (rank 0)
};

// Writes one JSON line per epoch to `out` on rank 0:
// {"epoch","loss","accuracy","variant","seconds","trainLoss"}.
Expected<RunSummary> run_worker(const WorkerConfig& config, std::ostream& out);

// Times `config.epochs` (at least 1) epochs of `config.variant` over the first 10,000 training
// images in this thread, printing wall and CPU seconds per epoch and a summary line.
Expected<void> run_benchmark(const WorkerConfig& config, std::ostream& out);

}  // namespace depl::worker
