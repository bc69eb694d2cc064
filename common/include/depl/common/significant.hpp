// Numbers for people: a figure to a number of significant digits, in fixed notation.
#pragma once

#include <string>

namespace depl {

// `value` to `digits` significant digits in fixed notation, every digit left of the point kept:
// format_significant(0.444352511658695, 4) is "0.4444", (1.2440797475555556, 3) "1.24",
// (1234.6, 3) "1235" (no exponent). 0 is "0"; infinities and NaN print as fmt prints them.
std::string format_significant(double value, int digits);

}  // namespace depl
