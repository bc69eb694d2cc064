// Fuzz target: Kubernetes quantities through parse_quantity, and format_bytes on what it returns.
// A quantity is either a finite number or an error that says what is wrong.
#include <cmath>

#include "depl/common/quantity.hpp"
#include "fuzz_target.hpp"

namespace depl::fuzz {

int quantity(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = as_text(data, size);
  auto value = parse_quantity(text);
  if (!value) {
    check(!value.error().message.empty(), "an error says what is wrong");
    return 0;
  }
  check(std::isfinite(*value), "a parsed quantity is finite");
  if (*value >= 0) check(!format_bytes(*value).empty(), "format_bytes prints something");
  return 0;
}

}  // namespace depl::fuzz

DEPL_FUZZ_ENTRY(quantity)
