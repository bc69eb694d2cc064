// The DependableTrainingJob half of parse.hpp: manifest -> Problem (without pools), checking
// every rule of docs/depl-model.md section 1 and collecting all violations.
#include <fmt/format.h>
#include <algorithm>
#include <map>

#include "depl/solver/evaluator.hpp"
#include "depl/solver/limits.hpp"
#include "depl/solver/parse.hpp"
#include "field_reader.hpp"
#include "parse_common.hpp"

namespace depl::solver {
namespace {

using nlohmann::json;
using parse_detail::closest_name;
using parse_detail::describe;
using parse_detail::Diagnostics;
using parse_detail::item_path;
using parse_detail::kOptional;
using parse_detail::kRequired;
using parse_detail::ObjectReader;
using parse_detail::Presence;
using parse_detail::Range;
using parse_detail::read_object;
using parse_detail::read_yaml_document;
using parse_detail::UniqueNames;
using parse_detail::with_source;

constexpr std::string_view kApiVersion = "depl.dev/v1alpha1";
constexpr std::string_view kKind = "DependableTrainingJob";

// The size bounds a job is read under (parse.hpp, JobLimits); 0: none.
struct SizeBounds {
  std::size_t datasets = 0, models = 0, switches = 0, locality = 0, name_length = 0,
              image_length = 0;
  int max_epochs = 0, max_switches = 0, workers = 0, gpus_per_worker = 0, batch_size = 0;
};

constexpr SizeBounds kSolverBounds{.datasets = limits::kDatasets,
                                   .models = limits::kModels,
                                   .switches = limits::kSwitches,
                                   .locality = limits::kLocality,
                                   .name_length = limits::kNameLength,
                                   .image_length = limits::kImageLength,
                                   .max_epochs = limits::kMaxEpochs,
                                   .max_switches = limits::kMaxSwitches,
                                   .workers = limits::kWorkers,
                                   .gpus_per_worker = limits::kGpusPerWorker,
                                   .batch_size = limits::kBatchSize};
constexpr SizeBounds kStoredBounds{.max_epochs = limits::kStoredMaxEpochs,
                                   .max_switches = limits::kStoredMaxSwitches};

// [low, high], or [low, inf) when `high` is 0 (no bound).
Range up_to(int low, int high) {
  return high > 0 ? Range::between(low, true, high, true) : Range::at_least(low);
}

void read_target(ObjectReader& spec, Target& target) {
  auto reader = spec.object("target", kRequired);
  if (!reader) return;
  reader->allow_only({"loss", "probability", "deadlineSeconds", "budget", "guarantee"});
  target.loss = reader->number("loss", kRequired, Range::above(0)).value_or(0);
  target.probability = reader->number("probability", kOptional, Range::between(0.5, true, 1, false))
                           .value_or(target.probability);
  target.deadline_seconds = reader->number("deadlineSeconds", kOptional, Range::above(0));
  target.budget = reader->number("budget", kOptional, Range::above(0));
  if (auto guarantee = reader->string("guarantee", kOptional)) {
    if (*guarantee == "Gaussian") {
      target.guarantee = Guarantee::Gaussian;
    } else if (*guarantee == "DistributionFree") {
      target.guarantee = Guarantee::DistributionFree;
    } else {
      std::string what =
          fmt::format("must be Gaussian or DistributionFree, got {}", describe(*guarantee));
      if (auto hint = closest_name(*guarantee, {"Gaussian", "DistributionFree"})) {
        what += fmt::format(" (did you mean \"{}\"?)", *hint);
      }
      reader->diagnostics().add(reader->path_of("guarantee"), what);
    }
  }
}

void read_datasets(ObjectReader& spec, const SizeBounds& bounds, std::vector<Dataset>& datasets) {
  const json* list = spec.list("datasets", kRequired, bounds.datasets);
  if (!list) return;
  if (list->empty()) {
    spec.diagnostics().add(spec.path_of("datasets"), "must list at least one dataset");
    return;
  }
  UniqueNames names("name");
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto reader =
        read_object((*list)[i], item_path(spec.path_of("datasets"), i), spec.diagnostics());
    if (!reader) continue;
    reader->allow_only({"name", "samples", "quality", "labelNoise", "sizeBytes", "locality"},
                       {"source"});
    Dataset dataset;
    dataset.name = reader->string("name", kRequired, false, bounds.name_length).value_or("");
    names.check(*reader, dataset.name);
    dataset.samples = reader->integer("samples", kRequired, Range::above(0)).value_or(0);
    dataset.quality = reader->number("quality", kOptional, Range::between(0, false, 1, true))
                          .value_or(dataset.quality);
    dataset.label_noise =
        reader->number("labelNoise", kOptional, Range::between(0, true, 1, false)).value_or(0);
    dataset.size_bytes = reader->quantity("sizeBytes", kOptional, Range::at_least(0)).value_or(0);
    dataset.locality =
        reader->string_list("locality", kOptional, bounds.locality, bounds.name_length)
            .value_or(std::vector<std::string>{});
    datasets.push_back(std::move(dataset));
  }
}

void read_loss_profile(ObjectReader& model, double all_effective_samples, LossProfile& loss) {
  auto reader = model.object("lossProfile", kRequired);
  if (!reader) return;
  reader->allow_only({"initialLoss", "floorLoss", "decayPerEpoch", "noiseStddev",
                      "validationNoiseStddev", "initialLossStddev", "referenceSamples",
                      "dataExponent", "labelNoiseFloor"});
  const auto initial = reader->number("initialLoss", kRequired, Range::above(0));
  const auto floor = reader->number("floorLoss", kRequired, Range::at_least(0));
  if (initial && floor && !(*floor < *initial)) {
    reader->diagnostics().add(
        reader->path_of("floorLoss"),
        fmt::format("must be < initialLoss ({}), got {}", describe(*initial), describe(*floor)));
  }
  loss.initial_loss = initial.value_or(0);
  loss.floor_loss = floor.value_or(0);
  loss.decay_per_epoch =
      reader->number("decayPerEpoch", kRequired, Range::between(0, false, 1, false))
          .value_or(loss.decay_per_epoch);
  loss.noise_stddev = reader->number("noiseStddev", kRequired, Range::at_least(0)).value_or(0);
  loss.validation_noise_stddev =
      reader->number("validationNoiseStddev", kOptional, Range::at_least(0)).value_or(0);
  loss.initial_stddev =
      reader->number("initialLossStddev", kOptional, Range::at_least(0)).value_or(0);
  loss.reference_samples = reader->number("referenceSamples", kOptional, Range::above(0))
                               .value_or(all_effective_samples);
  loss.data_exponent = reader->number("dataExponent", kOptional, Range::at_least(0)).value_or(0);
  loss.label_noise_floor =
      reader->number("labelNoiseFloor", kOptional, Range::at_least(0)).value_or(0);
}

// True when every listed model was read with its name (switches can then be checked against
// the names).
bool read_models(ObjectReader& spec, const SizeBounds& bounds, double all_effective_samples,
                 std::vector<ModelVariant>& models) {
  const json* list = spec.list("models", kRequired, bounds.models);
  if (!list) return false;
  if (list->empty()) {
    spec.diagnostics().add(spec.path_of("models"), "must list at least one model variant");
    return false;
  }
  bool complete = true;
  UniqueNames names("name");
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto reader = read_object((*list)[i], item_path(spec.path_of("models"), i), spec.diagnostics());
    if (!reader) {
      complete = false;
      continue;
    }
    reader->allow_only({"name", "image", "computePerSampleGflop", "parameterBytes", "gpusPerWorker",
                        "checkpointBytes", "lossProfile"},
                       {"resources", "env"});
    ModelVariant model;
    model.name = reader->string("name", kRequired, false, bounds.name_length).value_or("");
    names.check(*reader, model.name);
    model.image = reader->string("image", kRequired, false, bounds.image_length).value_or("");
    model.compute_per_sample_gflop =
        reader->number("computePerSampleGflop", kRequired, Range::above(0)).value_or(0);
    model.parameter_bytes =
        reader->quantity("parameterBytes", kRequired, Range::at_least(0)).value_or(0);
    model.gpus_per_worker =
        reader->small_integer("gpusPerWorker", kOptional, up_to(1, bounds.gpus_per_worker))
            .value_or(1);
    // Parameters and the optimiser's momentum, what the reference worker writes, unless said.
    model.checkpoint_bytes = reader->quantity("checkpointBytes", kOptional, Range::at_least(0))
                                 .value_or(2 * model.parameter_bytes);
    read_loss_profile(*reader, all_effective_samples, model.loss);
    complete = complete && !model.name.empty();
    models.push_back(std::move(model));
  }
  return complete;
}

// A switch end ("from"/"to") must name a listed model. `model_names` is null when the models
// list itself is broken, so that one mistake there does not echo through every switch.
std::optional<std::string> read_switch_end(ObjectReader& reader, std::string_view key,
                                           std::size_t max_length,
                                           const std::vector<std::string>* known) {
  auto name = reader.string(key, kRequired, false, max_length);
  if (!name || !known) return name;
  const std::vector<std::string>& model_names = *known;
  if (std::find(model_names.begin(), model_names.end(), *name) != model_names.end()) return name;
  std::string what = fmt::format("no model named {}", describe(*name));
  if (auto hint = closest_name(*name, model_names)) {
    what += fmt::format(", did you mean \"{}\"?", *hint);
  } else if (!model_names.empty()) {
    what += fmt::format(" (models: {})", fmt::join(model_names, ", "));
  }
  reader.diagnostics().add(reader.path_of(key), what);
  return std::nullopt;
}

void read_switching(ObjectReader& spec, const SizeBounds& bounds,
                    const std::vector<ModelVariant>& models, bool models_complete,
                    std::vector<Switch>& switching) {
  const json* list = spec.list("switching", kOptional, bounds.switches);
  if (!list) return;
  std::vector<std::string> model_names;
  for (const auto& model : models) model_names.push_back(model.name);
  std::map<std::pair<std::string, std::string>, std::string> seen;  // pair -> first path
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string path = item_path(spec.path_of("switching"), i);
    auto reader = read_object((*list)[i], path, spec.diagnostics());
    if (!reader) continue;
    reader->allow_only({"from", "to", "lossJump", "overheadSeconds"});
    Switch entry;
    const auto* known = models_complete ? &model_names : nullptr;
    const auto from = read_switch_end(*reader, "from", bounds.name_length, known);
    const auto to = read_switch_end(*reader, "to", bounds.name_length, known);
    if (from && to) {
      if (*from == *to) {
        reader->diagnostics().add(
            reader->path_of("to"),
            fmt::format("must name a different model than from ({})", describe(*from)));
      } else if (auto [it, inserted] = seen.emplace(std::pair{*from, *to}, path); !inserted) {
        reader->diagnostics().add(path, fmt::format("duplicate switch {} -> {} (first at {})",
                                                    describe(*from), describe(*to), it->second));
      }
    }
    entry.from = from.value_or("");
    entry.to = to.value_or("");
    if (auto jump = reader->object("lossJump", kOptional)) {
      jump->allow_only({"mean", "stddev"});
      entry.jump_mean = jump->number("mean", kOptional).value_or(0);
      entry.jump_stddev = jump->number("stddev", kOptional, Range::at_least(0)).value_or(0);
    }
    entry.overhead_seconds =
        reader->number("overheadSeconds", kOptional, Range::at_least(0)).value_or(0);
    switching.push_back(std::move(entry));
  }
}

void read_training(ObjectReader& spec, const SizeBounds& bounds, Training& training) {
  auto reader = spec.object("training", kOptional);
  if (!reader) return;
  reader->allow_only({"batchSize", "maxEpochs", "maxSwitches", "workers"});
  training.batch_size = reader->small_integer("batchSize", kOptional, up_to(1, bounds.batch_size))
                            .value_or(training.batch_size);
  training.max_epochs = reader->small_integer("maxEpochs", kOptional, up_to(1, bounds.max_epochs))
                            .value_or(training.max_epochs);
  training.max_switches =
      reader->small_integer("maxSwitches", kOptional, up_to(0, bounds.max_switches))
          .value_or(training.max_switches);
  auto workers = reader->object("workers", kOptional);
  if (!workers) return;
  workers->allow_only({"min", "max"});
  const Range worker_range = up_to(1, bounds.workers);
  const auto min = workers->small_integer("min", kOptional, worker_range);
  const auto max = workers->small_integer("max", kOptional, worker_range);
  training.min_workers = min.value_or(training.min_workers);
  training.max_workers = max.value_or(training.max_workers);
  const bool max_valid = max.has_value() || workers->get("max") == nullptr;
  if (min && max_valid && training.max_workers < training.min_workers) {
    workers->diagnostics().add(workers->path_of("max"),
                               fmt::format("must be >= min ({}), got {}{}", training.min_workers,
                                           training.max_workers, max ? "" : " (the default)"));
  }
}

void read_job(const json& object, const SizeBounds& bounds, Problem& problem,
              Diagnostics& diagnostics) {
  if (!object.is_object()) {
    diagnostics.add("", fmt::format("must be a DependableTrainingJob manifest (a mapping), got {}",
                                    describe(object)));
    return;
  }
  ObjectReader root(object, "", diagnostics);
  root.allow_only({"apiVersion", "kind", "metadata", "spec", "status"});
  if (auto api_version = root.string("apiVersion", kRequired);
      api_version && *api_version != kApiVersion) {
    diagnostics.add("apiVersion",
                    fmt::format("must be {}, got {}", kApiVersion, describe(*api_version)));
  }
  if (auto kind = root.string("kind", kRequired); kind && *kind != kKind) {
    diagnostics.add("kind", fmt::format("must be {}, got {}", kKind, describe(*kind)));
  }
  // metadata and status belong to Kubernetes and the operator; only their shape is checked.
  (void)root.object("metadata", kOptional);
  (void)root.object("status", kOptional);
  auto spec = root.object("spec", kRequired);
  if (!spec) return;
  spec->allow_only({"target", "datasets", "models", "switching", "training"},
                   {"suspend", "checkpoint", "podTemplate", "backoffLimit", "replan",
                    "ttlSecondsAfterFinished", "queueName", "gangScheduling"});
  read_target(*spec, problem.target);
  read_datasets(*spec, bounds, problem.datasets);
  double all_effective_samples = 0;
  for (const auto& dataset : problem.datasets) {
    all_effective_samples += effective_samples(dataset);
  }
  const bool models_complete = read_models(*spec, bounds, all_effective_samples, problem.models);
  read_switching(*spec, bounds, problem.models, models_complete, problem.switching);
  read_training(*spec, bounds, problem.training);
}

}  // namespace

Expected<Problem, ValidationError> parse_job_json(const nlohmann::json& object, JobLimits limits) {
  Diagnostics diagnostics;
  Problem problem;
  read_job(object, limits == JobLimits::Solver ? kSolverBounds : kStoredBounds, problem,
           diagnostics);
  if (!diagnostics.empty()) return unexpected(ValidationError{diagnostics.take()});
  return problem;
}

Expected<Problem, ValidationError> parse_job_yaml(std::string_view yaml, std::string_view source) {
  auto document = read_yaml_document(yaml, source, "a DependableTrainingJob manifest");
  if (!document) return unexpected(std::move(document).error());
  auto problem = parse_job_json(*document);
  if (!problem) return unexpected(with_source(std::move(problem).error(), source));
  return problem;
}

}  // namespace depl::solver
