// Fuzz target: a DependableTrainingJob manifest, as YAML through parse_job_yaml and, when the
// input is JSON, as the controller's JSON form through parse_job_json under both limits (the
// solver's, and the stored job's with past_solver_limits) and the controller's check of the
// fields worker pods carry (validate_worker_fields). Bad input must come back as messages
// (never an exception, crash or empty message); good input must satisfy the rules the solver
// relies on without checking them again.
#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "depl/controller/worker_spec_validation.hpp"
#include "depl/solver/parse.hpp"
#include "fuzz_target.hpp"

namespace depl::fuzz {
namespace {

void check_errors(const solver::ValidationError& error, std::string_view source) {
  check(!error.messages.empty(), "a failed parse has at least one message");
  for (const auto& message : error.messages) {
    check(!message.empty(), "no message is empty");
    if (!source.empty()) check(message.rfind(source, 0) == 0, "every message names the source");
  }
}

void check_problem(const solver::Problem& problem) {
  const auto& target = problem.target;
  check(std::isfinite(target.loss) && target.loss > 0, "target.loss > 0");
  check(target.probability >= 0.5 && target.probability < 1, "target.probability in [0.5,1)");
  check(!target.deadline_seconds ||
            (std::isfinite(*target.deadline_seconds) && *target.deadline_seconds > 0),
        "deadlineSeconds finite and > 0");
  check(!target.budget || (std::isfinite(*target.budget) && *target.budget > 0),
        "budget finite and > 0");
  check(!problem.datasets.empty(), "at least one dataset");
  std::set<std::string> names;
  for (const auto& dataset : problem.datasets) {
    check(!dataset.name.empty() && names.insert(dataset.name).second, "dataset names unique");
    check(dataset.samples > 0, "dataset samples > 0");
    check(dataset.quality > 0 && dataset.quality <= 1, "dataset quality in (0,1]");
    check(dataset.label_noise >= 0 && dataset.label_noise < 1, "dataset labelNoise in [0,1)");
    check(std::isfinite(dataset.size_bytes) && dataset.size_bytes >= 0, "sizeBytes >= 0");
  }
  check(!problem.models.empty(), "at least one model");
  names.clear();
  for (const auto& model : problem.models) {
    check(!model.name.empty() && names.insert(model.name).second, "model names unique");
    check(std::isfinite(model.compute_per_sample_gflop) && model.compute_per_sample_gflop > 0,
          "computePerSampleGflop > 0");
    check(std::isfinite(model.parameter_bytes) && model.parameter_bytes >= 0,
          "parameterBytes >= 0");
    check(model.gpus_per_worker >= 1, "gpusPerWorker >= 1");
    const auto& loss = model.loss;
    check(std::isfinite(loss.initial_loss) && loss.initial_loss > 0, "initialLoss > 0");
    check(std::isfinite(loss.floor_loss) && loss.floor_loss >= 0 &&
              loss.floor_loss < loss.initial_loss,
          "0 <= floorLoss < initialLoss");
    check(loss.decay_per_epoch > 0 && loss.decay_per_epoch < 1, "decayPerEpoch in (0,1)");
    check(std::isfinite(loss.noise_stddev) && loss.noise_stddev >= 0, "noiseStddev >= 0");
    check(std::isfinite(loss.reference_samples) && loss.reference_samples > 0,
          "referenceSamples finite and > 0");
    check(std::isfinite(loss.data_exponent) && loss.data_exponent >= 0, "dataExponent >= 0");
    check(std::isfinite(loss.label_noise_floor) && loss.label_noise_floor >= 0,
          "labelNoiseFloor >= 0");
  }
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& entry : problem.switching) {
    check(problem.model_index(entry.from) >= 0 && problem.model_index(entry.to) >= 0,
          "switches name listed models");
    check(entry.from != entry.to, "a switch changes the model");
    check(pairs.insert({entry.from, entry.to}).second, "switches unique");
    check(std::isfinite(entry.jump_mean), "lossJump.mean finite");
    check(std::isfinite(entry.jump_stddev) && entry.jump_stddev >= 0, "lossJump.stddev >= 0");
    check(std::isfinite(entry.overhead_seconds) && entry.overhead_seconds >= 0,
          "overheadSeconds >= 0");
  }
  const auto& training = problem.training;
  check(training.batch_size >= 1, "batchSize >= 1");
  check(training.max_epochs >= 1 && training.max_epochs <= 100'000, "maxEpochs in [1,100000]");
  check(training.max_switches >= 0 && training.max_switches <= 1'000, "maxSwitches in [0,1000]");
  check(training.min_workers >= 1 && training.min_workers <= training.max_workers,
        "1 <= workers.min <= workers.max");
}

}  // namespace

int job_spec(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = as_text(data, size);
  constexpr std::string_view kSource = "job.yaml";
  if (auto job = solver::parse_job_yaml(text, kSource)) {
    check_problem(*job);
    (void)solver::cross_reference_warnings(*job);
  } else {
    check_errors(job.error(), kSource);
  }
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!object.is_discarded()) {
    auto job = solver::parse_job_json(object);
    if (job) {
      check_problem(*job);
      check(solver::past_solver_limits(*job).empty(), "a job the solver reads is within limits");
    } else {
      check_errors(job.error(), "");
    }
    // The controller's read: what the API server stores. It reads at least what the solver's
    // read does, and the solver's limits checked on it say exactly what that read refuses.
    if (auto stored = solver::parse_job_json(object, solver::JobLimits::Stored)) {
      check_problem(*stored);
      const std::vector<std::string> past = solver::past_solver_limits(*stored);
      check(job.has_value() == past.empty(), "the limits on a stored job agree with the parser");
      if (!job) {
        for (const auto& message : job.error().messages) {
          check(std::find(past.begin(), past.end(), message) != past.end(),
                "the parser's limit message is the check's");
        }
      }
    } else {
      check_errors(stored.error(), "");
      check(!job.has_value(), "a job the stored read refuses is refused under the solver's limits");
    }
    for (const auto& message : controller::validate_worker_fields(object)) {
      check(message.rfind("spec.", 0) == 0 || message.rfind("metadata.", 0) == 0,
            "a worker-field problem names its field");
      check(message.find(": ") != std::string::npos, "a worker-field problem says what is wrong");
    }
  }
  return 0;
}

}  // namespace depl::fuzz

DEPL_FUZZ_ENTRY(job_spec)
