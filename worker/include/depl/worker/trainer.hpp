// One rank's share of synchronous data-parallel training: each epoch shuffles the samples with a
// permutation every rank computes alike (seeded by the run seed and the epoch), walks it in global
// batches, computes the gradient of this rank's slice of each batch, sums the gradients over all
// ranks and takes one SGD step with the mean. With one rank this is plain minibatch SGD, and any
// world size follows the same trajectory up to floating-point summation order.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/worker/all_reduce.hpp"
#include "depl/worker/mlp.hpp"
#include "depl/worker/momentum_sgd.hpp"
#include "depl/worker/shards.hpp"

namespace depl::worker {

struct TrainingOptions {
  int global_batch_size = 128;  // samples per SGD step over all ranks
  SgdOptions sgd;
  std::uint64_t seed = 1;
};

// How far one call of Trainer::train_epoch_from got.
struct EpochRun {
  double loss_sum = 0;    // summed training loss of the samples it trained
  int samples_done = 0;   // position in the epoch's permutation where it stopped
  bool complete = false;  // the epoch's last step was taken
};

struct Evaluation {
  double loss = 0.0;      // mean cross-entropy
  double accuracy = 0.0;  // share of arg-max hits
};

class Trainer {
 public:
  // `all_reduce` must outlive the trainer.
  Trainer(MlpParameters parameters, TrainingOptions options, GradientAllReduce& all_reduce);

  // Trains one epoch (`epoch` numbers it, globally, so the shuffle of a resumed run matches an
  // uninterrupted one). Returns the mean training loss over the epoch's samples.
  Expected<double> train_epoch(const SampleSet& samples, int epoch);

  // Trains epoch `epoch` from position `first_sample` of its permutation (a multiple of the
  // global batch size: where an interrupted run stopped). After every step each rank learns
  // whether any rank's `stop_requested` returned true (the flag travels with the gradients), and
  // then every rank stops after that same step, so all of them hold the same state.
  Expected<EpochRun> train_epoch_from(const SampleSet& samples, int epoch, int first_sample,
                                      const std::function<bool()>& stop_requested);

  // Loss and accuracy on a whole set (this rank alone: no communication).
  Evaluation evaluate(const SampleSet& samples);

  MlpParameters& parameters() { return parameters_; }
  const MlpParameters& parameters() const { return parameters_; }
  MomentumSgd& optimizer() { return sgd_; }

 private:
  void load_batch(const SampleSet& samples, const int* positions, int n);

  MlpParameters parameters_;
  TrainingOptions options_;
  GradientAllReduce& all_reduce_;
  MomentumSgd sgd_;
  MlpBatchKernel kernel_;
  MlpParameters gradient_;
  // The gradient, the slice's loss sum and the rank's stop request, reduced in one message.
  std::vector<float> reduce_buffer_;
  std::vector<int> order_;
  std::vector<std::uint8_t> batch_labels_;
};

// The evaluation batch size: large batches are faster and evaluation keeps no gradients.
inline constexpr int kEvaluationBatch = 500;

}  // namespace depl::worker
