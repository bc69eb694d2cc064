// Internal to the solver: the budget of one solve() call as the searches see it. Each search
// asks exhausted() in its loop; the meter reads the clock and the stop token only every
// kCheckEvery calls (a search pops a state in ~100 ns, a clock read costs ~25 ns), so the time
// limit is overshot by at most a few hundred states. Memory is what the searches report of their
// own working set, per consumer (set_memory), against SolveBudget::memory_bytes.
// Not thread-safe: one meter per solve, used by its one thread.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

#include "depl/solver/solve.hpp"

namespace depl::solver::internal {

// The consumers of a solve's working memory.
enum class MemoryUse : std::size_t {
  GraphSearch,  // labels, heap, dominance index and bound tables of the schedule search
  Selections,   // memoised per-selection data and outcomes
  LowerBound,   // the certificate's search
  Explain,      // the reachability search that explains infeasibility
  Opt,          // the exhaustive baseline
  Count,
};

class BudgetMeter {
 public:
  static constexpr unsigned kCheckEvery = 256;

  explicit BudgetMeter(const SolveBudget& budget);
  BudgetMeter() : BudgetMeter(SolveBudget{}) {}

  // True once the budget is spent or the solve cancelled; stays true from then on.
  bool exhausted() {
    if (stop_ != BudgetStop::None || soft_stopped_) return true;
    if (++calls_ % kCheckEvery != 0) return false;
    return check_now();
  }
  // The same, reading the clock now (for coarse loops whose steps are expensive).
  bool check_now();
  // For the explanation of an infeasible result, which runs after the plan's search is done:
  // Time once the time budget is spent (not recorded: the plan's search was complete, the
  // explanation says itself that it was cut), Cancelled (recorded) once the solve is cancelled,
  // or the stop already recorded; None otherwise. Reads the clock every kCheckEvery calls.
  BudgetStop past_budget();

  // Records that `use` holds `bytes`. False when the total exceeds the memory budget: the
  // caller then gives up what it was growing (its search ends without a result) and the solve
  // goes on with what is left; stopped() reports Memory unless time or a cancellation ended it.
  bool set_memory(MemoryUse use, std::size_t bytes);
  std::size_t memory() const { return memory_total_; }
  std::size_t peak_memory() const { return memory_peak_; }
  // True when `more` bytes beyond the current total still fit (a search checks before growing).
  bool fits(std::size_t more) const {
    return memory_limit_ == 0 || memory_total_ + more <= memory_limit_;
  }

  // A share of the time: from now on exhausted() also answers true after `fraction` of the
  // time that is left (the certificate keeps the rest). Returns the previous soft deadline so
  // that the caller can restore it; a no-op without a time limit.
  Clock::TimePoint soften(double fraction);
  void restore(Clock::TimePoint soft_deadline);
  // True when only the soft deadline (not the budget) stopped the meter; clear_soft() resumes.
  bool soft_stopped() const { return soft_stopped_; }
  void clear_soft();

  BudgetStop stopped() const {
    return stop_ == BudgetStop::None && memory_hit_ ? BudgetStop::Memory : stop_;
  }
  const SolveBudget& budget() const { return budget_; }
  // Seconds since the solve started, by the budget's clock.
  double elapsed_seconds() const;

 private:
  Clock::TimePoint now() const;

  SolveBudget budget_;
  Clock::TimePoint start_;
  Clock::TimePoint deadline_ = Clock::kNever;
  Clock::TimePoint soft_deadline_ = Clock::kNever;
  std::size_t memory_limit_ = 0;
  std::array<std::size_t, static_cast<std::size_t>(MemoryUse::Count)> memory_{};
  std::size_t memory_total_ = 0;
  std::size_t memory_peak_ = 0;
  unsigned calls_ = 0;
  BudgetStop stop_ = BudgetStop::None;  // Time or Cancelled: every search stops
  bool memory_hit_ = false;             // some search gave up for memory
  bool soft_stopped_ = false;
};

}  // namespace depl::solver::internal
