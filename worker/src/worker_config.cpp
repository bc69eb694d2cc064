#include "depl/worker/worker_config.hpp"

#include <charconv>
#include <cstdlib>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "depl/worker/progress_client.hpp"
#include "depl/worker/shards.hpp"

namespace depl::worker {
namespace {

Expected<long long> parse_integer(const std::string& name, const std::string& text, long long min,
                                  long long max) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || p != end || value < min || value > max) {
    return error(fmt::format("{}: want an integer in [{}, {}], got '{}'", name, min, max, text));
  }
  return value;
}

Expected<double> parse_number(const std::string& name, const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || p != end) {
    return error(fmt::format("{}: want a number, got '{}'", name, text));
  }
  return value;
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Expected<void> validate_worker_config(const WorkerConfig& c) {
  if (c.epochs < 0) return error(fmt::format("epochs: must be >= 0, got {}", c.epochs));
  if (c.start_epoch < 0)
    return error(fmt::format("start epoch: must be >= 0, got {}", c.start_epoch));
  if (c.world_size < 1) return error(fmt::format("world size: must be >= 1, got {}", c.world_size));
  if (c.rank < 0 || c.rank >= c.world_size) {
    return error(fmt::format("rank: must be in [0, {}), got {}", c.world_size, c.rank));
  }
  if (c.batch_size < 1) return error(fmt::format("batch size: must be >= 1, got {}", c.batch_size));
  if (!(c.learning_rate > 0.0f)) {
    return error(fmt::format("learning rate: must be > 0, got {}", c.learning_rate));
  }
  if (!(c.momentum >= 0.0f && c.momentum < 1.0f)) {
    return error(fmt::format("momentum: must be in [0, 1), got {}", c.momentum));
  }
  if (c.test_samples < 1) {
    return error(fmt::format("test samples: must be >= 1, got {}", c.test_samples));
  }
  if (c.world_size > 1 && c.master_port == 0 && c.rank != 0) {
    return error("master port: ranks other than 0 need the port rank 0 listens on");
  }
  return {};
}

Expected<void> apply_operator_environment(WorkerConfig& c, const EnvironmentLookup& env) {
  auto required = [&](const std::string& name, const std::string& what) -> Expected<std::string> {
    auto value = env(name);
    if (!value || value->empty()) {
      return error(fmt::format("{} is not set; the operator sets it to {}", name, what));
    }
    return *value;
  };
  auto integer = [&](const std::string& name, const std::string& what, long long min,
                     long long max) -> Expected<long long> {
    auto text = required(name, what);
    if (!text) return unexpected(text.error());
    return parse_integer(name, *text, min, max);
  };

  OperatorContext op;
  auto job = required("DEPL_JOB", "the DependableTrainingJob's name");
  if (!job) return unexpected(job.error());
  op.job = *job;
  auto ns = required("DEPL_NAMESPACE", "the job's namespace");
  if (!ns) return unexpected(ns.error());
  op.ns = *ns;
  auto phase = integer("DEPL_PHASE", "the plan phase's index", 0, 1 << 20);
  if (!phase) return unexpected(phase.error());
  op.phase = static_cast<int>(*phase);

  auto model = required("DEPL_MODEL", "the name of this phase's model variant");
  if (!model) return unexpected(model.error());
  if (auto width_text = env("DEPL_WIDTH"); width_text && !width_text->empty()) {
    auto width = parse_number("DEPL_WIDTH", *width_text);
    if (!width) return unexpected(width.error());
    if (!(*width > 0.0 && *width <= 1.0)) {
      return error(fmt::format("DEPL_WIDTH: want a fraction in (0, 1], got '{}'", *width_text));
    }
    c.variant = Variant{*model, *width};
  } else {
    auto variant = variant_from_name(*model);
    if (!variant) {
      return error(
          fmt::format("DEPL_MODEL: '{}' is not a variant of the reference worker (full, "
                      "half, quarter, eighth); for another name set DEPL_WIDTH in the "
                      "model's env",
                      *model));
    }
    c.variant = *variant;
  }
  auto epochs = integer("DEPL_EPOCHS", "the number of epochs of this phase", 0, 1 << 20);
  if (!epochs) return unexpected(epochs.error());
  c.epochs = static_cast<int>(*epochs);
  auto start = integer("DEPL_START_EPOCH", "the epochs trained before this phase", 0, 1 << 20);
  if (!start) return unexpected(start.error());
  c.start_epoch = static_cast<int>(*start);
  auto datasets = required("DEPL_DATASETS", "the comma-separated datasets of the plan");
  if (!datasets) return unexpected(datasets.error());
  c.datasets = split_names(*datasets);
  if (c.datasets.empty()) return error("DEPL_DATASETS: names no dataset");
  auto checkpoint = required("DEPL_CHECKPOINT_DIR", "the job's checkpoint directory");
  if (!checkpoint) return unexpected(checkpoint.error());
  c.checkpoint_dir = *checkpoint;
  auto url = required("DEPL_PROGRESS_URL", "the controller's progress endpoint");
  if (!url) return unexpected(url.error());
  op.progress_url = *url;
  auto token = required("DEPL_PROGRESS_TOKEN", "the job's token (from its Secret)");
  if (!token) return unexpected(token.error());
  op.progress_token = *token;
  if (auto profile = env("DEPL_LOSS_PROFILE"); profile && !profile->empty()) {
    if (!nlohmann::json::accept(*profile)) {
      return error("DEPL_LOSS_PROFILE: not valid JSON (want the loss profile the plan assumed)");
    }
    op.loss_profile = *profile;
  }

  auto retry = parse_progress_retry(env("DEPL_PROGRESS_RETRY_SECONDS").value_or(""));
  if (!retry) return unexpected(retry.error());
  op.progress_retry = *retry;

  // torch.distributed conventions; a single worker may omit them.
  if (auto world = env("WORLD_SIZE"); world && !world->empty()) {
    auto value = parse_integer("WORLD_SIZE", *world, 1, 4096);
    if (!value) return unexpected(value.error());
    c.world_size = static_cast<int>(*value);
  } else {
    c.world_size = 1;
  }
  if (auto rank = env("RANK"); rank && !rank->empty()) {
    auto value = parse_integer("RANK", *rank, 0, c.world_size - 1);
    if (!value) return unexpected(value.error());
    c.rank = static_cast<int>(*value);
  } else if (c.world_size > 1) {
    return error("RANK is not set; with WORLD_SIZE > 1 every worker needs its rank");
  } else {
    c.rank = 0;
  }
  if (c.world_size > 1) {
    auto addr = required("MASTER_ADDR", "rank 0's address when WORLD_SIZE > 1");
    if (!addr) return unexpected(addr.error());
    c.master_addr = *addr;
    auto port = integer("MASTER_PORT", "rank 0's port when WORLD_SIZE > 1", 1, 65535);
    if (!port) return unexpected(port.error());
    c.master_port = static_cast<std::uint16_t>(*port);
  }

  // The reference worker's own knobs, settable through a model's `env` in the job.
  if (auto v = env("DEPL_DATA_DIR"); v && !v->empty()) c.data_dir = *v;
  if (auto v = env("DEPL_SHARDS"); v && !v->empty()) c.shards = *v;
  if (auto v = env("DEPL_LABEL_NOISE"); v) c.label_noise = *v;
  if (auto v = env("DEPL_SEED"); v && !v->empty()) {
    auto seed = parse_integer("DEPL_SEED", *v, 0, std::numeric_limits<long long>::max());
    if (!seed) return unexpected(seed.error());
    c.seed = static_cast<std::uint64_t>(*seed);
  }
  if (auto v = env("DEPL_BATCH_SIZE"); v && !v->empty()) {
    auto batch = parse_integer("DEPL_BATCH_SIZE", *v, 1, 1 << 20);
    if (!batch) return unexpected(batch.error());
    c.batch_size = static_cast<int>(*batch);
  }
  if (auto v = env("DEPL_LR"); v && !v->empty()) {
    auto lr = parse_number("DEPL_LR", *v);
    if (!lr) return unexpected(lr.error());
    if (!(*lr > 0.0)) return error(fmt::format("DEPL_LR: want a positive number, got '{}'", *v));
    c.learning_rate = static_cast<float>(*lr);
  }
  if (auto v = env("DEPL_TEST_SAMPLES"); v && !v->empty()) {
    auto n = parse_integer("DEPL_TEST_SAMPLES", *v, 1, 1 << 24);
    if (!n) return unexpected(n.error());
    c.test_samples = static_cast<int>(*n);
  }
  c.operator_context = std::move(op);
  return {};
}

Expected<ParsedCommandLine> parse_worker_command_line(int argc, const char* const* argv,
                                                      const EnvironmentLookup& env) {
  ParsedCommandLine parsed;
  WorkerConfig& c = parsed.config;
  std::string variant_name = "full";
  double width = 0.0;
  std::string datasets;
  int master_port = c.master_port;
  if (auto p = env("MASTER_PORT"); p && !p->empty()) {
    auto value = parse_integer("MASTER_PORT", *p, 0, 65535);
    if (!value) return unexpected(value.error());
    master_port = static_cast<int>(*value);
  }
  if (auto a = env("MASTER_ADDR"); a && !a->empty()) c.master_addr = *a;
  double peer_timeout_seconds = 120.0;

  CLI::App app{
      "depl-reference-worker: an MLP on Fashion-MNIST, trained with synchronous data-parallel "
      "SGD. Runs standalone from these flags, or as a DepL operator worker when DEPL_JOB is set "
      "(docs/worker-contract.md)."};
  app.add_option("--data-dir", c.data_dir, "directory of the Fashion-MNIST IDX files");
  app.add_option("--model,--variant", variant_name, "full, half, quarter or eighth");
  app.add_option("--width", width, "hidden width as a fraction of the full variant (0, 1]");
  app.add_option("--epochs", c.epochs, "epochs to train");
  app.add_option("--start-epoch", c.start_epoch, "epochs already trained (numbers the epochs)");
  app.add_option("--datasets", datasets, "comma-separated shard names (default: all shards)");
  app.add_option("--shards", c.shards, "shard count (names shard0..), a shards JSON file or its JSON text");
  app.add_option("--label-noise", c.label_noise, "noisy shards: name=fraction,...");
  app.add_option("--seed", c.seed, "seed of initialisation and shuffling");
  app.add_option("--checkpoint-dir", c.checkpoint_dir,
                 "resume from a checkpoint here; write one after every epoch");
  app.add_option("--init-from", c.init_from,
                 "start from the weights of this checkpoint (converted to --variant)");
  app.add_option("--world-size", c.world_size, "number of data-parallel ranks");
  app.add_option("--rank", c.rank, "this process's rank");
  app.add_option("--master-addr", c.master_addr, "rank 0's address (env MASTER_ADDR)");
  app.add_option("--master-port", master_port, "rank 0's port (env MASTER_PORT)");
  app.add_option("--peer-timeout", peer_timeout_seconds, "seconds to wait for a peer");
  app.add_option("--batch-size", c.batch_size, "global batch size (samples per SGD step)");
  app.add_option("--lr", c.learning_rate, "learning rate");
  app.add_option("--momentum", c.momentum, "SGD momentum");
  app.add_option("--test-samples", c.test_samples, "validate on the first N test images");
  app.add_flag("--eval-initial", c.eval_initial, "also report the loss before the first epoch");
  app.add_flag("--bench", c.bench, "time epochs of 10,000 samples on one core and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    parsed.help = app.help();
    return parsed;
  } catch (const CLI::ParseError& e) {
    return error(fmt::format("command line: {}", e.what()));
  }

  if (width != 0.0) {
    auto variant = variant_from_width(width);
    if (!variant) return error(fmt::format("--width: {}", variant.error().message));
    c.variant = *variant;
  } else {
    auto variant = variant_from_name(variant_name);
    if (!variant) return error(fmt::format("--model: {}", variant.error().message));
    c.variant = *variant;
  }
  if (master_port < 0 || master_port > 65535) {
    return error(fmt::format("--master-port: want 0..65535, got {}", master_port));
  }
  c.master_port = static_cast<std::uint16_t>(master_port);
  if (!(peer_timeout_seconds > 0)) return error("--peer-timeout: must be > 0");
  c.peer_timeout = std::chrono::milliseconds(static_cast<long long>(peer_timeout_seconds * 1000));
  c.datasets = split_names(datasets);

  if (auto job = env("DEPL_JOB"); job && !job->empty()) {
    auto ok = apply_operator_environment(c, env);
    if (!ok) return unexpected(ok.error());
  }
  auto ok = validate_worker_config(c);
  if (!ok) return unexpected(ok.error());
  return parsed;
}

}  // namespace depl::worker
