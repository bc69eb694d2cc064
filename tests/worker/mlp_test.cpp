#include "depl/worker/mlp.hpp"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace depl::worker {
namespace {

struct SmallProblem {
  MlpShape shape{6, 5, 4};
  MlpParameters parameters{shape};
  MlpBatchKernel kernel{shape, 8};
  std::vector<std::uint8_t> labels{0, 3, 1, 2, 3};

  explicit SmallProblem(std::uint64_t seed) {
    initialise_parameters(parameters, seed);
    std::mt19937_64 rng(seed + 1);
    std::normal_distribution<float> normal(0.0f, 0.3f);
    for (float& v : parameters.values()) v += normal(rng) * 0.1f;  // non-zero biases too
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    for (int i = 0; i < 5; ++i) {
      for (int k = 0; k < shape.inputs; ++k) kernel.inputs()(i, k) = uniform(rng);
    }
  }
  double loss() { return kernel.evaluate(parameters, labels).loss_sum; }
};

TEST(Mlp, ParameterCountCoversEveryLayer) {
  EXPECT_EQ((MlpShape{784, 256, 10}.parameter_count()),
            784u * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10);
}

TEST(Mlp, GradientMatchesFiniteDifferences) {
  SmallProblem p(7);
  MlpParameters gradient(p.shape);
  p.kernel.loss_and_gradient(p.parameters, p.labels, gradient);
  const float eps = 1e-3f;
  int checked = 0;
  for (std::size_t i = 0; i < p.parameters.values().size(); ++i) {
    float& w = p.parameters.values()[i];
    const float saved = w;
    w = saved + eps;
    const double up = p.loss();
    w = saved - eps;
    const double down = p.loss();
    w = saved;
    const double numeric = (up - down) / (2.0 * eps);
    EXPECT_NEAR(gradient.values()[i], numeric, 2e-3 + 2e-2 * std::abs(numeric))
        << "parameter " << i;
    ++checked;
  }
  EXPECT_EQ(checked, 89);
}

TEST(Mlp, EvaluateAndTrainingPassAgreeOnTheLoss) {
  SmallProblem p(3);
  MlpParameters gradient(p.shape);
  const BatchResult eval = p.kernel.evaluate(p.parameters, p.labels);
  const BatchResult train = p.kernel.loss_and_gradient(p.parameters, p.labels, gradient);
  EXPECT_DOUBLE_EQ(eval.loss_sum, train.loss_sum);
  EXPECT_EQ(eval.correct, train.correct);
  EXPECT_GT(eval.loss_sum, 0.0);
}

TEST(Mlp, LossIsFiniteForExtremeLogits) {
  MlpShape shape{2, 2, 3};
  MlpParameters p(shape);
  p.w1().setConstant(100.0f);
  p.w2().setConstant(100.0f);
  p.w3() << 100.0f, -100.0f, 0.0f, 100.0f, -100.0f, 0.0f;
  MlpBatchKernel kernel(shape, 1);
  kernel.inputs() << 1.0f, 1.0f;
  const std::vector<std::uint8_t> wrong{1};
  const BatchResult r = kernel.evaluate(p, wrong);
  EXPECT_TRUE(std::isfinite(r.loss_sum));
  EXPECT_GT(r.loss_sum, 1e5);  // logit gap of 2 * 100 * 100 * 200
  EXPECT_EQ(r.correct, 0);
}

TEST(Mlp, InitialisationIsSeeded) {
  MlpShape shape{10, 8, 3};
  MlpParameters a(shape), b(shape), c(shape);
  initialise_parameters(a, 1);
  initialise_parameters(b, 1);
  initialise_parameters(c, 2);
  EXPECT_TRUE(std::equal(a.values().begin(), a.values().end(), b.values().begin()));
  EXPECT_FALSE(std::equal(a.values().begin(), a.values().end(), c.values().begin()));
}

}  // namespace
}  // namespace depl::worker
