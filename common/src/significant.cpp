#include "depl/common/significant.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace depl {

std::string format_significant(double value, int digits) {
  if (!std::isfinite(value)) return fmt::format("{}", value);
  if (value == 0) return "0";
  // Fixed notation with as many decimals as `digits` significant digits need; digits left of
  // the point are all kept (1234.6 to 3 digits is "1235", not "1.23e+03").
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  const int decimals = std::max(0, digits - 1 - magnitude);
  std::string out = fmt::format("{:.{}f}", value, decimals);
  // Rounding can carry into a new digit (0.99996 to 4 digits is "1.0000"): one decimal fewer.
  if (decimals > 0) {
    const double rounded = std::stod(out);
    const int rounded_magnitude =
        rounded == 0 ? magnitude : static_cast<int>(std::floor(std::log10(std::fabs(rounded))));
    if (rounded_magnitude > magnitude) out = fmt::format("{:.{}f}", value, decimals - 1);
  }
  return out;
}

}  // namespace depl
