#include "depl/common/quantity.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <utility>

namespace depl {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

// Longest suffixes first so that "Mi" is not read as "M" followed by junk.
constexpr std::array<Suffix, 15> kSuffixes{{
    {"Ki", 1024.0},
    {"Mi", 1024.0 * 1024},
    {"Gi", 1024.0 * 1024 * 1024},
    {"Ti", 1024.0 * 1024 * 1024 * 1024},
    {"Pi", 1024.0 * 1024 * 1024 * 1024 * 1024},
    {"Ei", 1024.0 * 1024 * 1024 * 1024 * 1024 * 1024},
    {"n", 1e-9},
    {"u", 1e-6},
    {"m", 1e-3},
    {"k", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
}};

}  // namespace

Expected<double> parse_quantity(std::string_view text) {
  if (text.empty()) return error("must be a quantity such as 10Gi or 1.5G, got an empty string");
  const std::string shown(text);
  std::size_t pos = 0;
  if (text[pos] == '+' || text[pos] == '-') ++pos;
  const std::size_t digits_start = pos;
  bool seen_digit = false, seen_dot = false;
  while (pos < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) {
    if (text[pos] == '.') {
      if (seen_dot) return error(fmt::format("must be a quantity, got \"{}\" (two dots)", shown));
      seen_dot = true;
    } else {
      seen_digit = true;
    }
    ++pos;
  }
  if (!seen_digit) {
    return error(fmt::format("must be a quantity such as 10Gi or 1.5G, got \"{}\"", shown));
  }
  double number = 0;
  {
    const std::string digits(text.substr(0, pos));
    (void)digits_start;
    const auto* first = digits.data();
    const auto* last = digits.data() + digits.size();
    if (*first == '+') ++first;
    auto [ptr, ec] = std::from_chars(first, last, number);
    if (ec != std::errc() || ptr != last) {
      return error(fmt::format("must be a quantity, got \"{}\"", shown));
    }
  }
  std::string_view rest = text.substr(pos);
  double factor = 1.0;
  if (!rest.empty()) {
    if ((rest[0] == 'e' || rest[0] == 'E') && rest.size() > 1) {
      int exponent = 0;
      const auto* first = rest.data() + 1;
      const auto* last = rest.data() + rest.size();
      if (*first == '+') ++first;
      auto [ptr, ec] = std::from_chars(first, last, exponent);
      if (ec != std::errc() || ptr != last || exponent > 300 || exponent < -300) {
        return error(fmt::format("must be a quantity, got \"{}\" (bad exponent)", shown));
      }
      factor = std::pow(10.0, exponent);
    } else {
      bool matched = false;
      for (const auto& suffix : kSuffixes) {
        if (rest == suffix.text) {
          factor = suffix.factor;
          matched = true;
          break;
        }
      }
      if (!matched) {
        return error(fmt::format(
            "must be a quantity, got \"{}\" (unknown suffix \"{}\"; use Ki Mi Gi Ti Pi Ei or "
            "n u m k M G T P E)",
            shown, std::string(rest)));
      }
    }
  }
  const double value = number * factor;
  if (!std::isfinite(value)) return error(fmt::format("quantity \"{}\" is out of range", shown));
  return value;
}

std::string format_bytes(double bytes) {
  static constexpr std::array<const char*, 7> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB",
                                                     "EiB"};
  std::size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < kUnits.size()) {
    bytes /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f} {}", bytes, kUnits[unit]);
  return fmt::format("{:.3g} {}", bytes, kUnits[unit]);
}

}  // namespace depl
