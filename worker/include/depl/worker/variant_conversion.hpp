// Converts trained parameters between variants (hidden widths), which is what a DepL model switch
// does to a checkpoint. Shrinking is structured pruning: each hidden layer keeps the units of
// largest norm (|incoming weights and bias| * |outgoing weights|), removing a unit's column in the
// layer before and its row in the layer after. Growing keeps every trained unit and adds new ones
// with small random weights, so the grown network starts close to the small one.
#pragma once

#include <cstdint>
#include <vector>

#include "depl/worker/mlp.hpp"

namespace depl::worker {

// Scale of the new units' weights when growing, relative to a He-initialised weight.
inline constexpr float kGrowthInitScale = 0.01f;

// Indices (ascending) of the `keep` strongest units of the first hidden layer.
std::vector<int> strongest_first_layer_units(const MlpParameters& parameters, int keep);

// The same network with `hidden` units per hidden layer; `seed` draws the new units' weights.
MlpParameters convert_hidden_width(const MlpParameters& from, int hidden, std::uint64_t seed);

}  // namespace depl::worker
