// What `kubectl-depl profile` prints: the `models[]` (with their lossProfile) and `switching`
// YAML to paste into a DependableTrainingJob, and the SVG of the measured curves against the
// fitted model.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "depl/cli/profiling.hpp"
#include "depl/common/expected.hpp"
#include "depl/solver/evaluator.hpp"

namespace depl::cli {

// `models:` and `switching:` (when switches were measured) as a YAML document, with comments
// saying how it was measured: `command` (the command line), the data, runs, seeds and fit
// quality. Field names and units are those of the job spec (docs/depl-model.md section 1).
std::string profile_to_yaml(const ProfileResult& result, std::string_view command);

// The fitted model's loss after epochs 0..epochs of the variant, at the data it was measured
// on (E = referenceSamples): the evaluator's epoch step on the fitted profile.
std::vector<solver::LossPoint> fitted_curve(const VariantProfile& variant, int epochs);

// One panel: every measured run per variant as thin lines with dots, the fitted mean as a thick
// line with a mean ± sd band, per variant colour; switch jumps as arrows at their epoch.
// Fails when there is nothing to draw.
Expected<std::string> profile_plot_svg(const ProfileResult& result, int width = 960,
                                       int height = 540);

}  // namespace depl::cli
