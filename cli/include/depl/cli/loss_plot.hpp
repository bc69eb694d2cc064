// `kubectl-depl plan --plot FILE.svg`: a self-contained SVG of a plan's predicted loss, drawn
// from the evaluator's trajectory (solver::loss_trajectory): the mean per epoch, the guarantee
// bound mean + kappa*sd as a shaded band above it, phase boundaries labelled model@pool, the
// target line, axes, a legend and a title with cost, duration and P(target); and beside it a
// zoom on the last epochs, where the bound meets the target. Hand-written SVG, no library.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"

namespace depl::cli {

// A loss the workers reported (kubectl depl status --plot draws them over the prediction).
struct ObservedLoss {
  int epoch = 0;
  double loss = 0;
};

struct LossPlotOptions {
  int width = 960;
  int height = 540;
  std::string_view algorithm;            // shown in the title when not empty ("depl")
  std::string title{};                   // default "Predicted validation loss"
  std::vector<ObservedLoss> observed{};  // drawn as points, with a legend entry, when not empty
  // Figures for the title and kappa instead of solver::evaluate's: a status plot shows what the
  // controller recorded, since its pools are known by name only and cannot be costed again.
  std::optional<solver::Figures> recorded{};
};

// Fails only when the plan has nothing to draw (no phases, or indices out of range).
Expected<std::string> loss_plot_svg(const solver::Problem& problem, const solver::Plan& plan,
                                    const LossPlotOptions& options = {});

// "Nice" axis ticks (1, 2 or 5 times a power of ten) covering [low, high], about `count` of
// them; the first is <= low and the last >= high.
std::vector<double> nice_ticks(double low, double high, int count);

// Escapes the five XML special characters.
std::string xml_escape(std::string_view text);

}  // namespace depl::cli
