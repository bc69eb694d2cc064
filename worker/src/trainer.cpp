#include "depl/worker/trainer.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace depl::worker {

Trainer::Trainer(MlpParameters parameters, TrainingOptions options, GradientAllReduce& all_reduce)
    : parameters_(std::move(parameters)),
      options_(options),
      all_reduce_(all_reduce),
      sgd_(parameters_.values().size(), options.sgd),
      kernel_(parameters_.shape(),
              std::max(kEvaluationBatch, (options.global_batch_size + all_reduce.world_size() - 1) /
                                             all_reduce.world_size())),
      gradient_(parameters_.shape()),
      reduce_buffer_(parameters_.values().size() + 2, 0.0f),
      batch_labels_(static_cast<std::size_t>(kernel_.max_batch())) {}

void Trainer::load_batch(const SampleSet& samples, const int* positions, int n) {
  const ImageTable& table = *samples.table;
  auto& inputs = kernel_.inputs();
  for (int i = 0; i < n; ++i) {
    const int position = positions[i];
    const std::uint8_t* pixels = table.image(samples.rows[static_cast<std::size_t>(position)]);
    float* row = inputs.row(i).data();
    for (int k = 0; k < table.pixels; ++k) row[k] = static_cast<float>(pixels[k]) * (1.0f / 255.0f);
    batch_labels_[static_cast<std::size_t>(i)] = samples.labels[static_cast<std::size_t>(position)];
  }
}

Expected<double> Trainer::train_epoch(const SampleSet& samples, int epoch) {
  auto run = train_epoch_from(samples, epoch, 0, {});
  if (!run) return unexpected(run.error());
  const int total = samples.size();
  return total > 0 ? run->loss_sum / total : 0.0;
}

Expected<EpochRun> Trainer::train_epoch_from(const SampleSet& samples, int epoch,
                                             int first_sample,
                                             const std::function<bool()>& stop_requested) {
  const int total = samples.size();
  order_.resize(static_cast<std::size_t>(total));
  std::iota(order_.begin(), order_.end(), 0);
  std::seed_seq seq{static_cast<std::uint32_t>(options_.seed),
                    static_cast<std::uint32_t>(options_.seed >> 32),
                    static_cast<std::uint32_t>(epoch)};
  std::mt19937_64 rng(seq);
  std::shuffle(order_.begin(), order_.end(), rng);

  const int world = all_reduce_.world_size();
  const int rank = all_reduce_.rank();
  const std::size_t count = parameters_.values().size();
  EpochRun run;
  for (int start = first_sample; start < total; start += options_.global_batch_size) {
    const int batch = std::min(options_.global_batch_size, total - start);
    // This rank's contiguous slice of the global batch; the slices of all ranks tile it.
    const int begin = start + batch * rank / world;
    const int end = start + batch * (rank + 1) / world;
    const int n = end - begin;
    if (n > 0) {
      load_batch(samples, order_.data() + begin, n);
      const BatchResult result = kernel_.loss_and_gradient(
          parameters_,
          std::span<const std::uint8_t>(batch_labels_.data(), static_cast<std::size_t>(n)),
          gradient_);
      std::copy(gradient_.values().begin(), gradient_.values().end(), reduce_buffer_.begin());
      reduce_buffer_[count] = static_cast<float>(result.loss_sum);
    } else {
      std::fill(reduce_buffer_.begin(), reduce_buffer_.end(), 0.0f);
    }
    reduce_buffer_[count + 1] = stop_requested && stop_requested() ? 1.0f : 0.0f;
    if (world > 1) {
      auto ok = all_reduce_.sum(reduce_buffer_);
      if (!ok) return unexpected(ok.error());
    }
    run.loss_sum += reduce_buffer_[count];
    sgd_.step(parameters_.values(), std::span<const float>(reduce_buffer_.data(), count),
              1.0f / static_cast<float>(batch));
    run.samples_done = start + batch;
    if (reduce_buffer_[count + 1] > 0.0f && run.samples_done < total) return run;
  }
  run.samples_done = total;
  run.complete = true;
  return run;
}

Evaluation Trainer::evaluate(const SampleSet& samples) {
  const int total = samples.size();
  std::vector<int> positions(static_cast<std::size_t>(std::min(total, kEvaluationBatch)));
  double loss_sum = 0.0;
  int correct = 0;
  for (int start = 0; start < total; start += kEvaluationBatch) {
    const int n = std::min(kEvaluationBatch, total - start);
    std::iota(positions.begin(), positions.begin() + n, start);
    load_batch(samples, positions.data(), n);
    const BatchResult r = kernel_.evaluate(
        parameters_,
        std::span<const std::uint8_t>(batch_labels_.data(), static_cast<std::size_t>(n)));
    loss_sum += r.loss_sum;
    correct += r.correct;
  }
  if (total == 0) return {};
  return {loss_sum / total, static_cast<double>(correct) / total};
}

}  // namespace depl::worker
