// Numbers as people read them in a terminal: durations in the two largest units that matter
// ("1h 12m", "3m 05s", "4.2s"), money with thousands separators and sensible precision, counts
// with separators. Presentation only; JSON output keeps the exact figures.
#pragma once

#include <cstdint>
#include <string>

namespace depl::cli {

// Rounds to the smallest unit shown: under a minute "4.2s" / "42s", then "12m 05s", "1h 12m",
// "2d 03h". Negative or non-finite input is shown as it is ("-", "inf").
std::string format_duration(double seconds);

// "1,234.56" for amounts of at least 1; three significant digits below ("0.0924"), "0.00" for
// zero. The model's costs are in the pools' currency units, so no symbol is added.
std::string format_money(double amount);

// "20,000".
std::string format_count(std::int64_t count);

// A probability for a table: four decimals, but never rounded to a misleading 1.0000 or 0.0000
// ("> 0.9999", "< 0.0001").
std::string format_probability(double p);

}  // namespace depl::cli
