#include "depl/cli/profile_runs.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace depl::cli {

namespace {
constexpr const char* kShardName = "profile";
constexpr const char* kNoisyShardName = "noisy";
}  // namespace

bool ProfileRun::uses_checkpoint() const {
  for (const WorkerStep& s : steps) {
    if (s.checkpoint != WorkerStep::Checkpoint::None) return true;
  }
  return false;
}

std::vector<std::string> worker_arguments(const ProfileRun& run, std::size_t step,
                                          const std::string& checkpoint_dir) {
  const WorkerStep& s = run.steps.at(step);
  // The shard layout travels inline (the worker takes a shards file's JSON text), so a pod
  // needs no file mounted for it.
  nlohmann::json layout = nlohmann::json::array({{{"name", kShardName}, {"samples", run.samples}}});
  std::string datasets = kShardName;
  if (run.noisy_samples > 0) {
    layout.push_back({{"name", kNoisyShardName},
                      {"samples", run.noisy_samples},
                      {"labelNoise", run.label_noise}});
    datasets += std::string(",") + kNoisyShardName;
  }
  const std::string shards = nlohmann::json{{"shards", layout}}.dump();
  std::vector<std::string> args = {"--data-dir",     run.data_dir,
                                   "--model",        s.variant,
                                   "--epochs",       std::to_string(s.epochs),
                                   "--start-epoch",  std::to_string(s.start_epoch),
                                   "--shards",       shards,
                                   "--datasets",     datasets,
                                   "--seed",         std::to_string(run.seed),
                                   "--test-samples", std::to_string(run.validation_samples)};
  if (s.eval_initial) args.emplace_back("--eval-initial");
  if (s.checkpoint == WorkerStep::Checkpoint::Write) {
    args.insert(args.end(), {"--checkpoint-dir", checkpoint_dir});
  } else if (s.checkpoint == WorkerStep::Checkpoint::InitFrom) {
    args.insert(args.end(), {"--init-from", checkpoint_dir});
  }
  return args;
}

Expected<std::vector<EpochLine>> parse_epoch_lines(std::string_view output) {
  std::vector<EpochLine> lines;
  while (!output.empty()) {
    const auto end = output.find('\n');
    std::string_view text = output.substr(0, end);
    output = end == std::string_view::npos ? std::string_view() : output.substr(end + 1);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.empty() || text.front() != '{') continue;  // a log line
    const auto line = nlohmann::json::parse(text, nullptr, false);
    if (!line.is_object() || !line.contains("epoch") || !line["epoch"].is_number_integer() ||
        !line.contains("loss") || !line["loss"].is_number()) {
      return error(fmt::format("the worker printed an unexpected line: {}", text));
    }
    auto number = [&](const char* key) -> std::optional<double> {
      const auto it = line.find(key);
      if (it == line.end() || !it->is_number()) return std::nullopt;
      return it->get<double>();
    };
    lines.push_back({line["epoch"].get<int>(), line["loss"].get<double>(),
                     number("seconds").value_or(0.0), number("computePerSampleGflop"),
                     number("parameterBytes")});
  }
  return lines;
}

}  // namespace depl::cli
