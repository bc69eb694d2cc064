#include "depl/cli/loss_plot.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "depl/cli/human_units.hpp"
#include "depl/cli/text_table.hpp"
#include "depl/solver/evaluator.hpp"

namespace depl::cli {

using solver::Figures;
using solver::LossPoint;

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double low, double high, int count) {
  if (!(high > low)) high = low + 1;
  const double raw = (high - low) / std::max(1, count);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw * (1 - 1e-9)) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(low / step + 1e-9) * step;
  // Ticks are k * step; for steps below 1 they are computed as k / (1 / step), which gives the
  // double nearest to 0.3 rather than 3 * 0.1 = 0.30000000000000004.
  const double inverse = step < 1 ? std::round(1 / step) : 0;
  for (double t = first; t < high + step * (1 - 1e-9); t += step) {
    const double k = std::round(t / step);
    ticks.push_back(inverse > 0 ? k / inverse : k * step);
  }
  return ticks;
}

namespace {

// Colours: blues for the prediction, red for the target, greys for structure.
constexpr const char* kMeanColour = "#1f4e79";
constexpr const char* kBandColour = "#5b8fc7";
constexpr const char* kTargetColour = "#c62828";
constexpr const char* kObservedColour = "#e8710a";
constexpr const char* kGridColour = "#e3e6ea";
constexpr const char* kAxisColour = "#5f6368";
constexpr const char* kTextColour = "#202124";
constexpr const char* kMutedText = "#5f6368";
constexpr const char* kPhaseTint = "#f1f5fa";
constexpr const char* kFont = "DejaVu Sans, Helvetica, Arial, sans-serif";

// Rough text width for layout decisions (average glyph ~0.6 em in sans-serif fonts).
double text_width(std::string_view text, double font_size) {
  return 0.6 * font_size * static_cast<double>(display_width(text));
}

std::string tick_label(double value, double step) {
  // As many decimals as the step needs, no more.
  const int decimals =
      step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return fmt::format("{:.{}f}", value, decimals);
}

// A rectangle of the picture showing epochs [x_min, x_max] and losses [y_min, y_max].
struct Panel {
  double left, right, top, bottom;    // pixels
  double x_min, x_max, y_min, y_max;  // data
  std::string prefix;                 // class prefix: "" for the main panel, "zoom-" for the inset
  double x_end = 0;                   // last epoch (x_max leaves a little room after it)
  double x(double epoch) const { return left + (epoch - x_min) / (x_max - x_min) * (right - left); }
  double y(double loss) const { return bottom - (loss - y_min) / (y_max - y_min) * (bottom - top); }
};

// What both panels draw: the trajectory, the guarantee bound per point and the phases.
struct Scene {
  std::vector<LossPoint> points;
  std::vector<double> bounds;   // mean + kappa * sd per point
  std::vector<int> boundaries;  // cumulative epochs at phase starts, then the end
  double target = 0;
  std::vector<ObservedLoss> observed;
};

void draw_grid_and_axes(std::string& svg, const Panel& p, int x_count, int y_count) {
  std::vector<double> y_ticks = nice_ticks(p.y_min, p.y_max, y_count);
  std::vector<double> x_ticks = nice_ticks(p.x_min, p.x_end, x_count);
  const double y_step = y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : 1;
  const double x_step = std::max(1.0, x_ticks.size() > 1 ? x_ticks[1] - x_ticks[0] : 1);
  svg += "<g class=\"" + p.prefix + "axes\">\n";
  for (double t : y_ticks) {
    if (t < p.y_min - 1e-12 || t > p.y_max + 1e-12) continue;
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"/>\n", p.left,
        p.y(t), p.right, p.y(t), kGridColour);
    svg +=
        fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">{}</text>\n",
                    p.left - 8, p.y(t) + 4, kMutedText, tick_label(t, y_step));
  }
  for (double t = std::ceil(p.x_min / x_step) * x_step; t <= p.x_end + 1e-9; t += x_step) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\"/>\n",
        p.x(t), p.bottom, p.bottom + 5, kAxisColour);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n", p.x(t),
        p.bottom + 19, kMutedText, tick_label(t, x_step));
  }
  svg += fmt::format(
      "<path d=\"M{:.1f},{:.1f} V{:.1f} H{:.1f}\" fill=\"none\" stroke=\"{}\" "
      "stroke-width=\"1.2\"/>\n</g>\n",
      p.left, p.top, p.bottom, p.right, kAxisColour);
}

// Phase tints and boundaries, the band, the two lines, the target; clipped to the panel.
void draw_series(std::string& svg, const Panel& p, const Scene& scene) {
  const std::string clip = p.prefix + "clip";
  svg += fmt::format(
      "<clipPath id=\"{}\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>"
      "</clipPath>\n<g clip-path=\"url(#{})\">\n",
      clip, p.left, p.top, p.right - p.left, p.bottom - p.top, clip);
  for (std::size_t i = 0; i + 1 < scene.boundaries.size(); ++i) {
    if (i % 2 == 1) {
      const double x0 = p.x(scene.boundaries[i]);
      const bool last = i + 2 == scene.boundaries.size();
      const double x1 = last ? p.right : p.x(scene.boundaries[i + 1]);
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x0,
          p.top, x1 - x0, p.bottom - p.top, kPhaseTint);
    }
  }
  for (std::size_t i = 1; i + 1 < scene.boundaries.size(); ++i) {
    svg += fmt::format(
        "<line class=\"{}phase-boundary\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" "
        "y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"1.2\" stroke-dasharray=\"3 3\"/>\n",
        p.prefix, p.x(scene.boundaries[i]), p.top, p.x(scene.boundaries[i]), p.bottom, kAxisColour);
  }

  std::string band;
  for (const LossPoint& pt : scene.points) {
    band += fmt::format("{:.1f},{:.1f} ", p.x(pt.epoch), p.y(pt.mean));
  }
  for (std::size_t i = scene.points.size(); i-- > 0;) {
    band += fmt::format("{:.1f},{:.1f} ", p.x(scene.points[i].epoch), p.y(scene.bounds[i]));
  }
  band.pop_back();
  svg += fmt::format(
      "<polygon class=\"{}guarantee-band\" fill=\"{}\" fill-opacity=\"0.25\" stroke=\"none\" "
      "points=\"{}\"/>\n",
      p.prefix, kBandColour, band);

  std::string bound_line;
  std::string mean_line;
  for (std::size_t i = 0; i < scene.points.size(); ++i) {
    bound_line += fmt::format("{:.1f},{:.1f} ", p.x(scene.points[i].epoch), p.y(scene.bounds[i]));
    mean_line +=
        fmt::format("{:.1f},{:.1f} ", p.x(scene.points[i].epoch), p.y(scene.points[i].mean));
  }
  bound_line.pop_back();
  mean_line.pop_back();
  svg += fmt::format(
      "<polyline class=\"{}guarantee-bound\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" "
      "stroke-dasharray=\"6 4\" stroke-linejoin=\"round\" points=\"{}\"/>\n",
      p.prefix, kBandColour, bound_line);
  svg += fmt::format(
      "<polyline class=\"{}mean-loss\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.4\" "
      "stroke-linejoin=\"round\" points=\"{}\"/>\n",
      p.prefix, kMeanColour, mean_line);
  svg += fmt::format(
      "<line class=\"{}target\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"{}\" stroke-width=\"1.8\" stroke-dasharray=\"9 5\"/>\n",
      p.prefix, p.left, p.y(scene.target), p.right, p.y(scene.target), kTargetColour);

  for (const ObservedLoss& o : scene.observed) {
    svg += fmt::format(
        "<circle class=\"{}observed-loss\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" "
        "stroke=\"#ffffff\" stroke-width=\"0.8\"/>\n",
        p.prefix, p.x(o.epoch), p.y(o.loss), kObservedColour);
  }

  // The final state: a dot on the mean and a ring on the bound the guarantee compares.
  const LossPoint& last = scene.points.back();
  svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n",
                     p.x(last.epoch), p.y(last.mean), kMeanColour);
  svg += fmt::format(
      "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" fill=\"#ffffff\" stroke=\"{}\" "
      "stroke-width=\"1.6\"/>\n</g>\n",
      p.x(last.epoch), p.y(scene.bounds.back()), kBandColour);
}

// A y range [low, high] that holds every value, with a little air and round ends.
std::pair<double, double> y_range(double low, double high, bool clamp_at_zero) {
  const double span = high - low > 0 ? high - low : std::max(1e-3, std::abs(high) * 0.1);
  low -= 0.08 * span;
  high += 0.08 * span;
  if (clamp_at_zero) low = std::max(0.0, low);
  const auto ticks = nice_ticks(low, high, 5);
  return {ticks.front(), ticks.back()};
}

void draw_legend(std::string& svg, double right, double top, double kappa, double target,
                 bool observed) {
  const std::string bound_label = fmt::format("guarantee bound: mean + {:.3g} sd", kappa);
  const double width = text_width(bound_label, 12) + 64;
  const double lx = right - width - 10;
  svg += fmt::format(
      "<g class=\"legend\">\n<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" "
      "rx=\"4\" fill=\"#ffffff\" fill-opacity=\"0.94\" stroke=\"{}\"/>\n",
      lx, top, width, observed ? 94 : 74, kGridColour);
  const double x = lx + 10;
  const double x2 = lx + 42;
  double y = top + 18;
  svg += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
      "stroke-width=\"2.4\"/>\n<text x=\"{:.1f}\" y=\"{:.1f}\">mean loss</text>\n",
      x, y, x2, y, kMeanColour, lx + 50, y + 4);
  y += 20;
  svg += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"32\" height=\"9\" fill=\"{}\" "
      "fill-opacity=\"0.25\"/>\n<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"{}\" stroke-width=\"1.6\" stroke-dasharray=\"6 4\"/>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
      x, y - 4, kBandColour, x, y - 4, x2, y - 4, kBandColour, lx + 50, y + 4,
      xml_escape(bound_label));
  y += 20;
  svg += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
      "stroke-width=\"1.8\" stroke-dasharray=\"9 5\"/>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\">target loss {:.4g}</text>\n",
      x, y, x2, y, kTargetColour, lx + 50, y + 4, target);
  if (observed) {
    y += 20;
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n"
        "<text x=\"{:.1f}\" y=\"{:.1f}\">observed loss</text>\n",
        (x + x2) / 2, y, kObservedColour, lx + 50, y + 4);
  }
  svg += "</g>\n";
}

}  // namespace

Expected<std::string> loss_plot_svg(const solver::Problem& problem, const solver::Plan& plan,
                                    const LossPlotOptions& options) {
  Scene scene;
  scene.points = solver::loss_trajectory(problem, plan);
  if (scene.points.size() < 2) return depl::error("plot: the plan has no phases to draw");
  const Figures figures = options.recorded ? *options.recorded : solver::evaluate(problem, plan);
  const double kappa = figures.kappa;
  scene.target = problem.target.loss;
  scene.observed = options.observed;
  for (const LossPoint& pt : scene.points) {
    scene.bounds.push_back(pt.mean + kappa * std::sqrt(std::max(0.0, pt.variance)));
  }
  scene.boundaries.push_back(0);
  for (const solver::Phase& ph : plan.phases) {
    scene.boundaries.push_back(scene.boundaries.back() + ph.epochs);
  }
  int epochs = scene.points.back().epoch;
  for (const ObservedLoss& o : scene.observed) epochs = std::max(epochs, o.epoch);
  const double width = options.width;
  const double height = options.height;

  // Two panels: the whole run, and a zoom on the last epochs where the guarantee is decided.
  const double zoom_width = std::max(200.0, width * 0.27);
  // A little room right of the last epoch keeps its markers off the frame.
  Panel main{78, width - zoom_width - 70,    96, height - 58, 0, epochs * 1.015, 0, 1,
             "", static_cast<double>(epochs)};
  double lo = scene.target;
  double hi = scene.target;
  for (std::size_t i = 0; i < scene.points.size(); ++i) {
    lo = std::min(lo, scene.points[i].mean);
    hi = std::max(hi, scene.bounds[i]);
  }
  for (const ObservedLoss& o : scene.observed) {
    lo = std::min(lo, o.loss);
    hi = std::max(hi, o.loss);
  }
  std::tie(main.y_min, main.y_max) = y_range(lo, hi, lo >= 0);

  // The zoom frames the final state in y: from a little below min(mean, target) to a few spans
  // above max(bound, target). It starts at the last epoch whose bound is above that window, so
  // the curves enter it from the top (clipped), and shows at least two epochs.
  const double final_mean = scene.points.back().mean;
  const double final_bound = scene.bounds.back();
  double span = std::max(final_bound, scene.target) - std::min(final_mean, scene.target);
  span = std::max(span, 1e-3 * std::max(1.0, std::abs(scene.target)));
  const double zoom_lo = std::min(final_mean, scene.target) - 0.6 * span;
  const double zoom_hi = std::max(final_bound, scene.target) + 1.6 * span;
  int zoom_start = 0;
  for (std::size_t i = 0; i < scene.points.size(); ++i) {
    if (scene.bounds[i] > zoom_hi || scene.points[i].mean < zoom_lo) {
      zoom_start = scene.points[i].epoch;
    }
  }
  zoom_start = std::max(0, std::min(zoom_start, epochs - 2));
  Panel zoom{width - zoom_width + 12,
             width - 24,
             96,
             height - 58,
             static_cast<double>(zoom_start),
             epochs + 0.03 * (epochs - zoom_start),
             0,
             1,
             "zoom-",
             static_cast<double>(epochs)};
  std::tie(zoom.y_min, zoom.y_max) = y_range(zoom_lo, zoom_hi, false);

  std::string svg;
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"{2}\" font-size=\"12\" fill=\"{3}\">\n"
      "<title>{4}</title>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
      options.width, options.height, kFont, kTextColour,
      xml_escape(options.title.empty() ? "Predicted loss of the plan" : options.title));

  // Title: what the plan costs and how likely it is to reach the target.
  const std::string algorithm =
      options.algorithm.empty() ? "" : fmt::format(" ({} plan)", options.algorithm);
  svg += fmt::format(
      "<text x=\"{}\" y=\"30\" font-size=\"18\" font-weight=\"bold\">{}{}"
      "{}</text>\n",
      main.left, xml_escape(options.title.empty() ? "Predicted validation loss" : options.title),
      xml_escape(algorithm),
      figures.feasible ? ""
                       : fmt::format("<tspan fill=\"{}\"> · infeasible</tspan>", kTargetColour));
  std::string probability = format_probability(figures.probability);
  probability = (probability[0] == '>' || probability[0] == '<') ? probability : "= " + probability;
  svg += fmt::format(
      "<text x=\"{}\" y=\"53\" font-size=\"13.5\">cost {}  ·  {}  ·  <tspan font-weight=\"bold\">"
      "P(target) {}</tspan> (required {})  ·  final loss {:.4g} ± {:.3g}</text>\n",
      main.left, format_money(figures.cost), format_duration(figures.duration_seconds),
      xml_escape(probability), problem.target.probability, figures.loss_mean, figures.loss_stddev);
  std::string dataset_names;
  for (std::size_t d : plan.datasets) {
    dataset_names += (dataset_names.empty() ? "" : ", ") + problem.datasets[d].name;
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"73\" font-size=\"11.5\" fill=\"{}\">datasets: {}  ·  {} guarantee, "
      "κ = {:.3g}  ·  target loss {:.4g}</text>\n",
      main.left, kMutedText, xml_escape(dataset_names),
      problem.target.guarantee == solver::Guarantee::DistributionFree ? "distribution-free"
                                                                      : "Gaussian",
      kappa, scene.target);

  draw_grid_and_axes(svg, main, std::min(10, std::max(1, epochs)), 6);
  draw_series(svg, main, scene);
  draw_grid_and_axes(svg, zoom, std::min(5, std::max(1, epochs - zoom_start)), 6);
  draw_series(svg, zoom, scene);

  // Phase labels (model@pool, workers x GPUs) in the main panel; rotated when a phase is narrow.
  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    const solver::Phase& ph = plan.phases[i];
    const double x0 = main.x(scene.boundaries[i]);
    const double x1 = main.x(scene.boundaries[i + 1]);
    const std::string label =
        fmt::format("{}@{}", problem.models[ph.model].name, problem.pools[ph.pool].name);
    const int gpus = problem.models[ph.model].gpus_per_worker;
    const std::string detail =
        fmt::format("{} × {} GPU{}, {} epoch{}", ph.workers, gpus, gpus == 1 ? "" : "s", ph.epochs,
                    ph.epochs == 1 ? "" : "s");
    if (text_width(label, 12.5) + 12 <= x1 - x0) {
      svg += fmt::format(
          "<text class=\"phase-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12.5\" "
          "font-weight=\"bold\">{}</text>\n",
          x0 + 6, main.top + 16, xml_escape(label));
      if (text_width(detail, 11) + 12 <= x1 - x0) {
        svg +=
            fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"{}\">{}</text>\n",
                        x0 + 6, main.top + 31, kMutedText, xml_escape(detail));
      }
    } else {
      svg += fmt::format(
          "<text class=\"phase-label\" transform=\"translate({:.1f},{:.1f}) rotate(-90)\" "
          "text-anchor=\"end\" font-size=\"11.5\" font-weight=\"bold\">{}</text>\n",
          (x0 + x1) / 2 + 4, main.top + 6, xml_escape(label));
    }
  }
  // The target's label sits at the left end, where the curve is still high above it.
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\" font-weight=\"bold\">target {:.4g}</text>\n",
      main.left + 8, main.y(scene.target) - 7, kTargetColour, scene.target);
  draw_legend(svg, main.right, main.top + 44, kappa, scene.target, !scene.observed.empty());

  // Zoom panel: title and the numbers the guarantee compares.
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12.5\" font-weight=\"bold\">zoom: epochs "
      "{}–{}</text>\n",
      zoom.left, zoom.top - 8, zoom_start, epochs);
  // Inside the zoom, bottom left (below the falling curves): the comparison that decides.
  const double margin = scene.target - scene.bounds.back();
  const bool holds = margin >= -1e-12;
  svg += fmt::format(
      "<text class=\"zoom-verdict\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11.5\" "
      "fill=\"{}\">bound {:.4g} {} target {:.4g}</text>\n",
      zoom.left + 8, zoom.bottom - 10, holds ? kTextColour : kTargetColour, scene.bounds.back(),
      holds ? "≤" : "&gt;", scene.target);
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"13\">epoch</text>\n",
      (main.left + zoom.right) / 2, height - 18);
  svg += fmt::format(
      "<text transform=\"translate({:.1f},{:.1f}) rotate(-90)\" text-anchor=\"middle\" "
      "font-size=\"13\">validation loss</text>\n",
      22.0, (main.top + main.bottom) / 2);
  svg += "</svg>\n";
  return svg;
}

}  // namespace depl::cli
