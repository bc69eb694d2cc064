#include "depl/worker/variant_conversion.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace depl::worker {
namespace {

// incoming: fan_in x units, outgoing: units x fan_out.
std::vector<int> strongest(const Eigen::Ref<const RowMatrix>& incoming,
                           const Eigen::Ref<const Eigen::RowVectorXf>& bias,
                           const Eigen::Ref<const RowMatrix>& outgoing, int keep) {
  const int units = static_cast<int>(incoming.cols());
  std::vector<double> score(static_cast<std::size_t>(units));
  for (int j = 0; j < units; ++j) {
    const double in = std::sqrt(static_cast<double>(incoming.col(j).squaredNorm()) +
                                static_cast<double>(bias(j)) * bias(j));
    const double out = outgoing.row(j).norm();
    score[static_cast<std::size_t>(j)] = in * out;
  }
  std::vector<int> order(static_cast<std::size_t>(units));
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal scores keep the lower index, so the result does not depend on the sort.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return score[static_cast<std::size_t>(a)] > score[static_cast<std::size_t>(b)];
  });
  order.resize(static_cast<std::size_t>(keep));
  std::sort(order.begin(), order.end());
  return order;
}

MlpParameters shrink(const MlpParameters& from, int hidden) {
  const MlpShape& s = from.shape();
  const std::vector<int> keep1 = strongest(from.w1(), from.b1(), from.w2(), hidden);
  // The second layer's units are ranked on the weights that survive the first cut.
  RowMatrix w2_rows(hidden, s.hidden);
  for (int i = 0; i < hidden; ++i)
    w2_rows.row(i) = from.w2().row(keep1[static_cast<std::size_t>(i)]);
  const std::vector<int> keep2 = strongest(w2_rows, from.b2(), from.w3(), hidden);

  MlpParameters to(MlpShape{s.inputs, hidden, s.classes});
  for (int j = 0; j < hidden; ++j) {
    const int u1 = keep1[static_cast<std::size_t>(j)];
    const int u2 = keep2[static_cast<std::size_t>(j)];
    to.w1().col(j) = from.w1().col(u1);
    to.b1()(j) = from.b1()(u1);
    to.b2()(j) = from.b2()(u2);
    to.w3().row(j) = from.w3().row(u2);
    for (int i = 0; i < hidden; ++i) to.w2()(i, j) = w2_rows(i, u2);
  }
  to.b3() = from.b3();
  return to;
}

MlpParameters grow(const MlpParameters& from, int hidden, std::uint64_t seed) {
  const MlpShape& s = from.shape();
  const int old = s.hidden;
  MlpParameters to(MlpShape{s.inputs, hidden, s.classes});
  std::mt19937_64 rng(seed);
  auto small = [&](MatrixView w, Eigen::Index fan_in) {
    std::normal_distribution<float> normal(
        0.0f, kGrowthInitScale * std::sqrt(2.0f / static_cast<float>(fan_in)));
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng);
  };
  small(to.w1(), s.inputs);
  small(to.w2(), hidden);
  small(to.w3(), hidden);
  to.w1().leftCols(old) = from.w1();
  to.b1().head(old) = from.b1();
  to.w2().topLeftCorner(old, old) = from.w2();
  to.b2().head(old) = from.b2();
  to.w3().topRows(old) = from.w3();
  to.b3() = from.b3();
  return to;
}

}  // namespace

std::vector<int> strongest_first_layer_units(const MlpParameters& p, int keep) {
  return strongest(p.w1(), p.b1(), p.w2(), std::clamp(keep, 0, p.shape().hidden));
}

MlpParameters convert_hidden_width(const MlpParameters& from, int hidden, std::uint64_t seed) {
  if (hidden == from.shape().hidden) return from;
  if (hidden < from.shape().hidden) return shrink(from, hidden);
  return grow(from, hidden, seed);
}

}  // namespace depl::worker
