// The solver's limits checked on a problem already read (parse.hpp, past_solver_limits). The
// messages are the parser's for the same field, so a job's problems read the same whichever way
// they were found.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "depl/solver/limits.hpp"
#include "depl/solver/parse.hpp"
#include "field_reader.hpp"

namespace depl::solver {
namespace {

class LimitCheck {
 public:
  void list(const std::string& path, std::size_t size, std::size_t max_items) {
    if (size > max_items) {
      add(path, fmt::format("must list at most {} items, got {}", max_items, size));
    }
  }
  void entries(const std::string& path, std::size_t size, std::size_t max_entries) {
    if (size > max_entries) {
      add(path, fmt::format("must have at most {} entries, got {}", max_entries, size));
    }
  }
  void text(const std::string& path, const std::string& value, std::size_t max_length) {
    if (value.size() > max_length) {
      add(path, fmt::format("must be at most {} characters, got {}", max_length, value.size()));
    }
  }
  void integer(const std::string& path, long long value, int low, int high) {
    if (value < low || value > high) {
      add(path, fmt::format("{}, got {}",
                            parse_detail::Range::between(low, true, high, true).rule(), value));
    }
  }
  std::vector<std::string> take() { return std::move(messages_); }

 private:
  void add(const std::string& path, const std::string& rule) {
    messages_.push_back(fmt::format("{}: {}", path, rule));
  }
  std::vector<std::string> messages_;
};

}  // namespace

std::vector<std::string> past_solver_limits(const Problem& problem) {
  LimitCheck check;
  check.list("spec.datasets", problem.datasets.size(), limits::kDatasets);
  for (std::size_t i = 0; i < problem.datasets.size(); ++i) {
    const Dataset& dataset = problem.datasets[i];
    const std::string path = fmt::format("spec.datasets[{}]", i);
    check.text(path + ".name", dataset.name, limits::kNameLength);
    check.list(path + ".locality", dataset.locality.size(), limits::kLocality);
    for (std::size_t j = 0; j < dataset.locality.size(); ++j) {
      check.text(fmt::format("{}.locality[{}]", path, j), dataset.locality[j], limits::kNameLength);
    }
  }
  check.list("spec.models", problem.models.size(), limits::kModels);
  for (std::size_t i = 0; i < problem.models.size(); ++i) {
    const ModelVariant& model = problem.models[i];
    const std::string path = fmt::format("spec.models[{}]", i);
    check.text(path + ".name", model.name, limits::kNameLength);
    check.text(path + ".image", model.image, limits::kImageLength);
    check.integer(path + ".gpusPerWorker", model.gpus_per_worker, 1, limits::kGpusPerWorker);
  }
  check.list("spec.switching", problem.switching.size(), limits::kSwitches);
  const Training& training = problem.training;
  check.integer("spec.training.batchSize", training.batch_size, 1, limits::kBatchSize);
  check.integer("spec.training.maxEpochs", training.max_epochs, 1, limits::kMaxEpochs);
  check.integer("spec.training.maxSwitches", training.max_switches, 0, limits::kMaxSwitches);
  check.integer("spec.training.workers.min", training.min_workers, 1, limits::kWorkers);
  check.integer("spec.training.workers.max", training.max_workers, 1, limits::kWorkers);
  check.list("pools", problem.pools.size(), limits::kPools);
  for (std::size_t i = 0; i < problem.pools.size(); ++i) {
    const Pool& pool = problem.pools[i];
    const std::string path = fmt::format("pools[{}]", i);
    check.text(path + ".name", pool.name, limits::kNameLength);
    check.text(path + ".gpuType", pool.gpu_type, limits::kNameLength);
    check.entries(path + ".interPool", pool.inter_pool.size(), limits::kInterPool);
  }
  return check.take();
}

}  // namespace depl::solver
