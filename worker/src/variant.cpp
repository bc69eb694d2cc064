#include "depl/worker/variant.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace depl::worker {
namespace {

constexpr std::array<std::pair<std::string_view, double>, 4> kStandard{
    {{"full", 1.0}, {"half", 0.5}, {"quarter", 0.25}, {"eighth", 0.125}}};

}  // namespace

int Variant::hidden_units() const {
  return std::max(1, static_cast<int>(std::lround(width * kFullHiddenUnits)));
}

Expected<Variant> variant_from_name(std::string_view name) {
  for (const auto& [standard, width] : kStandard) {
    if (name == standard) return Variant{std::string(standard), width};
  }
  return error(
      fmt::format("variant '{}' is not known (want full, half, quarter or eighth, or give "
                  "a width)",
                  name));
}

Expected<Variant> variant_from_width(double width) {
  if (!(width > 0.0 && width <= 1.0)) {
    return error(fmt::format("width must be in (0, 1], got {}", width));
  }
  for (const auto& [standard, w] : kStandard) {
    if (std::abs(w - width) < 1e-9) return Variant{std::string(standard), w};
  }
  return Variant{fmt::format("width-{}", width), width};
}

}  // namespace depl::worker
