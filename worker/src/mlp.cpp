#include "depl/worker/mlp.hpp"

#include <cassert>
#include <cmath>
#include <random>

namespace depl::worker {
namespace {

struct Offsets {
  std::size_t w1, b1, w2, b2, w3, b3, end;
};

Offsets offsets(const MlpShape& s) {
  const auto in = static_cast<std::size_t>(s.inputs);
  const auto h = static_cast<std::size_t>(s.hidden);
  const auto c = static_cast<std::size_t>(s.classes);
  Offsets o{};
  o.w1 = 0;
  o.b1 = o.w1 + in * h;
  o.w2 = o.b1 + h;
  o.b2 = o.w2 + h * h;
  o.w3 = o.b2 + h;
  o.b3 = o.w3 + h * c;
  o.end = o.b3 + c;
  return o;
}

}  // namespace

std::size_t MlpShape::parameter_count() const {
  return offsets(*this).end;
}

MlpParameters::MlpParameters(MlpShape shape)
    : shape_(shape), values_(shape.parameter_count(), 0.0f) {}

MatrixView MlpParameters::w1() {
  return {values_.data() + offsets(shape_).w1, shape_.inputs, shape_.hidden};
}
RowVectorView MlpParameters::b1() {
  return {values_.data() + offsets(shape_).b1, shape_.hidden};
}
MatrixView MlpParameters::w2() {
  return {values_.data() + offsets(shape_).w2, shape_.hidden, shape_.hidden};
}
RowVectorView MlpParameters::b2() {
  return {values_.data() + offsets(shape_).b2, shape_.hidden};
}
MatrixView MlpParameters::w3() {
  return {values_.data() + offsets(shape_).w3, shape_.hidden, shape_.classes};
}
RowVectorView MlpParameters::b3() {
  return {values_.data() + offsets(shape_).b3, shape_.classes};
}
ConstMatrixView MlpParameters::w1() const {
  return {values_.data() + offsets(shape_).w1, shape_.inputs, shape_.hidden};
}
ConstRowVectorView MlpParameters::b1() const {
  return {values_.data() + offsets(shape_).b1, shape_.hidden};
}
ConstMatrixView MlpParameters::w2() const {
  return {values_.data() + offsets(shape_).w2, shape_.hidden, shape_.hidden};
}
ConstRowVectorView MlpParameters::b2() const {
  return {values_.data() + offsets(shape_).b2, shape_.hidden};
}
ConstMatrixView MlpParameters::w3() const {
  return {values_.data() + offsets(shape_).w3, shape_.hidden, shape_.classes};
}
ConstRowVectorView MlpParameters::b3() const {
  return {values_.data() + offsets(shape_).b3, shape_.classes};
}

void initialise_parameters(MlpParameters& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto fill = [&](MatrixView w) {
    std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(w.rows())));
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng);
  };
  fill(p.w1());
  fill(p.w2());
  fill(p.w3());
  p.b1().setZero();
  p.b2().setZero();
  p.b3().setZero();
}

MlpBatchKernel::MlpBatchKernel(MlpShape shape, int max_batch)
    : shape_(shape),
      max_batch_(max_batch),
      inputs_(max_batch, shape.inputs),
      hidden1_(max_batch, shape.hidden),
      hidden2_(max_batch, shape.hidden),
      output_(max_batch, shape.classes),
      delta1_(max_batch, shape.hidden),
      delta2_(max_batch, shape.hidden) {
  inputs_.setZero();
}

BatchResult MlpBatchKernel::forward(const MlpParameters& p, std::span<const std::uint8_t> labels) {
  assert(p.shape() == shape_);
  const auto n = static_cast<Eigen::Index>(labels.size());
  assert(n <= max_batch_);
  auto x = inputs_.topRows(n);
  auto h1 = hidden1_.topRows(n);
  auto h2 = hidden2_.topRows(n);
  auto out = output_.topRows(n);

  h1.noalias() = x * p.w1();
  h1.rowwise() += p.b1();
  h1 = h1.cwiseMax(0.0f);
  h2.noalias() = h1 * p.w2();
  h2.rowwise() += p.b2();
  h2 = h2.cwiseMax(0.0f);
  out.noalias() = h2 * p.w3();
  out.rowwise() += p.b3();

  BatchResult result;
  for (Eigen::Index i = 0; i < n; ++i) {
    auto row = out.row(i);
    Eigen::Index best = 0;
    const float top = row.maxCoeff(&best);
    const auto label = static_cast<Eigen::Index>(labels[static_cast<std::size_t>(i)]);
    // -log p(label) = log(sum exp(logit - top)) - (logit_label - top): never underflows.
    const float shifted_label = row(label) - top;
    row = (row.array() - top).exp();
    const float sum = row.sum();
    row /= sum;
    result.loss_sum += static_cast<double>(std::log(sum) - shifted_label);
    if (best == label) ++result.correct;
  }
  return result;
}

BatchResult MlpBatchKernel::evaluate(const MlpParameters& p, std::span<const std::uint8_t> labels) {
  return forward(p, labels);
}

BatchResult MlpBatchKernel::loss_and_gradient(const MlpParameters& p,
                                              std::span<const std::uint8_t> labels,
                                              MlpParameters& g) {
  assert(g.shape() == shape_);
  const BatchResult result = forward(p, labels);
  const auto n = static_cast<Eigen::Index>(labels.size());
  auto x = inputs_.topRows(n);
  auto h1 = hidden1_.topRows(n);
  auto h2 = hidden2_.topRows(n);
  auto d_out = output_.topRows(n);
  auto d2 = delta2_.topRows(n);
  auto d1 = delta1_.topRows(n);

  for (Eigen::Index i = 0; i < n; ++i) {
    d_out(i, static_cast<Eigen::Index>(labels[static_cast<std::size_t>(i)])) -= 1.0f;
  }
  g.w3().noalias() = h2.transpose() * d_out;
  g.b3() = d_out.colwise().sum();
  d2.noalias() = d_out * p.w3().transpose();
  d2 = (h2.array() > 0.0f).select(d2, 0.0f);
  g.w2().noalias() = h1.transpose() * d2;
  g.b2() = d2.colwise().sum();
  d1.noalias() = d2 * p.w2().transpose();
  d1 = (h1.array() > 0.0f).select(d1, 0.0f);
  g.w1().noalias() = x.transpose() * d1;
  g.b1() = d1.colwise().sum();
  return result;
}

}  // namespace depl::worker
