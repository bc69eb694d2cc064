// Kubernetes resource quantities ("40Gi", "1.25G", "500m", "1e3") as plain numbers. Used for
// sizes and bandwidths in job specs and pools files, and for cpu/memory/GPU requests.
#pragma once

#include <string>
#include <string_view>

#include "depl/common/expected.hpp"

namespace depl {

// Parses a quantity in the Kubernetes grammar: a signed decimal number, then an optional
// binary suffix (Ki Mi Gi Ti Pi Ei), decimal suffix (n u m k M G T P E) or decimal exponent
// (e3, E-2). Returns the value as a double. The error message says what is wrong with the
// text but not where it came from: callers prefix the field path.
Expected<double> parse_quantity(std::string_view text);

// Formats a non-negative byte count or rate the way people read it ("1.5 GiB", "800 MiB").
std::string format_bytes(double bytes);

}  // namespace depl
