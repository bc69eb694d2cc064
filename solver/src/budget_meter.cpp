#include "budget_meter.hpp"

#include <algorithm>

namespace depl::solver::internal {

BudgetMeter::BudgetMeter(const SolveBudget& budget)
    : budget_(budget), memory_limit_(budget.memory_bytes) {
  start_ = now();
  if (budget_.time.count() > 0) {
    deadline_ = start_ + std::chrono::duration_cast<Clock::Duration>(budget_.time);
  }
}

Clock::TimePoint BudgetMeter::now() const {
  return budget_.clock ? budget_.clock->now() : std::chrono::steady_clock::now();
}

double BudgetMeter::elapsed_seconds() const {
  return std::chrono::duration<double>(now() - start_).count();
}

bool BudgetMeter::check_now() {
  if (stop_ != BudgetStop::None) return true;
  if (budget_.stop.stop_requested()) {
    stop_ = BudgetStop::Cancelled;
    return true;
  }
  if (deadline_ == Clock::kNever && soft_deadline_ == Clock::kNever) return soft_stopped_;
  const Clock::TimePoint t = now();
  if (t >= deadline_) {
    stop_ = BudgetStop::Time;
    return true;
  }
  if (t >= soft_deadline_) soft_stopped_ = true;
  return soft_stopped_;
}

BudgetStop BudgetMeter::past_budget() {
  if (stop_ != BudgetStop::None) return stop_;
  if (soft_stopped_) return BudgetStop::Time;
  if (++calls_ % kCheckEvery != 0) return BudgetStop::None;
  if (budget_.stop.stop_requested()) {
    stop_ = BudgetStop::Cancelled;
    return stop_;
  }
  if (deadline_ != Clock::kNever && now() >= deadline_) return BudgetStop::Time;
  return BudgetStop::None;
}

bool BudgetMeter::set_memory(MemoryUse use, std::size_t bytes) {
  std::size_t& slot = memory_[static_cast<std::size_t>(use)];
  memory_total_ = memory_total_ - slot + bytes;
  slot = bytes;
  memory_peak_ = std::max(memory_peak_, memory_total_);
  if (memory_limit_ != 0 && memory_total_ > memory_limit_) {
    memory_hit_ = true;
    return false;
  }
  return true;
}

Clock::TimePoint BudgetMeter::soften(double fraction) {
  const Clock::TimePoint previous = soft_deadline_;
  if (deadline_ == Clock::kNever) return previous;
  const Clock::TimePoint t = now();
  const auto left = deadline_ > t ? deadline_ - t : Clock::Duration::zero();
  soft_deadline_ = t + std::chrono::duration_cast<Clock::Duration>(left * fraction);
  return previous;
}

void BudgetMeter::restore(Clock::TimePoint soft_deadline) {
  soft_deadline_ = soft_deadline;
}

void BudgetMeter::clear_soft() {
  soft_deadline_ = Clock::kNever;
  soft_stopped_ = false;
}

}  // namespace depl::solver::internal
