#include "depl/cli/profiling.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "depl/worker/fashion_mnist.hpp"
#include "depl/worker/mlp.hpp"
#include "depl/worker/variant.hpp"
#include "depl/worker/worker_run.hpp"

namespace depl::cli {

namespace fs = std::filesystem;

namespace {

constexpr int kImagePixels = 28 * 28;
constexpr const char* kShardName = "profile";

// One reported epoch of a run: the worker's JSON line.
struct EpochLine {
  int epoch = 0;
  double loss = 0;
  double seconds = 0;
};

Expected<std::vector<EpochLine>> run_reference_worker(const worker::WorkerConfig& config) {
  std::ostringstream out;
  auto ran = worker::run_worker(config, out);
  if (!ran) return unexpected(ran.error());
  std::vector<EpochLine> lines;
  std::istringstream in(out.str());
  std::string text;
  while (std::getline(in, text)) {
    const auto line = nlohmann::json::parse(text, nullptr, false);
    if (!line.is_object() || !line.contains("epoch") || !line.contains("loss")) {
      return error(fmt::format("the worker printed an unexpected line: {}", text));
    }
    lines.push_back(
        {line["epoch"].get<int>(), line["loss"].get<double>(), line.value("seconds", 0.0)});
  }
  return lines;
}

// The run settings every profiling run shares.
worker::WorkerConfig base_config(const ProfileRequest& r, const std::string& shards_file) {
  worker::WorkerConfig c;
  c.data_dir = r.data_dir;
  c.shards = shards_file;
  c.datasets = {kShardName};
  c.test_samples = r.validation_samples;
  return c;
}

Expected<worker::Variant> variant_named(const std::string& name, const char* what) {
  auto variant = worker::variant_from_name(name);
  if (!variant) return error(fmt::format("{} \"{}\": {}", what, name, variant.error().message));
  return variant;
}

// K runs of one variant on `samples` samples per epoch (the shard in `shards_file`) and the fit.
Expected<VariantProfile> profile_variant(const ProfileRequest& r, const std::string& name,
                                         int samples, const std::string& shards_file, int& done,
                                         int total, const ProfileProgress& progress) {
  auto variant = variant_named(name, "--variants");
  if (!variant) return unexpected(variant.error());
  VariantProfile out;
  out.name = name;
  out.width = variant->width;
  const worker::MlpShape shape{kImagePixels, variant->hidden_units(), worker::kFashionMnistClasses};
  const double parameters = static_cast<double>(shape.parameter_count());
  out.compute_per_sample_gflop = 6 * parameters * 1e-9;
  out.parameter_bytes = 4 * parameters;
  double seconds = 0;
  for (int k = 0; k < r.runs; ++k) {
    worker::WorkerConfig c = base_config(r, shards_file);
    c.variant = *variant;
    c.epochs = r.epochs;
    c.seed = r.seed + static_cast<std::uint64_t>(k);
    c.eval_initial = true;
    auto lines = run_reference_worker(c);
    if (!lines) return error(fmt::format("{} run {}: {}", name, k + 1, lines.error().message));
    if (lines->size() != static_cast<std::size_t>(r.epochs) + 1) {
      return error(fmt::format("{} run {}: the worker reported {} epochs, expected {}", name, k + 1,
                               lines->size() - 1, r.epochs));
    }
    out.initial_losses.push_back(lines->front().loss);
    std::vector<double> losses;
    for (std::size_t t = 1; t < lines->size(); ++t) {
      losses.push_back((*lines)[t].loss);
      seconds += (*lines)[t].seconds;
    }
    out.runs.push_back(std::move(losses));
    if (progress) {
      progress(++done, total,
               samples == r.samples
                   ? fmt::format("{} run {}/{}", name, k + 1, r.runs)
                   : fmt::format("{} run {}/{} on {} samples", name, k + 1, r.runs, samples));
    }
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

Expected<SwitchProfile> profile_switch(const ProfileRequest& r, std::size_t index,
                                       const std::string& shards_file, int& done, int total,
                                       const ProfileProgress& progress) {
  const SwitchPoint& point = r.switches[index];
  const std::string label = fmt::format("switch {}:{}@{}", point.from, point.to, point.epoch);
  auto from = variant_named(point.from, "--switch");
  if (!from) return unexpected(from.error());
  auto to = variant_named(point.to, "--switch");
  if (!to) return unexpected(to.error());
  SwitchProfile out;
  out.point = point;
  for (int k = 0; k < r.runs; ++k) {
    const fs::path checkpoints = fs::path(r.work_dir) / fmt::format("switch{}-run{}", index, k + 1);
    std::error_code ec;
    fs::remove_all(checkpoints, ec);  // a stale checkpoint would be resumed
    fs::create_directories(checkpoints, ec);
    if (ec)
      return error(
          fmt::format("{}: cannot create {}: {}", label, checkpoints.string(), ec.message()));
    worker::WorkerConfig before = base_config(r, shards_file);
    before.variant = *from;
    before.epochs = point.epoch;
    before.seed = r.seed + static_cast<std::uint64_t>(k);
    before.checkpoint_dir = checkpoints.string();
    auto trained = run_reference_worker(before);
    if (!trained || trained->empty()) {
      return error(fmt::format("{} run {}: training {}: {}", label, k + 1, point.from,
                               trained ? "no epoch reported" : trained.error().message));
    }
    worker::WorkerConfig after = base_config(r, shards_file);
    after.variant = *to;
    after.init_from = checkpoints.string();
    after.start_epoch = point.epoch;
    after.epochs = 0;  // only evaluate the converted weights
    after.eval_initial = true;
    after.seed = before.seed;
    auto converted = run_reference_worker(after);
    if (!converted || converted->size() != 1) {
      return error(fmt::format("{} run {}: converting to {}: {}", label, k + 1, point.to,
                               converted ? "no evaluation reported" : converted.error().message));
    }
    out.before.push_back(trained->back().loss);
    out.after.push_back(converted->front().loss);
    fs::remove_all(checkpoints, ec);
    if (progress) progress(++done, total, fmt::format("{} run {}/{}", label, k + 1, r.runs));
  }
  auto jump = solver::fit_switch_jump(out.before, out.after);
  if (!jump) return error(fmt::format("{}: {}", label, jump.error().message));
  out.jump = *jump;
  return out;
}

Expected<std::string> write_shards_file(const std::string& dir, const char* name, int samples) {
  const std::string path = (fs::path(dir) / name).string();
  std::ofstream out(path, std::ios::trunc);
  out << nlohmann::json{{"shards", {{{"name", kShardName}, {"samples", samples}}}}}.dump();
  if (!out) return error(fmt::format("cannot write {}", path));
  return path;
}

}  // namespace

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
    if (auto variant = worker::variant_from_name(v); !variant) {
      problems.push_back(fmt::format("--variants: \"{}\": {}", v, variant.error().message));
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
  if (r.validation_samples < 1 || r.validation_samples > 10000) {
    problems.push_back(
        fmt::format("--validation-samples: must be in [1, 10000], got {}", r.validation_samples));
  }
  for (const auto& s : r.switches) {
    for (const std::string* name : {&s.from, &s.to}) {
      if (auto variant = worker::variant_from_name(*name); !variant) {
        problems.push_back(fmt::format("--switch {}:{}@{}: \"{}\": {}", s.from, s.to, s.epoch,
                                       *name, variant.error().message));
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

Expected<ProfileResult> run_profile(const ProfileRequest& request,
                                    const ProfileProgress& progress) {
  if (auto ok = validate_profile_request(request); !ok) return unexpected(ok.error());
  std::error_code ec;
  if (!fs::is_directory(request.data_dir, ec)) {
    return error(
        fmt::format("--data-dir {}: no such directory (the Debian package "
                    "dataset-fashion-mnist installs the data there; make deps)",
                    request.data_dir));
  }
  if (request.work_dir.empty() || !fs::is_directory(request.work_dir, ec)) {
    return error(fmt::format("work directory \"{}\" does not exist", request.work_dir));
  }
  // One clean shard of N samples: the data every run trains on.
  auto shards_file = write_shards_file(request.work_dir, "shards.json", request.samples);
  if (!shards_file) return unexpected(shards_file.error());

  ProfileResult result;
  result.request = request;
  const std::size_t sizes = request.exponent_samples > 0 ? 2 : 1;
  const int total =
      request.runs * static_cast<int>(request.variants.size() * sizes + request.switches.size());
  int done = 0;
  for (const auto& name : request.variants) {
    auto profile =
        profile_variant(request, name, request.samples, *shards_file, done, total, progress);
    if (!profile) return unexpected(profile.error());
    result.variants.push_back(std::move(*profile));
  }
  if (request.exponent_samples > 0) {
    auto second =
        write_shards_file(request.work_dir, "shards-exponent.json", request.exponent_samples);
    if (!second) return unexpected(second.error());
    for (VariantProfile& v : result.variants) {
      auto other = profile_variant(request, v.name, request.exponent_samples, *second, done, total,
                                   progress);
      if (!other) return unexpected(other.error());
      set_data_exponent(v, request.samples, request.exponent_samples,
                        other->fit.profile.floor_loss);
    }
  }
  const std::string& shards = *shards_file;
  for (std::size_t i = 0; i < request.switches.size(); ++i) {
    auto profile = profile_switch(request, i, shards, done, total, progress);
    if (!profile) return unexpected(profile.error());
    result.switches.push_back(std::move(*profile));
  }
  return result;
}

}  // namespace depl::cli
