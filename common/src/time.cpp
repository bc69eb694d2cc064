#include "depl/common/time.hpp"

#include <fmt/format.h>
#include <charconv>

namespace depl {
namespace {

// `day`, then `clock` into it: "YYYY-MM-DDTHH:MM:SS[.ffffff]Z".
std::string format_day_and_clock(std::chrono::sys_days day,
                                 const std::chrono::hh_mm_ss<std::chrono::microseconds>& clock,
                                 bool micros) {
  using namespace std::chrono;
  const year_month_day date(day);
  std::string text =
      fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}", static_cast<int>(date.year()),
                  static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                  clock.hours().count(), clock.minutes().count(), clock.seconds().count());
  if (micros) text += fmt::format(".{:06d}", clock.subseconds().count());
  text += 'Z';
  return text;
}

std::string format_with_fraction(std::chrono::system_clock::time_point time, bool micros) {
  using namespace std::chrono;
  const auto day = floor<days>(time);
  return format_day_and_clock(day, hh_mm_ss<microseconds>(duration_cast<microseconds>(time - day)),
                              micros);
}

bool parse_int(std::string_view text, int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string format_rfc3339(std::chrono::system_clock::time_point time) {
  return format_with_fraction(time, false);
}

std::string format_rfc3339_micro(std::chrono::system_clock::time_point time) {
  return format_with_fraction(time, true);
}

std::optional<std::string> format_rfc3339_unix(std::int64_t seconds, std::int64_t nanos,
                                               bool micro) {
  using namespace std::chrono;
  constexpr std::int64_t kYear0 = -62167219200;     // 0000-01-01T00:00:00Z
  constexpr std::int64_t kYear10000 = 253402300800;  // 10000-01-01T00:00:00Z
  if (seconds < kYear0 || seconds >= kYear10000 || nanos < 0 || nanos >= 1'000'000'000) {
    return std::nullopt;
  }
  std::int64_t day = seconds / 86400;
  std::int64_t second_of_day = seconds % 86400;
  if (second_of_day < 0) {
    second_of_day += 86400;
    --day;
  }
  const microseconds clock = duration_cast<microseconds>(std::chrono::seconds(second_of_day)) +
                             microseconds(nanos / 1000);
  return format_day_and_clock(sys_days(days(day)), hh_mm_ss<microseconds>(clock), micro);
}

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text) {
  using TimePoint = std::chrono::system_clock::time_point;
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  int year, month, day, hour, minute, second;
  if (!parse_int(text.substr(0, 4), year) || !parse_int(text.substr(5, 2), month) ||
      !parse_int(text.substr(8, 2), day) || !parse_int(text.substr(11, 2), hour) ||
      !parse_int(text.substr(14, 2), minute) || !parse_int(text.substr(17, 2), second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  std::chrono::nanoseconds fraction{0};
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    long long scale = 100'000'000;
    std::size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (scale > 0) fraction += std::chrono::nanoseconds((text[pos] - '0') * scale);
      scale /= 10;
      ++pos;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
  }
  std::chrono::minutes offset{0};
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos + 6 == text.size() && (text[pos] == '+' || text[pos] == '-') &&
             text[pos + 3] == ':') {
    int oh, om;
    if (!parse_int(text.substr(pos + 1, 2), oh) || !parse_int(text.substr(pos + 4, 2), om)) {
      return std::nullopt;
    }
    offset = std::chrono::minutes(oh * 60 + om) * (text[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(month),
                                         std::chrono::day(day)};
  if (!date.ok()) return std::nullopt;
  auto time = std::chrono::sys_days(date) + std::chrono::hours(hour) +
              std::chrono::minutes(minute) + std::chrono::seconds(second) - offset;
  return std::chrono::time_point_cast<TimePoint::duration>(time) +
         std::chrono::duration_cast<TimePoint::duration>(fraction);
}

}  // namespace depl
