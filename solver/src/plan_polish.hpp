// Internal to the solver: local improvement of a plan the graph found, under the exact
// arithmetic. The graph decides the structure (datasets, variant sequence, roughly where to
// switch); rounding may leave an epoch too many and the Lagrangian weight may pick placements
// that are not the cheapest under the deadline. Polishing removes or moves epochs and re-chooses
// every phase's placement exactly, keeping only changes that leave the plan feasible and better.
#pragma once

#include <cstddef>
#include <optional>

#include "plan_scorer.hpp"

namespace depl::solver::internal {

struct Candidate {
  Plan plan;
  Score score;
};

bool better(const Candidate& a, const Candidate& b);

// Feasibility used while polishing: structure and guarantee, plus the deadline when asked.
bool acceptable(const Score& s, bool respect_deadline);

// The cheapest placements (ties: less time) for the plan's variants and epochs, meeting the
// deadline when `respect_deadline`; nullopt when no assignment is acceptable.
std::optional<Candidate> refine_placements(const SearchContext& ctx, const SelectionData& data,
                                           const Plan& plan, bool respect_deadline,
                                           std::size_t& plans_checked);

// Improves an acceptable plan; returns it unchanged when nothing helps.
Candidate polish(const SearchContext& ctx, const SelectionData& data, Candidate start,
                 bool respect_deadline, std::size_t& plans_checked);

}  // namespace depl::solver::internal
