// combine() and the cross-reference checks between a job and the pools it may use.
#include <fmt/format.h>
#include <set>

#include "depl/solver/parse.hpp"

namespace depl::solver {

std::string ValidationError::joined() const {
  return fmt::format("{}", fmt::join(messages, "\n"));
}

Expected<Problem, ValidationError> combine(Problem job, std::vector<Pool> pools) {
  if (pools.empty()) {
    return unexpected(ValidationError{{"pools: no node pools to plan on (the list is empty)"}});
  }
  job.pools = std::move(pools);
  return job;
}

std::vector<std::string> cross_reference_warnings(const Problem& problem) {
  std::set<std::string> pool_names;
  for (const auto& pool : problem.pools) pool_names.insert(pool.name);
  std::vector<std::string> warnings;
  for (std::size_t d = 0; d < problem.datasets.size(); ++d) {
    const auto& locality = problem.datasets[d].locality;
    for (std::size_t i = 0; i < locality.size(); ++i) {
      if (!pool_names.count(locality[i])) {
        warnings.push_back(fmt::format(
            "spec.datasets[{}].locality[{}]: no pool named \"{}\" (the dataset is not local to "
            "any pool there is)",
            d, i, locality[i]));
      }
    }
  }
  for (std::size_t k = 0; k < problem.pools.size(); ++k) {
    for (const auto& [source, bandwidth] : problem.pools[k].inter_pool) {
      (void)bandwidth;
      if (source == problem.pools[k].name) {
        warnings.push_back(fmt::format(
            "pools[{}].interPool.{}: a pool's link to itself is never used", k, source));
      } else if (!pool_names.count(source)) {
        warnings.push_back(
            fmt::format("pools[{}].interPool.{}: no pool named \"{}\"", k, source, source));
      }
    }
  }
  return warnings;
}

}  // namespace depl::solver
