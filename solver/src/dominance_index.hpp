// Internal to the solver: answers the schedule search's dominance question for one layer of the
// expanded graph in O(log^2 n) instead of a scan over the layer's frontier: has a label with no
// higher mean cell, no higher variance cell and no more weight than the given bound been
// settled? (The scan was most of the solve time on large instances.)
//
// A Fenwick tree over mean cells; each node keeps, for the mean cells it covers, the least
// weight seen at or below each variance cell as a staircase (variance ascending, weight strictly
// descending), so a prefix query is a binary search per node. Cells outside [lowest, lowest +
// span) go to a small list that is scanned, so every answer is exact.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace depl::solver::internal {

class DominanceIndex {
 public:
  DominanceIndex() = default;
  // Mean cells in [lowest_mean_cell, lowest_mean_cell + span) are indexed.
  DominanceIndex(std::int32_t lowest_mean_cell, std::int32_t span) {
    reset(lowest_mean_cell, span);
  }

  // Forgets every label and indexes a new span, keeping the memory already allocated (a solve
  // runs many searches).
  void reset(std::int32_t lowest_mean_cell, std::int32_t span) {
    lowest_ = lowest_mean_cell;
    const std::size_t size = static_cast<std::size_t>(std::max(span, 1)) + 1;
    const std::size_t kept = std::min(size, nodes_.size());
    for (std::size_t i = 0; i < kept; ++i) nodes_[i].clear();
    nodes_.resize(size);
    outside_.clear();
    active_ = true;
  }
  // Drops the labels and becomes empty again; memory is kept for the next reset.
  void deactivate() { active_ = false; }

  // True until given a span (constructor or reset) after construction or deactivate().
  bool empty() const { return !active_; }

  // True when a label with mean cell <= mean_cell, variance cell <= variance_cell and weight <=
  // max_weight was inserted.
  bool covers(std::int32_t mean_cell, std::int32_t variance_cell, double max_weight) const {
    for (const Entry& e : outside_) {
      if (e.mean_cell <= mean_cell && e.variance_cell <= variance_cell && e.weight <= max_weight) {
        return true;
      }
    }
    if (mean_cell < lowest_) return false;
    std::size_t i = std::min(static_cast<std::size_t>(mean_cell - lowest_) + 1, nodes_.size() - 1);
    for (; i > 0; i -= i & (~i + 1)) {
      const std::vector<Step>& steps = nodes_[i];
      // The last step at or below variance_cell holds the least weight there.
      auto it = std::upper_bound(steps.begin(), steps.end(), variance_cell,
                                 [](std::int32_t v, const Step& s) { return v < s.variance_cell; });
      if (it != steps.begin() && std::prev(it)->weight <= max_weight) return true;
    }
    return false;
  }

  // Bytes held (nodes and staircase steps, including memory kept from earlier spans).
  std::size_t memory_bytes() const {
    return nodes_.capacity() * sizeof(std::vector<Step>) + steps_ * sizeof(Step) +
           outside_.capacity() * sizeof(Entry);
  }

  void insert(std::int32_t mean_cell, std::int32_t variance_cell, double weight) {
    if (mean_cell < lowest_ || static_cast<std::size_t>(mean_cell - lowest_) + 1 >= nodes_.size()) {
      outside_.push_back({mean_cell, variance_cell, weight});
      return;
    }
    for (std::size_t i = static_cast<std::size_t>(mean_cell - lowest_) + 1; i < nodes_.size();
         i += i & (~i + 1)) {
      add_step(nodes_[i], variance_cell, weight);
    }
  }

 private:
  struct Step {
    std::int32_t variance_cell = 0;
    double weight = 0;
  };
  struct Entry {
    std::int32_t mean_cell = 0;
    std::int32_t variance_cell = 0;
    double weight = 0;
  };

  void add_step(std::vector<Step>& steps, std::int32_t variance_cell, double weight) {
    auto it = std::upper_bound(steps.begin(), steps.end(), variance_cell,
                               [](std::int32_t v, const Step& s) { return v < s.variance_cell; });
    if (it != steps.begin() && std::prev(it)->weight <= weight) return;  // nothing new here
    // Steps at or above this variance that weigh no less are now redundant.
    if (it != steps.begin() && std::prev(it)->variance_cell == variance_cell) --it;
    auto end = it;
    while (end != steps.end() && end->weight >= weight) ++end;
    if (end != it) {
      *it = {variance_cell, weight};
      steps.erase(std::next(it), end);
    } else {
      if (steps.size() == steps.capacity()) steps_ += std::max<std::size_t>(steps.capacity(), 1);
      steps.insert(it, {variance_cell, weight});
    }
  }

  std::int32_t lowest_ = 0;
  std::vector<std::vector<Step>> nodes_;  // 1-based Fenwick tree over mean cells
  std::vector<Entry> outside_;
  std::size_t steps_ = 0;  // capacity of the staircases, summed (they only grow)
  bool active_ = false;
};

}  // namespace depl::solver::internal
