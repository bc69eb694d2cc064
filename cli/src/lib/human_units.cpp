#include "depl/cli/human_units.hpp"

#include <fmt/format.h>
#include <cmath>

namespace depl::cli {
namespace {

// Inserts thousands separators into the integer part of a plain decimal number.
std::string group_thousands(const std::string& digits) {
  const std::size_t start = (!digits.empty() && digits[0] == '-') ? 1 : 0;
  std::size_t end = digits.find('.');
  if (end == std::string::npos) end = digits.size();
  std::string out(digits, 0, start);
  for (std::size_t i = start; i < end; ++i) {
    if (i > start && (end - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  out.append(digits, end, std::string::npos);
  return out;
}

}  // namespace

std::string format_duration(double seconds) {
  if (std::isnan(seconds)) return "nan";
  if (std::isinf(seconds)) return seconds > 0 ? "inf" : "-inf";
  if (seconds < 0) return fmt::format("-{}", format_duration(-seconds));
  if (seconds < 9.95) return fmt::format("{:.1f}s", seconds);
  if (seconds < 59.5) return fmt::format("{:.0f}s", seconds);
  // Round to the smallest unit shown first, so 59m 59.7s becomes "1h 00m", not "59m 60s".
  constexpr std::int64_t kMinute = 60;
  constexpr std::int64_t kHour = 60 * kMinute;
  constexpr std::int64_t kDay = 24 * kHour;
  const auto total_s = static_cast<std::int64_t>(std::llround(seconds));
  if (total_s < kHour) return fmt::format("{}m {:02}s", total_s / kMinute, total_s % kMinute);
  const std::int64_t total_m = (total_s + kMinute / 2) / kMinute;
  if (total_m < 24 * 60) return fmt::format("{}h {:02}m", total_m / 60, total_m % 60);
  const std::int64_t total_h = (total_s + kHour / 2) / kHour;
  if (total_h < 24 * 100) return fmt::format("{}d {:02}h", total_h / 24, total_h % 24);
  return fmt::format("{}d", group_thousands(std::to_string((total_s + kDay / 2) / kDay)));
}

std::string format_money(double amount) {
  if (!std::isfinite(amount)) return fmt::format("{}", amount);
  if (amount < 0) return fmt::format("-{}", format_money(-amount));
  if (amount == 0) return "0.00";
  if (amount >= 0.995) return group_thousands(fmt::format("{:.2f}", amount));
  // Three significant digits: 0.0924, 0.500, 0.00123.
  const int decimals = std::min(9, 2 - static_cast<int>(std::floor(std::log10(amount))));
  return fmt::format("{:.{}f}", amount, decimals);
}

std::string format_count(std::int64_t count) {
  return group_thousands(std::to_string(count));
}

std::string format_probability(double p) {
  if (p >= 1.0) return "1";
  if (p <= 0.0) return "0";
  if (p > 0.99995) return "> 0.9999";
  if (p < 0.00005) return "< 0.0001";
  return fmt::format("{:.4f}", p);
}

}  // namespace depl::cli
