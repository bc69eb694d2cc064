// A small hand-built Problem and plans on it for the CLI's presentation tests, so they do not
// depend on the parser or the solver: two datasets, a full and a compressed variant with a
// listed switch, two pools.
#pragma once

#include "depl/solver/evaluator.hpp"
#include "depl/solver/problem.hpp"
#include "depl/solver/solve.hpp"

namespace depl::cli::testing {

inline solver::Problem small_problem() {
  solver::Problem p;
  p.target.loss = 0.32;  // the two-phase plan reaches it with P ~ 0.91
  p.target.probability = 0.9;
  p.datasets.push_back({"imagenet-subset", 10000, 0.8, 1e9, {}});
  p.datasets.push_back({"web-crawl", 5000, 0.5, 2e9, {"t4-pool"}});
  solver::ModelVariant full{"resnet50", "registry.example/resnet50:1", 2.0, 4e6, 1, {}};
  full.loss = {2.0, 0.2, 0.5, 0.01, 8000, 0};
  solver::ModelVariant small{"resnet50-int8", "registry.example/resnet50-int8:1", 0.5, 1e6, 1, {}};
  small.loss = {2.0, 0.4, 0.6, 0.02, 8000, 0};
  p.models = {full, small};
  p.switching.push_back({"resnet50-int8", "resnet50", 0.05, 0.03, 10});
  p.training.batch_size = 100;
  solver::Pool a{"a100-pool", "NVIDIA-A100-SXM4-80GB", 8, 1000, 3.6, 1e9, 1e8, 5, {}, 0, 0};
  solver::Pool t{"t4-pool", "NVIDIA-T4", 4, 100, 0.36, 1e8, 5e7, 0, {{"a100-pool", 2e8}}, 0, 0};
  p.pools = {a, t};
  return p;
}

// Two phases: the compressed variant on T4s, then the full model on A100s.
inline solver::Plan two_phase_plan() {
  return {{0}, {{1, 2, 1, 1}, {0, 3, 0, 2}}};
}

// A SolveResult as the solver would return it for `plan` (figures from the evaluator).
inline solver::SolveResult result_for(const solver::Problem& p, const solver::Plan& plan,
                                      solver::Algorithm algorithm = solver::Algorithm::DepL) {
  solver::SolveResult r;
  r.algorithm = algorithm;
  r.plan = plan;
  r.figures = solver::evaluate(p, plan);
  r.feasible = r.figures.feasible;
  r.stats = {3, 12, 456, 7};
  return r;
}

}  // namespace depl::cli::testing
