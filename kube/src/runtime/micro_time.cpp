// RFC 3339 formatting in UTC without relying on the process time zone.
#include "depl/kube/runtime/micro_time.hpp"

#include <fmt/format.h>

namespace depl::kube {

namespace {

std::string format_with_fraction(std::chrono::system_clock::time_point time, bool micros) {
  using namespace std::chrono;
  const auto day = floor<days>(time);
  const year_month_day date(day);
  const hh_mm_ss<microseconds> clock(duration_cast<microseconds>(time - day));
  std::string text =
      fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}", static_cast<int>(date.year()),
                  static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                  clock.hours().count(), clock.minutes().count(), clock.seconds().count());
  if (micros) text += fmt::format(".{:06d}", clock.subseconds().count());
  text += 'Z';
  return text;
}

}  // namespace

std::string format_time(std::chrono::system_clock::time_point time) {
  return format_with_fraction(time, false);
}

std::string format_micro_time(std::chrono::system_clock::time_point time) {
  return format_with_fraction(time, true);
}

}  // namespace depl::kube
