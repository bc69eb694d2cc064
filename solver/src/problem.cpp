#include "depl/solver/problem.hpp"

namespace depl::solver {
namespace {

template <typename Items>
int index_of(const Items& items, const std::string& name) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

double default_interruptions_per_hour(CapacityType type) {
  return type == CapacityType::Spot ? kDefaultSpotInterruptionsPerHour : 0.0;
}

const char* to_string(CapacityType type) {
  return type == CapacityType::Spot ? "Spot" : "OnDemand";
}

int Problem::model_index(const std::string& name) const { return index_of(models, name); }
int Problem::pool_index(const std::string& name) const { return index_of(pools, name); }
int Problem::dataset_index(const std::string& name) const { return index_of(datasets, name); }

bool Problem::continues_start(std::size_t phase_index, std::size_t model, std::size_t pool,
                              int workers) const {
  return phase_index == 0 && start && start->workers > 0 && workers == start->workers &&
         model_index(start->model) == static_cast<int>(model) &&
         pool_index(start->pool) == static_cast<int>(pool);
}

const Switch* Problem::find_switch(const std::string& from, const std::string& to) const {
  for (const auto& s : switching) {
    if (s.from == from && s.to == to) return &s;
  }
  return nullptr;
}

}  // namespace depl::solver
