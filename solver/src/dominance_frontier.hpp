// Internal to the solver: the dominance question of the horizon-exact schedule search
// (GraphOptions::fewer_epochs_reexpand) for one layer of the expanded graph: has a label with no
// higher mean cell, no higher variance cell, no more epochs and no more weight been settled?
// Four criteria leave no order that an index answers in a few steps, so the layer's Pareto set
// is scanned; it is kept as columns and scanned in blocks without branches, which the compiler
// turns into vector instructions (several times fewer cycles per label than a scan over
// structs that stops at each one).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace depl::solver::internal {

class DominanceFrontier {
 public:
  void clear() {
    mean_.clear();
    variance_.clear();
    epochs_.clear();
    weight_.clear();
  }
  std::size_t size() const { return mean_.size(); }
  std::size_t memory_bytes() const {
    return mean_.capacity() * (3 * sizeof(std::int32_t) + sizeof(double));
  }

  // True when a label with mean cell <= mean_cell, variance cell <= variance_cell, epochs <=
  // epochs and weight <= max_weight is in the set.
  bool covers(std::int32_t mean_cell, std::int32_t variance_cell, std::int32_t epochs,
              double max_weight) const {
    const std::size_t n = size();
    const std::int32_t* m = mean_.data();
    const std::int32_t* v = variance_.data();
    const std::int32_t* e = epochs_.data();
    const double* w = weight_.data();
    for (std::size_t start = 0; start < n; start += kBlock) {
      const std::size_t end = std::min(n, start + kBlock);
      int hit = 0;
      for (std::size_t i = start; i < end; ++i) {
        hit |=
            (m[i] <= mean_cell) & (v[i] <= variance_cell) & (e[i] <= epochs) & (w[i] <= max_weight);
      }
      if (hit) return true;
    }
    return false;
  }

  // Adds a label and drops the ones it dominates (no lower mean cell, variance cell, epochs and
  // weight): they answer no question it does not.
  void insert(std::int32_t mean_cell, std::int32_t variance_cell, std::int32_t epochs,
              double weight) {
    const std::size_t n = size();
    std::int32_t* m = mean_.data();
    std::int32_t* v = variance_.data();
    std::int32_t* e = epochs_.data();
    double* w = weight_.data();
    auto beaten = [&](std::size_t i) {
      return (mean_cell <= m[i]) & (variance_cell <= v[i]) & (epochs <= e[i]) & (weight <= w[i]);
    };
    std::size_t first = n;
    for (std::size_t start = 0; start < n && first == n; start += kBlock) {
      const std::size_t end = std::min(n, start + kBlock);
      int hit = 0;
      for (std::size_t i = start; i < end; ++i) hit |= beaten(i);
      if (hit) first = start;
    }
    if (first < n) {
      std::size_t kept = first;
      for (std::size_t i = first; i < n; ++i) {
        m[kept] = m[i];
        v[kept] = v[i];
        e[kept] = e[i];
        w[kept] = w[i];
        kept += !beaten(i);
      }
      mean_.resize(kept);
      variance_.resize(kept);
      epochs_.resize(kept);
      weight_.resize(kept);
    }
    mean_.push_back(mean_cell);
    variance_.push_back(variance_cell);
    epochs_.push_back(epochs);
    weight_.push_back(weight);
  }

 private:
  static constexpr std::size_t kBlock = 64;
  std::vector<std::int32_t> mean_;
  std::vector<std::int32_t> variance_;
  std::vector<std::int32_t> epochs_;
  std::vector<double> weight_;
};

}  // namespace depl::solver::internal
