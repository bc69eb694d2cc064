#include "depl/cli/profiling.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "depl/common/kubernetes_names.hpp"
#include "depl/worker/fashion_mnist.hpp"
#include "depl/worker/variant.hpp"

#include "depl/cli/local_run_executor.hpp"

namespace depl::cli {

namespace fs = std::filesystem;

namespace {

// Names a variant may have: they name the runs' pods and checkpoint directories.
std::string name_problem(const ProfileRequest& r, const std::string& name) {
  if (!r.known_variants.empty()) {
    if (std::find(r.known_variants.begin(), r.known_variants.end(), name) !=
        r.known_variants.end()) {
      return "";
    }
    std::string known;
    for (const auto& v : r.known_variants) known += (known.empty() ? "" : ", ") + v;
    return fmt::format("not a variant of {} (known: {})", r.worker, known);
  }
  if (name.size() > 40 || !has_dns1123_label_form(name)) {
    return "a variant's name must be a DNS-1123 label of at most 40 characters (lower case "
           "letters, digits, '-'): it names the profiling pods";
  }
  return "";
}

ProfileRun variant_run(const ProfileRequest& r, const std::string& name, int samples, int k) {
  ProfileRun run;
  run.seed = r.seed + static_cast<std::uint64_t>(k);
  run.name = fmt::format("{}-n{}-s{}", name, samples, run.seed);
  run.label = samples == r.samples
                  ? fmt::format("{} run {}/{}", name, k + 1, r.runs)
                  : fmt::format("{} run {}/{} on {} samples", name, k + 1, r.runs, samples);
  run.samples = samples;
  run.validation_samples = r.validation_samples;
  run.data_dir = r.data_dir;
  WorkerStep step;
  step.what = "training " + name;
  step.variant = name;
  step.epochs = r.epochs;
  step.eval_initial = true;
  run.steps.push_back(step);
  return run;
}

// A run on the clean shard plus the noisy one, for labelNoiseFloor.
ProfileRun noisy_run(const ProfileRequest& r, const std::string& name, int k) {
  ProfileRun run = variant_run(r, name, r.samples, k);
  run.name = fmt::format("{}-n{}-noisy{}-s{}", name, r.samples, r.noisy_samples, run.seed);
  run.label =
      fmt::format("{} run {}/{} with {} noisy samples", name, k + 1, r.runs, r.noisy_samples);
  run.noisy_samples = r.noisy_samples;
  run.label_noise = r.noisy_label_share;
  return run;
}

// The losses after epochs 1..E of K runs of one training step each.
Expected<std::vector<std::vector<double>>> run_losses(const ProfileRequest& r,
                                                      const std::vector<ProfileRun>& runs,
                                                      const std::vector<RunOutput>& outputs) {
  std::vector<std::vector<double>> out;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const StepOutput& lines = outputs[k].at(0);
    if (lines.size() != static_cast<std::size_t>(r.epochs) + 1) {
      return error(fmt::format("{}: the worker reported {} epochs, expected {}", runs[k].label,
                               static_cast<int>(lines.size()) - 1, r.epochs));
    }
    std::vector<double> losses;
    for (std::size_t t = 1; t < lines.size(); ++t) losses.push_back(lines[t].loss);
    out.push_back(std::move(losses));
  }
  return out;
}

ProfileRun switch_run(const ProfileRequest& r, std::size_t index, int k) {
  const SwitchPoint& point = r.switches[index];
  ProfileRun run;
  run.seed = r.seed + static_cast<std::uint64_t>(k);
  run.name = fmt::format("sw{}-{}-{}-e{}-s{}", index, point.from, point.to, point.epoch, run.seed);
  run.label =
      fmt::format("switch {}:{}@{} run {}/{}", point.from, point.to, point.epoch, k + 1, r.runs);
  run.samples = r.samples;
  run.validation_samples = r.validation_samples;
  run.data_dir = r.data_dir;
  WorkerStep before;
  before.what = "training " + point.from;
  before.variant = point.from;
  before.epochs = point.epoch;
  before.checkpoint = WorkerStep::Checkpoint::Write;
  WorkerStep after;
  after.what = "converting to " + point.to;
  after.variant = point.to;
  after.start_epoch = point.epoch;
  after.epochs = 0;  // only evaluate the converted weights
  after.eval_initial = true;
  after.checkpoint = WorkerStep::Checkpoint::InitFrom;
  run.steps = {before, after};
  return run;
}

// The K runs of one variant on `samples` samples per epoch (outputs[0..K)) and the fit.
Expected<VariantProfile> fit_variant(const ProfileRequest& r, const std::string& name, int samples,
                                     const std::vector<ProfileRun>& runs,
                                     const std::vector<RunOutput>& outputs) {
  VariantProfile out;
  out.name = name;
  if (!r.known_variants.empty()) {
    if (auto variant = worker::variant_from_name(name)) out.width = variant->width;
  }
  bool costed = false;
  double seconds = 0;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const StepOutput& lines = outputs[k].at(0);
    if (lines.size() != static_cast<std::size_t>(r.epochs) + 1) {
      return error(fmt::format("{}: the worker reported {} epochs, expected {}", runs[k].label,
                               static_cast<int>(lines.size()) - 1, r.epochs));
    }
    for (const EpochLine& line : lines) {
      if (costed || !line.compute_per_sample_gflop || !line.parameter_bytes) continue;
      out.compute_per_sample_gflop = *line.compute_per_sample_gflop;
      out.parameter_bytes = *line.parameter_bytes;
      costed = true;
    }
    out.initial_losses.push_back(lines.front().loss);
    std::vector<double> losses;
    for (std::size_t t = 1; t < lines.size(); ++t) {
      losses.push_back(lines[t].loss);
      seconds += lines[t].seconds;
    }
    out.runs.push_back(std::move(losses));
  }
  if (!costed || !(out.compute_per_sample_gflop > 0) || !(out.parameter_bytes >= 0)) {
    return error(fmt::format(
        "{}: {} printed no computePerSampleGflop (> 0) and parameterBytes in its epoch lines; a "
        "worker states its model's cost there (docs/worker-contract.md section 6)",
        name, r.worker));
  }
  out.epoch_seconds = seconds / (r.runs * r.epochs);
  double initial = 0;
  for (double l : out.initial_losses) initial += l / static_cast<double>(r.runs);
  auto fit = solver::fit_loss_profile(out.runs, initial);
  if (!fit) {
    return error(
        fmt::format("{} on {} samples: fitting the loss profile: {} (try more --epochs "
                    "or --samples)",
                    name, samples, fit.error().message));
  }
  out.fit = *fit;
  out.fit.profile.reference_samples = samples;
  out.fit.profile.data_exponent = 0;
  return out;
}

Expected<SwitchProfile> fit_switch(const SwitchPoint& point, const std::vector<ProfileRun>& runs,
                                   const std::vector<RunOutput>& outputs) {
  SwitchProfile out;
  out.point = point;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const StepOutput& trained = outputs[k].at(0);
    const StepOutput& converted = outputs[k].at(1);
    if (trained.empty()) {
      return error(fmt::format("{}: {}: no epoch reported", runs[k].label, runs[k].steps[0].what));
    }
    if (converted.size() != 1) {
      return error(fmt::format("{}: {}: no evaluation reported", runs[k].label,
                               runs[k].steps[1].what));
    }
    out.before.push_back(trained.back().loss);
    out.after.push_back(converted.front().loss);
  }
  auto jump = solver::fit_switch_jump(out.before, out.after);
  if (!jump) {
    return error(fmt::format("switch {}:{}@{}: {}", point.from, point.to, point.epoch,
                             jump.error().message));
  }
  out.jump = *jump;
  return out;
}

}  // namespace

const std::vector<std::string>& reference_worker_variants() {
  static const std::vector<std::string> names = {"full", "half", "quarter", "eighth"};
  return names;
}

void set_data_exponent(VariantProfile& variant, int samples, int other_samples,
                       double other_floor) {
  variant.exponent_samples = other_samples;
  variant.exponent_floor = other_floor;
  const double floor = variant.fit.profile.floor_loss;
  double alpha = 0;
  if (floor > 0 && other_floor > 0 && samples != other_samples) {
    alpha = std::log(floor / other_floor) / std::log(static_cast<double>(other_samples) / samples);
  }
  // The model's floor cannot rise with more data (alpha >= 0): a higher floor on more data is
  // noise, and crediting it would be wrong.
  variant.fit.profile.data_exponent = std::isfinite(alpha) ? std::max(0.0, alpha) : 0.0;
}

void set_label_noise_floor(VariantProfile& variant, int samples, int noisy_samples,
                           double label_share, const std::vector<std::vector<double>>& runs) {
  // The worker makes exactly round(q n) of the noisy shard's labels wrong.
  const double wrong = std::round(label_share * noisy_samples);
  const double total = static_cast<double>(samples) + noisy_samples;
  const double clean = total - wrong;
  variant.noisy_share = wrong / total;
  variant.noisy_final_loss = 0;
  for (const auto& run : runs) {
    if (!run.empty()) variant.noisy_final_loss += run.back() / static_cast<double>(runs.size());
  }
  // A profile fitted on `samples` clean samples: its referenceSamples is `samples`.
  const auto beta =
      solver::fit_label_noise_floor(variant.fit.profile, clean, variant.noisy_share, runs);
  variant.fit.profile.label_noise_floor = beta ? *beta : 0.0;
}

Expected<SwitchPoint> parse_switch_point(std::string_view text) {
  const auto colon = text.find(':');
  const auto at = text.find('@');
  if (colon == std::string_view::npos || at == std::string_view::npos || at < colon) {
    return error(fmt::format("--switch \"{}\": want FROM:TO@EPOCH, e.g. eighth:full@4", text));
  }
  SwitchPoint p;
  p.from = std::string(text.substr(0, colon));
  p.to = std::string(text.substr(colon + 1, at - colon - 1));
  const std::string_view epoch = text.substr(at + 1);
  const auto [end, ec] = std::from_chars(epoch.data(), epoch.data() + epoch.size(), p.epoch);
  if (ec != std::errc() || end != epoch.data() + epoch.size() || p.epoch < 1) {
    return error(
        fmt::format("--switch \"{}\": EPOCH must be a whole number >= 1, got \"{}\"", text, epoch));
  }
  if (p.from.empty() || p.to.empty()) {
    return error(fmt::format("--switch \"{}\": FROM and TO must name variants", text));
  }
  if (p.from == p.to) {
    return error(fmt::format("--switch \"{}\": FROM and TO are the same variant", text));
  }
  return p;
}

Expected<void> validate_profile_request(const ProfileRequest& r) {
  std::vector<std::string> problems;
  if (r.variants.empty()) problems.emplace_back("--variants: name at least one variant");
  for (const auto& v : r.variants) {
    if (const std::string problem = name_problem(r, v); !problem.empty()) {
      problems.push_back(fmt::format("--variants: \"{}\": {}", v, problem));
    }
  }
  for (std::size_t i = 0; i < r.variants.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (r.variants[i] == r.variants[j]) {
        problems.push_back(fmt::format("--variants: \"{}\" is listed twice", r.variants[i]));
      }
    }
  }
  if (r.runs < 1 || r.runs > 1000) {
    problems.push_back(fmt::format("--runs: must be in [1, 1000], got {}", r.runs));
  }
  if (r.epochs < 3 || r.epochs > 1000) {
    problems.push_back(
        fmt::format("--epochs: must be in [3, 1000] (the fit needs 3 epochs), got {}", r.epochs));
  }
  if (r.samples < 1 || r.samples > worker::kFashionMnistTrainImages) {
    problems.push_back(fmt::format("--samples: must be in [1, {}], got {}",
                                   worker::kFashionMnistTrainImages, r.samples));
  }
  if (r.exponent_samples != 0 &&
      (r.exponent_samples < 1 || r.exponent_samples > worker::kFashionMnistTrainImages ||
       r.exponent_samples == r.samples)) {
    problems.push_back(
        fmt::format("--exponent-samples: must be in [1, {}] and differ from "
                    "--samples ({}), got {}",
                    worker::kFashionMnistTrainImages, r.samples, r.exponent_samples));
  }
  if (r.noisy_samples != 0 &&
      (r.noisy_samples < 1 || r.samples + r.noisy_samples > worker::kFashionMnistTrainImages)) {
    problems.push_back(
        fmt::format("--noisy-samples: must be in [1, {}] (--samples and the noisy "
                    "shard together at most {}), got {}",
                    worker::kFashionMnistTrainImages - r.samples, worker::kFashionMnistTrainImages,
                    r.noisy_samples));
  }
  if (!(r.noisy_label_share > 0 && r.noisy_label_share < 1)) {
    problems.push_back(
        fmt::format("--noisy-label-share: must be in (0, 1), got {}", r.noisy_label_share));
  }
  if (r.validation_samples < 1 || r.validation_samples > 10000) {
    problems.push_back(
        fmt::format("--validation-samples: must be in [1, 10000], got {}", r.validation_samples));
  }
  for (const auto& s : r.switches) {
    for (const std::string* name : {&s.from, &s.to}) {
      if (const std::string problem = name_problem(r, *name); !problem.empty()) {
        problems.push_back(
            fmt::format("--switch {}:{}@{}: \"{}\": {}", s.from, s.to, s.epoch, *name, problem));
      }
    }
  }
  if (!problems.empty()) {
    std::string joined;
    for (const auto& p : problems) joined += (joined.empty() ? "" : "\n") + p;
    return error(joined);
  }
  return {};
}

std::vector<ProfileRun> profile_runs(const ProfileRequest& request) {
  std::vector<ProfileRun> runs;
  std::vector<int> sizes = {request.samples};
  if (request.exponent_samples > 0) sizes.push_back(request.exponent_samples);
  for (int samples : sizes) {
    for (const auto& name : request.variants) {
      for (int k = 0; k < request.runs; ++k) runs.push_back(variant_run(request, name, samples, k));
    }
  }
  if (request.noisy_samples > 0) {
    for (const auto& name : request.variants) {
      for (int k = 0; k < request.runs; ++k) runs.push_back(noisy_run(request, name, k));
    }
  }
  for (std::size_t i = 0; i < request.switches.size(); ++i) {
    for (int k = 0; k < request.runs; ++k) runs.push_back(switch_run(request, i, k));
  }
  return runs;
}

Expected<ProfileResult> run_profile(const ProfileRequest& request, ProfileRunExecutor& executor,
                                    const ProfileProgress& progress) {
  if (auto ok = validate_profile_request(request); !ok) return unexpected(ok.error());
  const std::vector<ProfileRun> runs = profile_runs(request);
  const int total = static_cast<int>(runs.size());
  int done = 0;
  auto outputs = executor.execute(runs, [&](std::size_t index) {
    if (progress) progress(++done, total, runs[index].label);
  });
  if (!outputs) return unexpected(outputs.error());

  // The runs come in groups of K, in the order profile_runs made them.
  const auto K = static_cast<std::size_t>(request.runs);
  std::size_t group = 0;
  auto next_group = [&] {
    const auto first = static_cast<std::ptrdiff_t>(group * K);
    const auto last = first + static_cast<std::ptrdiff_t>(K);
    ++group;
    return std::pair{std::vector<ProfileRun>(runs.begin() + first, runs.begin() + last),
                     std::vector<RunOutput>(outputs->begin() + first, outputs->begin() + last)};
  };
  ProfileResult result;
  result.request = request;
  for (const auto& name : request.variants) {
    auto [group_runs, group_outputs] = next_group();
    auto profile = fit_variant(request, name, request.samples, group_runs, group_outputs);
    if (!profile) return unexpected(profile.error());
    result.variants.push_back(std::move(*profile));
  }
  if (request.exponent_samples > 0) {
    for (VariantProfile& v : result.variants) {
      auto [group_runs, group_outputs] = next_group();
      auto other =
          fit_variant(request, v.name, request.exponent_samples, group_runs, group_outputs);
      if (!other) return unexpected(other.error());
      set_data_exponent(v, request.samples, request.exponent_samples,
                        other->fit.profile.floor_loss);
    }
  }
  if (request.noisy_samples > 0) {
    for (VariantProfile& v : result.variants) {
      auto [group_runs, group_outputs] = next_group();
      auto losses = run_losses(request, group_runs, group_outputs);
      if (!losses) return unexpected(losses.error());
      set_label_noise_floor(v, request.samples, request.noisy_samples, request.noisy_label_share,
                            *losses);
    }
  }
  for (const SwitchPoint& point : request.switches) {
    auto [group_runs, group_outputs] = next_group();
    auto profile = fit_switch(point, group_runs, group_outputs);
    if (!profile) return unexpected(profile.error());
    result.switches.push_back(std::move(*profile));
  }
  return result;
}

Expected<ProfileResult> run_profile(const ProfileRequest& request,
                                    const ProfileProgress& progress) {
  std::error_code ec;
  if (!fs::is_directory(request.data_dir, ec)) {
    return error(
        fmt::format("--data-dir {}: no such directory (the Debian package "
                    "dataset-fashion-mnist installs the data there; make deps)",
                    request.data_dir));
  }
  LocalRunExecutor executor(request.work_dir);
  return run_profile(request, executor, progress);
}

}  // namespace depl::cli
