// The SVG loss plot: well-formed, drawn from the evaluator's trajectory, with the target line at
// the target, one boundary per switch, labelled phases, escaped names; and the axis ticks.
#include "depl/cli/loss_plot.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <cmath>
#include <sstream>

#include "depl/solver/evaluator.hpp"
#include "svg_check.hpp"
#include "test_problem.hpp"

namespace depl::cli {
namespace {

using testing::check_xml;
using ::testing::HasSubstr;
using testing::small_problem;
using testing::two_phase_plan;
using testing::XmlElement;

std::vector<const XmlElement*> with_class(const testing::XmlCheck& xml, const std::string& cls) {
  std::vector<const XmlElement*> out;
  for (const auto& e : xml.elements) {
    auto it = e.attributes.find("class");
    if (it != e.attributes.end() && it->second == cls) out.push_back(&e);
  }
  return out;
}

std::vector<std::pair<double, double>> points_of(const XmlElement& e) {
  std::vector<std::pair<double, double>> out;
  std::istringstream in(e.attributes.at("points"));
  std::string pair;
  while (in >> pair) {
    const auto comma = pair.find(',');
    out.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
  }
  return out;
}

TEST(LossPlot, IsWellFormedSvgWithEveryPart) {
  const solver::Problem p = small_problem();
  auto svg = loss_plot_svg(p, two_phase_plan(), {960, 540, "depl"});
  ASSERT_TRUE(svg.has_value()) << svg.error().message;
  EXPECT_EQ(svg->rfind("<svg", 0), 0u);
  const auto xml = check_xml(*svg);
  ASSERT_TRUE(xml.ok) << xml.error;
  EXPECT_EQ(xml.elements.front().name, "svg");
  EXPECT_EQ(xml.elements.front().attributes.at("width"), "960");

  ASSERT_EQ(with_class(xml, "target").size(), 1u);
  ASSERT_EQ(with_class(xml, "mean-loss").size(), 1u);
  ASSERT_EQ(with_class(xml, "guarantee-bound").size(), 1u);
  ASSERT_EQ(with_class(xml, "guarantee-band").size(), 1u);
  EXPECT_EQ(with_class(xml, "phase-boundary").size(), 1u);  // one switch
  const auto labels = with_class(xml, "phase-label");
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[0]->text, "resnet50-int8@t4-pool");
  EXPECT_EQ(labels[1]->text, "resnet50@a100-pool");
  EXPECT_EQ(with_class(xml, "legend").size(), 1u);
  EXPECT_THAT(*svg, HasSubstr("P(target) = 0.9"));
  EXPECT_THAT(*svg, HasSubstr(">epoch<"));
  EXPECT_THAT(*svg, HasSubstr(">validation loss<"));
}

// The drawn lines are the evaluator's trajectory under one linear map: recover the map from two
// points of the mean line and check every point of both lines and the target.
TEST(LossPlot, LinesFollowTheEvaluatorsTrajectory) {
  const solver::Problem p = small_problem();
  const solver::Plan plan = two_phase_plan();
  auto svg = loss_plot_svg(p, plan);
  ASSERT_TRUE(svg.has_value());
  const auto xml = check_xml(*svg);
  ASSERT_TRUE(xml.ok) << xml.error;
  const auto traj = solver::loss_trajectory(p, plan);
  const double kappa = solver::guarantee_kappa(p.target);
  const auto mean = points_of(*with_class(xml, "mean-loss").front());
  const auto bound = points_of(*with_class(xml, "guarantee-bound").front());
  ASSERT_EQ(mean.size(), traj.size());
  ASSERT_EQ(bound.size(), traj.size());

  const double sx = (mean.back().first - mean.front().first) / traj.back().epoch;
  const double sy =
      (mean.back().second - mean.front().second) / (traj.back().mean - traj.front().mean);
  auto y_of = [&](double loss) { return mean.front().second + (loss - traj.front().mean) * sy; };
  for (std::size_t i = 0; i < traj.size(); ++i) {
    EXPECT_NEAR(mean[i].first, mean.front().first + traj[i].epoch * sx, 0.11);
    EXPECT_NEAR(mean[i].second, y_of(traj[i].mean), 0.11);
    EXPECT_NEAR(bound[i].second, y_of(traj[i].mean + kappa * std::sqrt(traj[i].variance)), 0.11);
  }
  EXPECT_LT(sy, 0);  // loss grows upwards
  const XmlElement& target = *with_class(xml, "target").front();
  EXPECT_NEAR(std::stod(target.attributes.at("y1")), y_of(p.target.loss), 0.11);
  EXPECT_EQ(target.attributes.at("y1"), target.attributes.at("y2"));
  const XmlElement& boundary = *with_class(xml, "phase-boundary").front();
  EXPECT_NEAR(std::stod(boundary.attributes.at("x1")), mean.front().first + 2 * sx, 0.11);
}

TEST(LossPlot, EscapesNamesAndRotatesLabelsOfNarrowPhases) {
  solver::Problem p = small_problem();
  p.models[1].name = "int8<fast>&\"cheap\"";
  p.switching[0].from = p.models[1].name;
  solver::Plan plan = two_phase_plan();
  plan.phases[0].epochs = 1;
  plan.phases[1].epochs = 60;
  auto svg = loss_plot_svg(p, plan);
  ASSERT_TRUE(svg.has_value());
  const auto xml = check_xml(*svg);
  ASSERT_TRUE(xml.ok) << xml.error;
  const auto labels = with_class(xml, "phase-label");
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[0]->text, "int8&lt;fast&gt;&amp;&quot;cheap&quot;@t4-pool");
  EXPECT_THAT(labels[0]->attributes.at("transform"), HasSubstr("rotate(-90)"));
  EXPECT_EQ(labels[1]->attributes.count("transform"), 0u);
}

TEST(LossPlot, NothingToDrawIsAnError) {
  const solver::Problem p = small_problem();
  EXPECT_FALSE(loss_plot_svg(p, solver::Plan{}).has_value());
  EXPECT_FALSE(loss_plot_svg(p, solver::Plan{{0}, {{9, 1, 0, 1}}}).has_value());
}

TEST(NiceTicks, CoverTheRangeWithRoundSteps) {
  EXPECT_EQ(nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(0.27, 2.03, 6), (std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5}));
  EXPECT_EQ(nice_ticks(0.27, 0.61, 4), (std::vector<double>{0.2, 0.3, 0.4, 0.5, 0.6, 0.7}));
  const auto t = nice_ticks(0, 37, 10);
  EXPECT_EQ(t.front(), 0);
  EXPECT_GE(t.back(), 37);
  EXPECT_EQ(t[1] - t[0], 5);
  EXPECT_EQ(nice_ticks(3, 3, 4).front(), 3);
}

TEST(XmlEscape, AllFiveCharacters) {
  EXPECT_EQ(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
}

}  // namespace
}  // namespace depl::cli
