// Checkpoints of the reference worker: what a phase leaves for the next one (or for itself after a
// restart). On disk: the 8 bytes "DEPLCKPT", a little-endian uint32 format version, a uint32
// header length, a JSON header (variant, width, shape, epoch, the position within the next epoch,
// counts, CRC-32 of the payload), then the parameters and the SGD velocity as raw little-endian
// float32. Reading validates every part; version 1 files (no position) are still read.
#pragma once

#include <string>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/worker/mlp.hpp"

namespace depl::worker {

inline constexpr std::uint32_t kCheckpointVersion = 2;
inline constexpr const char* kCheckpointFileName = "checkpoint.depl";

struct Checkpoint {
  std::string variant;  // the variant's name when it was written
  double width = 1.0;   // the variant's width
  int epoch = 0;        // epochs completed (global, across phases)
  // Samples of epoch + 1 already trained (a whole number of steps), when the worker was told to
  // stop in the middle of an epoch; 0 otherwise. train_loss_sum is their summed training loss.
  int step = 0;
  double train_loss_sum = 0;
  MlpParameters parameters;
  std::vector<float> velocity;  // SGD momentum; empty when unknown (starts at zero)
};

// `dir`/checkpoint.depl
std::string checkpoint_path(const std::string& dir);

// Writes to a temporary file in the same directory and renames it over the old checkpoint, so a
// reader (or a crash) never sees half a checkpoint. Creates the directory if needed.
Expected<void> write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

Expected<Checkpoint> read_checkpoint(const std::string& path);

}  // namespace depl::worker
