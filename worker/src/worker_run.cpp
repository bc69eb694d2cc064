#include "depl/worker/worker_run.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "depl/worker/checkpoint.hpp"
#include "depl/worker/progress_client.hpp"
#include "depl/worker/shards.hpp"
#include "depl/worker/variant_conversion.hpp"

namespace depl::worker {
namespace {

// Rank 0's decision after an epoch, broadcast to the other ranks: 0 train on, 1 stop (the phase
// ends), kStopUnreachable stop because the progress endpoint did not take the report.
constexpr float kStopUnreachable = 2.0f;

struct LoadedData {
  ImageTable train;
  ImageTable test;
  SampleSet samples;
  SampleSet validation;
};

Expected<void> load_data(const WorkerConfig& c, LoadedData& data) {
  auto layout = shard_layout_from_spec(c.shards, kFashionMnistTrainImages);
  if (!layout) return unexpected(layout.error());
  if (!c.label_noise.empty()) {
    auto ok = apply_label_noise(*layout, c.label_noise);
    if (!ok) return unexpected(ok.error());
  }
  std::vector<std::string> names = c.datasets;
  if (names.empty()) {
    for (const auto& s : layout->shards) names.push_back(s.name);
  }
  auto rows = rows_needed(*layout, names);
  if (!rows) return unexpected(rows.error());
  auto train = load_fashion_mnist(c.data_dir, DataSplit::Train, static_cast<std::size_t>(*rows));
  if (!train) return unexpected(train.error());
  data.train = std::move(*train);
  auto test =
      load_fashion_mnist(c.data_dir, DataSplit::Test, static_cast<std::size_t>(c.test_samples));
  if (!test) return unexpected(test.error());
  data.test = std::move(*test);
  if (data.test.pixels != data.train.pixels) {
    return error(fmt::format("{}: test images have {} pixels, training images {}", c.data_dir,
                             data.test.pixels, data.train.pixels));
  }
  auto samples = select_shards(data.train, *layout, names, kFashionMnistClasses);
  if (!samples) return unexpected(samples.error());
  data.samples = std::move(*samples);
  data.validation = leading_rows(data.test, c.test_samples);
  return {};
}

struct InitialState {
  MlpParameters parameters;
  std::vector<float> velocity;  // empty: zero
  int epoch = 0;
  int step = 0;                // samples of epoch + 1 already trained
  double train_loss_sum = 0;   // their summed training loss
};

// Brings a checkpoint to this run's variant: a different width is converted (and the momentum,
// which belongs to the old shape, dropped).
InitialState adopt(Checkpoint checkpoint, const WorkerConfig& c, int epoch) {
  InitialState state;
  const int hidden = c.variant.hidden_units();
  if (checkpoint.parameters.shape().hidden != hidden) {
    spdlog::info(
        "event=convert_checkpoint from_variant={} to_variant={} from_hidden={} to_hidden={}",
        checkpoint.variant, c.variant.name, checkpoint.parameters.shape().hidden, hidden);
    state.parameters = convert_hidden_width(checkpoint.parameters, hidden, c.seed);
  } else {
    state.parameters = std::move(checkpoint.parameters);
    state.velocity = std::move(checkpoint.velocity);
    // A partly trained epoch goes on where it stopped (a converted model starts it afresh).
    if (epoch == checkpoint.epoch) {
      state.step = checkpoint.step;
      state.train_loss_sum = checkpoint.train_loss_sum;
    }
  }
  state.epoch = epoch;
  return state;
}

Expected<InitialState> initial_state(const WorkerConfig& c, const MlpShape& shape) {
  if (c.rank == 0 && !c.checkpoint_dir.empty()) {
    const std::string path = checkpoint_path(c.checkpoint_dir);
    if (std::filesystem::exists(path)) {
      auto checkpoint = read_checkpoint(path);
      // A corrupt checkpoint is an error, not a reason to silently start over.
      if (!checkpoint) return unexpected(checkpoint.error());
      if (checkpoint->parameters.shape().inputs != shape.inputs ||
          checkpoint->parameters.shape().classes != shape.classes) {
        return error(
            fmt::format("checkpoint {}: made for {} inputs and {} classes, the data has {} "
                        "and {}",
                        path, checkpoint->parameters.shape().inputs,
                        checkpoint->parameters.shape().classes, shape.inputs, shape.classes));
      }
      spdlog::info("event=resume checkpoint={} epoch={} step={} variant={}", path,
                   checkpoint->epoch, checkpoint->step, checkpoint->variant);
      const int epoch = checkpoint->epoch;
      if (epoch < c.start_epoch) {
        spdlog::warn("event=checkpoint_behind checkpoint_epoch={} start_epoch={}", epoch,
                     c.start_epoch);
      }
      return adopt(std::move(*checkpoint), c, epoch);
    }
    if (c.start_epoch > 0 && c.init_from.empty()) {
      spdlog::warn("event=no_checkpoint dir={} start_epoch={} detail=\"training from scratch\"",
                   c.checkpoint_dir, c.start_epoch);
    }
  }
  if (c.rank == 0 && !c.init_from.empty()) {
    std::string path = c.init_from;
    if (std::filesystem::is_directory(path)) path = checkpoint_path(path);
    auto checkpoint = read_checkpoint(path);
    if (!checkpoint) return error(fmt::format("--init-from: {}", checkpoint.error().message));
    if (checkpoint->parameters.shape().inputs != shape.inputs ||
        checkpoint->parameters.shape().classes != shape.classes) {
      return error(fmt::format("--init-from {}: made for another input or class count", path));
    }
    auto state = adopt(std::move(*checkpoint), c, c.start_epoch);
    state.velocity.clear();  // new run, new optimiser
    return state;
  }
  InitialState state;
  state.parameters = MlpParameters(shape);
  initialise_parameters(state.parameters, c.seed);
  state.epoch = c.start_epoch;
  return state;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Expected<RunSummary> run_worker(const WorkerConfig& c, std::ostream& out) {
  LoadedData data;
  auto loaded = load_data(c, data);
  if (!loaded) return unexpected(loaded.error());
  const MlpShape shape{data.train.pixels, c.variant.hidden_units(), kFashionMnistClasses};
  spdlog::info(
      "event=data_loaded samples={} validation={} variant={} hidden={} rank={} "
      "world_size={}",
      data.samples.size(), data.validation.size(), c.variant.name, shape.hidden, c.rank,
      c.world_size);

  if (c.operator_context && !c.operator_context->loss_profile.empty()) {
    // Informational: lets a reader of the logs compare the curve with what the plan assumed.
    spdlog::info("event=assumed_loss_profile job={}/{} phase={} profile={}", c.operator_context->ns,
                 c.operator_context->job, c.operator_context->phase,
                 c.operator_context->loss_profile);
  }
  auto state = initial_state(c, shape);
  if (!state) return unexpected(state.error());

  std::unique_ptr<GradientAllReduce> all_reduce;
  if (c.world_size > 1) {
    TcpAllReduceOptions options;
    options.world_size = c.world_size;
    options.rank = c.rank;
    options.master_addr = c.master_addr;
    options.master_port = c.master_port;
    options.listen_address = c.listen_address;
    // The other ranks wait for rank 0's decision after each epoch, which waits for the progress
    // endpoint to take the report (up to the retry deadline).
    options.timeout = c.peer_timeout;
    if (c.operator_context) options.timeout += c.operator_context->progress_retry;
    options.on_listening = c.on_listening;
    auto connected = connect_tcp_all_reduce(options);
    if (!connected) return unexpected(connected.error());
    all_reduce = std::move(*connected);
  } else {
    all_reduce = make_single_rank_all_reduce();
  }

  TrainingOptions training;
  training.global_batch_size = c.batch_size;
  training.sgd = {c.learning_rate, c.momentum};
  training.seed = c.seed;
  Trainer trainer(std::move(state->parameters), training, *all_reduce);
  if (!state->velocity.empty()) {
    std::copy(state->velocity.begin(), state->velocity.end(),
              trainer.optimizer().velocity().begin());
  }
  int epoch = state->epoch;
  int step = state->step;
  double partial_loss_sum = state->train_loss_sum;
  if (c.world_size > 1) {
    // Every rank must start from rank 0's state, whatever it read or drew itself.
    const std::size_t n = trainer.parameters().values().size();
    std::vector<float> shared(2 * n + 3);
    std::copy_n(trainer.parameters().values().begin(), n, shared.begin());
    std::copy_n(trainer.optimizer().velocity().begin(), n, shared.begin() + static_cast<long>(n));
    shared[2 * n] = static_cast<float>(epoch);
    shared[2 * n + 1] = static_cast<float>(step);
    shared[2 * n + 2] = static_cast<float>(partial_loss_sum);
    auto ok = broadcast_from_rank0(*all_reduce, shared);
    if (!ok) return unexpected(ok.error());
    std::copy_n(shared.begin(), n, trainer.parameters().values().begin());
    std::copy_n(shared.begin() + static_cast<long>(n), n, trainer.optimizer().velocity().begin());
    epoch = static_cast<int>(shared[2 * n]);
    step = static_cast<int>(shared[2 * n + 1]);
    partial_loss_sum = shared[2 * n + 2];
  }
  if (step % c.batch_size != 0 || step >= data.samples.size()) {
    spdlog::warn("event=checkpoint_step_ignored step={} batch_size={} samples={}", step,
                 c.batch_size, data.samples.size());
    step = 0;
    partial_loss_sum = 0;
  }

  std::optional<ProgressClient> progress;
  if (c.operator_context && c.rank == 0) {
    ProgressClientOptions options;
    options.url = c.operator_context->progress_url;
    options.token = c.operator_context->progress_token;
    options.retry_for = c.operator_context->progress_retry;
    auto client = ProgressClient::create(std::move(options));
    if (!client) return unexpected(client.error());
    progress.emplace(std::move(*client));
  }

  RunSummary summary;
  summary.first_epoch = epoch;
  summary.last_epoch = epoch;
  const int end = c.start_epoch + c.epochs;
  // The standalone contract's cost fields (docs/worker-contract.md section 6), which
  // kubectl-depl profile writes into a job's models: 6 FLOP per parameter per sample for forward
  // and backward, float32 gradients.
  const double parameters = static_cast<double>(shape.parameter_count());
  auto report_line = [&](int e, const Evaluation& eval, double seconds,
                         std::optional<double> train) {
    nlohmann::json line = {{"epoch", e},
                           {"loss", eval.loss},
                           {"accuracy", eval.accuracy},
                           {"variant", c.variant.name},
                           {"seconds", seconds},
                           {"computePerSampleGflop", 6 * parameters * 1e-9},
                           {"parameterBytes", 4 * parameters}};
    if (train) line["trainLoss"] = *train;
    out << line.dump() << '\n' << std::flush;
  };
  if (c.eval_initial && c.rank == 0) {
    summary.last = trainer.evaluate(data.validation);
    report_line(epoch, summary.last, 0.0, std::nullopt);
  }

  if (epoch >= end) {
    spdlog::info("event=nothing_to_do epoch={} end_epoch={}", epoch, end);
    return summary;
  }
  // The phase ends at `end` (DEPL_START_EPOCH + DEPL_EPOCHS) unless the controller says otherwise:
  // "continue" at or past `end` means the plan grew while the pod ran, "checkpointAndExit" ends
  // the phase now. Rank 0 decides and broadcasts, so every rank stops after the same epoch.
  auto write = [&](int completed, int at_step, double loss_sum) -> Expected<void> {
    if (c.rank != 0 || c.checkpoint_dir.empty()) return {};
    Checkpoint checkpoint{c.variant.name,
                          c.variant.width,
                          completed,
                          at_step,
                          loss_sum,
                          trainer.parameters(),
                          std::vector<float>(trainer.optimizer().velocity().begin(),
                                             trainer.optimizer().velocity().end())};
    return write_checkpoint(checkpoint_path(c.checkpoint_dir), checkpoint);
  };
  for (;;) {
    const auto started = std::chrono::steady_clock::now();
    auto run = trainer.train_epoch_from(data.samples, epoch + 1, step, c.termination_requested);
    if (!run) return unexpected(run.error());
    if (!run->complete) {
      // Told to stop: every rank stopped after this same step; rank 0 keeps it.
      auto ok = write(epoch, run->samples_done, partial_loss_sum + run->loss_sum);
      if (!ok) return unexpected(ok.error());
      spdlog::info("event=terminated epoch={} step={} rank={} exit_code={}", epoch,
                   run->samples_done, c.rank, kExitTerminated);
      summary.terminated = true;
      summary.stopped_at_step = run->samples_done;
      return summary;
    }
    const double train_loss =
        (partial_loss_sum + run->loss_sum) / std::max(1, data.samples.size());
    step = 0;
    partial_loss_sum = 0;
    ++epoch;
    summary.last_epoch = epoch;
    float stop = epoch >= end ? 1.0f : 0.0f;
    if (c.rank == 0) {
      summary.last = trainer.evaluate(data.validation);
      report_line(epoch, summary.last, seconds_since(started), train_loss);
      auto ok = write(epoch, 0, 0.0);
      if (!ok) return unexpected(ok.error());
      if (progress) {
        auto action = progress->post({c.operator_context->phase, c.rank, epoch, summary.last.loss});
        if (!action) {
          if (action.error().rejected) return error(action.error().message);
          // Not taken within the retry deadline: every rank stops and exits
          // kExitProgressUnreachable; the checkpoint holds this epoch, and the controller restarts
          // the phase from it without counting a failure.
          spdlog::error("event=progress_unreachable job={}/{} epoch={} error=\"{}\"",
                        c.operator_context->ns, c.operator_context->job, epoch,
                        action.error().message);
          stop = kStopUnreachable;
        } else if (*action == ProgressAction::CheckpointAndExit) {
          stop = 1.0f;
          summary.stopped_by_controller = true;
        } else {
          stop = 0.0f;  // continue, also past the planned end
        }
      }
    }
    if (c.world_size > 1) {
      std::span<float> flag(&stop, 1);
      auto ok = broadcast_from_rank0(*all_reduce, flag);
      if (!ok) return unexpected(ok.error());
    }
    if (stop == kStopUnreachable) {
      summary.progress_unreachable = true;
      return summary;
    }
    if (stop != 0.0f) {
      if (epoch < end || summary.stopped_by_controller) {
        spdlog::info("event=checkpoint_and_exit epoch={} rank={}", epoch, c.rank);
        summary.stopped_by_controller = true;
      }
      return summary;
    }
  }
}

Expected<void> run_benchmark(const WorkerConfig& c, std::ostream& out) {
  constexpr int kSamples = 10000;
  auto train = load_fashion_mnist(c.data_dir, DataSplit::Train, kSamples);
  if (!train) return unexpected(train.error());
  if (train->count < kSamples) {
    return error(fmt::format("--bench needs {} training images, {} has {}", kSamples, c.data_dir,
                             train->count));
  }
  auto test = load_fashion_mnist(c.data_dir, DataSplit::Test, kSamples);
  if (!test) return unexpected(test.error());
  const SampleSet samples = leading_rows(*train, kSamples);
  const SampleSet validation = leading_rows(*test, std::min(c.test_samples, test->count));
  const MlpShape shape{train->pixels, c.variant.hidden_units(), kFashionMnistClasses};
  MlpParameters parameters(shape);
  initialise_parameters(parameters, c.seed);
  auto single = make_single_rank_all_reduce();
  Trainer trainer(std::move(parameters), {c.batch_size, {c.learning_rate, c.momentum}, c.seed},
                  *single);
  std::vector<double> train_cpu;
  std::vector<double> eval_cpu;
  const int epochs = std::max(1, c.epochs);
  for (int e = 1; e <= epochs; ++e) {
    const auto wall_start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_seconds();
    auto loss = trainer.train_epoch(samples, e);
    if (!loss) return unexpected(loss.error());
    const double train_cpu_s = thread_cpu_seconds() - cpu_start;
    const double train_wall_s = seconds_since(wall_start);
    const double eval_start = thread_cpu_seconds();
    const Evaluation eval = trainer.evaluate(validation);
    const double eval_cpu_s = thread_cpu_seconds() - eval_start;
    train_cpu.push_back(train_cpu_s);
    eval_cpu.push_back(eval_cpu_s);
    out << nlohmann::json{{"epoch", e},
                          {"variant", c.variant.name},
                          {"hidden", shape.hidden},
                          {"samples", kSamples},
                          {"trainCpuSeconds", train_cpu_s},
                          {"trainWallSeconds", train_wall_s},
                          {"validationCpuSeconds", eval_cpu_s},
                          {"validationSamples", validation.size()},
                          {"loss", eval.loss}}
               .dump()
        << '\n';
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  out << nlohmann::json{{"summary", "epoch of 10000 samples, one thread"},
                        {"variant", c.variant.name},
                        {"batchSize", c.batch_size},
                        {"medianTrainCpuSeconds", median(train_cpu)},
                        {"minTrainCpuSeconds",
                         *std::min_element(train_cpu.begin(), train_cpu.end())},
                        {"medianValidationCpuSeconds", median(eval_cpu)}}
             .dump()
      << '\n';
  return {};
}

}  // namespace depl::worker
