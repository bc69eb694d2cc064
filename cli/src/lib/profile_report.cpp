#include "depl/cli/profile_report.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "depl/cli/loss_plot.hpp"

namespace depl::cli {

namespace {

// Shortest text that reads back as the same double.
std::string number(double value) {
  return fmt::format("{}", value);
}

// Six significant digits: profiles are estimates, more digits only add noise.
std::string rounded(double value) {
  return fmt::format("{:.6g}", value);
}

solver::ModelVariant model_of(const VariantProfile& v) {
  solver::ModelVariant model;
  model.name = v.name;
  model.loss = v.fit.profile;
  return model;
}

}  // namespace

std::vector<solver::LossPoint> fitted_curve(const VariantProfile& variant, int epochs) {
  const solver::ModelVariant model = model_of(variant);
  std::vector<solver::LossPoint> out;
  solver::LossState state{model.loss.initial_loss, 0};
  out.push_back({0, 0, state.mean, state.variance});
  for (int e = 1; e <= epochs; ++e) {
    state = solver::epoch_step(model, model.loss.reference_samples, 0.0, state);
    out.push_back({e, 0, state.mean, state.variance});
  }
  return out;
}

std::string profile_to_yaml(const ProfileResult& result, std::string_view command) {
  const ProfileRequest& r = result.request;
  std::string out;
  out += fmt::format("# Measured with:\n#   {}\n", command);
  out += fmt::format(
      "# {} on Fashion-MNIST from {}:\n# {} clean training samples per "
      "epoch, validation loss over {} test images; {} run(s) of\n# {} epochs per variant, seeds "
      "{}..{}. Fitted as in docs/depl-model.md section 6.\n# referenceSamples is the data it was "
      "measured on. {}\n",
      r.worker, r.data_dir, r.samples, r.validation_samples, r.runs, r.epochs, r.seed,
      r.seed + static_cast<std::uint64_t>(r.runs) - 1,
      r.exponent_samples > 0
          ? fmt::format("dataExponent from the floor fitted again on\n# {} samples: "
                        "ln(floor_{} / floor_{}) / ln({} / {}), at least 0.",
                        r.exponent_samples, r.samples, r.exponent_samples, r.exponent_samples,
                        r.samples)
          : std::string("dataExponent is 0 (one data size says\n# nothing about it; see "
                        "--exponent-samples)."));
  if (r.noisy_samples > 0) {
    out += fmt::format(
        "# labelNoiseFloor from {} run(s) on the same data plus {} samples with {} of their\n# "
        "labels wrong: the model's curve fitted to theirs (clean samples E, wrong share W / N).\n",
        r.runs, r.noisy_samples, number(r.noisy_label_share));
  }
  out += "models:\n";
  for (const auto& v : result.variants) {
    const solver::LossProfile& p = v.fit.profile;
    const double points = static_cast<double>(r.epochs + 1);
    out += fmt::format(
        "  # {}: {}fit RMS error {:.4f} on the mean curve, {:.3f} s per epoch here\n", v.name,
        v.width > 0 ? fmt::format("hidden width {}, ", number(v.width)) : std::string(),
        std::sqrt(v.fit.squared_error / points), v.epoch_seconds);
    if (v.exponent_samples > 0) {
      out += fmt::format("  # {}: floor {:.4f} on {} samples, {:.4f} on {}\n", v.name, p.floor_loss,
                         r.samples, v.exponent_floor, v.exponent_samples);
    }
    if (v.noisy_share > 0) {
      out += fmt::format(
          "  # {}: {:.4f} after {} epochs with {:.1f}% of the labels wrong ({} noisy samples)\n",
          v.name, v.noisy_final_loss, r.epochs, 100 * v.noisy_share, r.noisy_samples);
    }
    out += fmt::format("  - name: {}\n", v.name);
    out += fmt::format("    image: {}\n", r.image);
    out += fmt::format("    computePerSampleGflop: {}\n", rounded(v.compute_per_sample_gflop));
    out += fmt::format("    parameterBytes: {}\n", number(v.parameter_bytes));
    out += "    lossProfile:\n";
    out += fmt::format("      initialLoss: {}\n", rounded(p.initial_loss));
    out += fmt::format("      floorLoss: {}\n", rounded(p.floor_loss));
    out += fmt::format("      decayPerEpoch: {}\n", rounded(p.decay_per_epoch));
    out += fmt::format("      noiseStddev: {}\n", rounded(p.noise_stddev));
    out += fmt::format("      validationNoiseStddev: {}\n", rounded(p.validation_noise_stddev));
    out += fmt::format("      initialLossStddev: {}\n", rounded(p.initial_stddev));
    out += fmt::format("      referenceSamples: {}\n", number(p.reference_samples));
    out += fmt::format("      dataExponent: {}\n", rounded(p.data_exponent));
    if (v.noisy_share > 0) {
      out += fmt::format("      labelNoiseFloor: {}\n", rounded(p.label_noise_floor));
    }
  }
  if (!result.switches.empty()) {
    out += "switching:\n";
    for (const auto& s : result.switches) {
      out += fmt::format(
          "  # measured after {} epoch(s) of {}: {} run(s); overheadSeconds is the conversion "
          "time on\n  # your cluster (not measured here)\n",
          s.point.epoch, s.point.from, s.before.size());
      out += fmt::format("  - from: {}\n    to: {}\n", s.point.from, s.point.to);
      out += fmt::format("    lossJump: {{mean: {}, stddev: {}}}\n", rounded(s.jump.mean),
                         rounded(s.jump.stddev));
      out += "    overheadSeconds: 0\n";
    }
  }
  return out;
}

namespace {

constexpr const char* kColours[] = {"#1f4e79", "#c62828", "#2e7d32", "#e8710a",
                                    "#6a1b9a", "#00838f", "#5d4037", "#ad1457"};
constexpr const char* kFont = "DejaVu Sans, Helvetica, Arial, sans-serif";
constexpr const char* kGrid = "#e3e6ea";
constexpr const char* kMuted = "#5f6368";

struct Frame {
  double left, right, top, bottom;
  double x_max, y_min, y_max;
  double x(double epoch) const { return left + epoch / x_max * (right - left); }
  double y(double loss) const { return bottom - (loss - y_min) / (y_max - y_min) * (bottom - top); }
};

std::string polyline(const Frame& f, const std::vector<std::pair<double, double>>& points) {
  std::string out;
  for (const auto& [e, l] : points) out += fmt::format("{:.1f},{:.1f} ", f.x(e), f.y(l));
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace

Expected<std::string> profile_plot_svg(const ProfileResult& result, int width, int height) {
  if (result.variants.empty()) return error("plot: no variant was profiled");
  const int epochs = result.request.epochs;
  double lo = INFINITY;
  double hi = -INFINITY;
  for (const auto& v : result.variants) {
    for (double l : v.initial_losses) hi = std::max(hi, l), lo = std::min(lo, l);
    for (const auto& run : v.runs) {
      for (double l : run) hi = std::max(hi, l), lo = std::min(lo, l);
    }
    lo = std::min(lo, v.fit.profile.floor_loss);
  }
  for (const auto& s : result.switches) {
    for (double l : s.after) hi = std::max(hi, l), lo = std::min(lo, l);
  }
  const auto y_ticks = nice_ticks(std::max(0.0, lo - 0.05 * (hi - lo)), hi + 0.05 * (hi - lo), 6);
  Frame f{78, width - 260.0, 70, height - 58.0, epochs * 1.02, y_ticks.front(), y_ticks.back()};

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"{2}\" font-size=\"12\" fill=\"#202124\">\n<title>Measured loss "
      "curves and fitted loss profiles</title>\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"#ffffff\"/>\n",
      width, height, kFont);
  svg += fmt::format(
      "<text x=\"{}\" y=\"30\" font-size=\"18\" font-weight=\"bold\">Loss profiles: measured runs "
      "vs fitted model</text>\n<text x=\"{}\" y=\"52\" font-size=\"12.5\" fill=\"{}\">"
      "Fashion-MNIST, {} samples per epoch, {} run(s) per variant; lines: fitted mean, band: "
      "± 1 sd, thin: runs</text>\n",
      f.left, f.left, kMuted, result.request.samples, result.request.runs);
  // Axes and grid.
  const double y_step = y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : 1;
  for (double t : y_ticks) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"/>\n"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">{:.{}f}</text>\n",
        f.left, f.y(t), f.right, f.y(t), kGrid, f.left - 8, f.y(t) + 4, kMuted, t,
        y_step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(y_step) - 1e-9)));
  }
  for (double t : nice_ticks(0, epochs, std::min(10, epochs))) {
    if (t > epochs + 1e-9) continue;
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n", f.x(t),
        f.bottom + 19, kMuted, static_cast<int>(std::lround(t)));
  }
  svg += fmt::format(
      "<path d=\"M{:.1f},{:.1f} V{:.1f} H{:.1f}\" fill=\"none\" stroke=\"{}\"/>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"13\">epoch</text>\n"
      "<text transform=\"translate(22,{:.1f}) rotate(-90)\" text-anchor=\"middle\" "
      "font-size=\"13\">validation loss</text>\n",
      f.left, f.top, f.bottom, f.right, kMuted, (f.left + f.right) / 2, height - 18.0,
      (f.top + f.bottom) / 2);

  double legend_y = f.top + 10;
  for (std::size_t i = 0; i < result.variants.size(); ++i) {
    const VariantProfile& v = result.variants[i];
    const char* colour = kColours[i % std::size(kColours)];
    const auto curve = fitted_curve(v, epochs);
    std::vector<std::pair<double, double>> mean, upper, lower;
    for (const auto& p : curve) {
      const double sd = std::sqrt(p.variance);
      mean.emplace_back(p.epoch, p.mean);
      upper.emplace_back(p.epoch, p.mean + sd);
      lower.emplace_back(p.epoch, p.mean - sd);
    }
    std::reverse(lower.begin(), lower.end());
    svg += fmt::format(
        "<polygon class=\"fitted-band\" fill=\"{}\" fill-opacity=\"0.15\" points=\"{} {}\"/>\n",
        colour, polyline(f, upper), polyline(f, lower));
    for (std::size_t k = 0; k < v.runs.size(); ++k) {
      std::vector<std::pair<double, double>> run{{0, v.initial_losses[k]}};
      for (std::size_t t = 0; t < v.runs[k].size(); ++t) {
        run.emplace_back(static_cast<double>(t + 1), v.runs[k][t]);
      }
      svg += fmt::format(
          "<polyline class=\"measured-run\" fill=\"none\" stroke=\"{}\" stroke-opacity=\"0.55\" "
          "stroke-width=\"1\" points=\"{}\"/>\n",
          colour, polyline(f, run));
      for (const auto& [e, l] : run) {
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2\" fill=\"{}\"/>\n", f.x(e),
                           f.y(l), colour);
      }
    }
    svg += fmt::format(
        "<polyline class=\"fitted-mean\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.4\" "
        "points=\"{}\"/>\n",
        colour, polyline(f, mean));
    const solver::LossProfile& p = v.fit.profile;
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2.4\"/>\n<text class=\"legend-variant\" x=\"{:.1f}\" y=\"{:.1f}\" "
        "font-weight=\"bold\">{}</text>\n<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" "
        "fill=\"{}\">floor {:.3f}, r {:.3f}, σ {:.3f}, τ {:.3f}</text>\n",
        f.right + 20, legend_y, f.right + 46, legend_y, colour, f.right + 52, legend_y + 4,
        xml_escape(v.name), f.right + 52, legend_y + 19, kMuted, p.floor_loss, p.decay_per_epoch,
        p.noise_stddev, p.validation_noise_stddev);
    legend_y += 42;
  }
  // Switches: a marker from the mean loss before to the mean loss after at the switch epoch,
  // and the fitted jump in the legend column (labels at the markers would overlap).
  if (!result.switches.empty()) {
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\">switch jumps</text>\n",
                       f.right + 20, legend_y + 4);
    legend_y += 20;
  }
  for (const auto& s : result.switches) {
    double before = 0, after = 0;
    for (std::size_t k = 0; k < s.before.size(); ++k) {
      before += s.before[k] / static_cast<double>(s.before.size());
      after += s.after[k] / static_cast<double>(s.after.size());
    }
    svg += fmt::format(
        "<line class=\"switch-jump\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
        "y2=\"{2:.1f}\" stroke=\"#202124\" stroke-width=\"1.6\"/>\n<circle cx=\"{0:.1f}\" "
        "cy=\"{2:.1f}\" r=\"3\" fill=\"none\" stroke=\"#202124\"/>\n",
        f.x(s.point.epoch), f.y(before), f.y(after));
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{} → {} @{}: {:+.4f} ± {:.4f}</text>\n",
        f.right + 20, legend_y + 4, xml_escape(s.point.from), xml_escape(s.point.to), s.point.epoch,
        s.jump.mean, s.jump.stddev);
    legend_y += 17;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace depl::cli
