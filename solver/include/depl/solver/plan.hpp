// A plan: which datasets to train on and the list of phases (variant, epochs, pool, workers).
// Indices refer to the Problem the plan was made for.
#pragma once

#include <cstddef>
#include <vector>

namespace depl::solver {

struct Phase {
  std::size_t model = 0;  // index into Problem::models
  int epochs = 1;
  std::size_t pool = 0;   // index into Problem::pools
  int workers = 1;
  friend bool operator==(const Phase&, const Phase&) = default;
};

struct Plan {
  std::vector<std::size_t> datasets;  // indices into Problem::datasets, ascending
  std::vector<Phase> phases;
  friend bool operator==(const Plan&, const Plan&) = default;
};

}  // namespace depl::solver
