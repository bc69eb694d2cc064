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

int Problem::model_index(const std::string& name) const { return index_of(models, name); }
int Problem::pool_index(const std::string& name) const { return index_of(pools, name); }
int Problem::dataset_index(const std::string& name) const { return index_of(datasets, name); }

const Switch* Problem::find_switch(const std::string& from, const std::string& to) const {
  for (const auto& s : switching) {
    if (s.from == from && s.to == to) return &s;
  }
  return nullptr;
}

}  // namespace depl::solver
