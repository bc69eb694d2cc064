// Model variants of the reference worker: the full MLP and compressed versions whose hidden
// layers are a fraction of the full width, so compute per sample scales with the variant.
#pragma once

#include <string>
#include <string_view>

#include "depl/common/expected.hpp"

namespace depl::worker {

// Hidden units of each of the two hidden layers of the full variant.
inline constexpr int kFullHiddenUnits = 256;

struct Variant {
  std::string name;    // full, half, quarter, eighth, or a job's own model name
  double width = 1.0;  // fraction of kFullHiddenUnits, in (0, 1]
  int hidden_units() const;
};

// full (1), half (0.5), quarter (0.25), eighth (0.125).
Expected<Variant> variant_from_name(std::string_view name);

// A width in (0, 1]; the variant takes the standard name when the width is a standard one.
Expected<Variant> variant_from_width(double width);

}  // namespace depl::worker
