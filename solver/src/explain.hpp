// Internal to the solver: why no plan was found, in numbers and in a sentence (the
// Infeasibility of solve.hpp). Shared by every algorithm: the caller states what its own search
// established (the cheapest and fastest plans meeting the guarantee, if any), and this decides
// which constraint binds, looking further (reachability beyond the horizon, variants without room)
// only when the guarantee itself was never met.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "depl/solver/solve.hpp"
#include "plan_polish.hpp"

namespace depl::solver::internal {

struct SearchFindings {
  std::optional<Candidate> cheapest;       // least cost meeting the guarantee (no deadline/budget)
  std::optional<Candidate> fastest;        // least time meeting the guarantee
  std::optional<Candidate> deadline_best;  // least cost meeting guarantee and deadline
  // Selections worth exploring for reachability (all datasets is always added).
  std::vector<std::vector<std::size_t>> selections;
  // An exhaustive search knows the plan with the best probability within the horizon exactly.
  std::optional<Plan> best_probability_plan;
};

// Fills result.feasible = false, plan, figures, reason and infeasibility.
void explain_infeasible(const SearchContext& ctx, const SearchFindings& findings, double eta,
                        SolveResult& result);

// "1 h 20 min", "45 s": durations for people.
std::string human_duration(double seconds);
// A probability the solver computed, for people: three decimals, or as many more as it takes not
// to round it to 1 when it is not; below 0.001, three significant digits.
std::string probability_text(double p);

}  // namespace depl::solver::internal
