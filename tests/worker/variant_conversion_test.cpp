#include "depl/worker/variant_conversion.hpp"

#include <random>

#include <gtest/gtest.h>

#include "depl/worker/variant.hpp"

namespace depl::worker {
namespace {

// Class probabilities of each input row: exp(-loss) of each class taken as the label.
RowMatrix probabilities(const MlpParameters& p, const RowMatrix& inputs) {
  MlpBatchKernel kernel(p.shape(), 1);
  RowMatrix out(inputs.rows(), p.shape().classes);
  for (Eigen::Index i = 0; i < inputs.rows(); ++i) {
    kernel.inputs().row(0) = inputs.row(i);
    for (int c = 0; c < p.shape().classes; ++c) {
      const std::vector<std::uint8_t> label{static_cast<std::uint8_t>(c)};
      out(i, c) = static_cast<float>(std::exp(-kernel.evaluate(p, label).loss_sum));
    }
  }
  return out;
}

RowMatrix random_inputs(int rows, int cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  RowMatrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
  return m;
}

TEST(Variant, StandardNamesAndWidths) {
  EXPECT_EQ(variant_from_name("full")->hidden_units(), 256);
  EXPECT_EQ(variant_from_name("half")->hidden_units(), 128);
  EXPECT_EQ(variant_from_name("quarter")->hidden_units(), 64);
  EXPECT_EQ(variant_from_name("eighth")->hidden_units(), 32);
  EXPECT_EQ(variant_from_width(0.25)->name, "quarter");
  EXPECT_EQ(variant_from_width(0.3)->hidden_units(), 77);
  EXPECT_FALSE(variant_from_width(0.0));
  EXPECT_FALSE(variant_from_width(1.5));
  auto unknown = variant_from_name("tiny");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'tiny'"), std::string::npos);
}

TEST(VariantConversion, ShrinkKeepsTheUnitsOfLargestNorm) {
  MlpShape shape{5, 6, 3};
  MlpParameters p(shape);
  initialise_parameters(p, 11);
  // Units 1, 3 and 4 of both layers are dead (no weights in or out); the other three carry the
  // whole function, so shrinking to 3 units must keep exactly them and change nothing.
  for (int dead : {1, 3, 4}) {
    p.w1().col(dead).setZero();
    p.b1()(dead) = 0.0f;
    p.w2().row(dead).setZero();
    p.w2().col(dead).setZero();
    p.b2()(dead) = 0.0f;
    p.w3().row(dead).setZero();
  }
  EXPECT_EQ(strongest_first_layer_units(p, 3), (std::vector<int>{0, 2, 5}));
  const MlpParameters small = convert_hidden_width(p, 3, 1);
  EXPECT_EQ(small.shape(), (MlpShape{5, 3, 3}));
  const RowMatrix x = random_inputs(4, 5, 2);
  EXPECT_TRUE(probabilities(small, x).isApprox(probabilities(p, x), 1e-5f));
  EXPECT_EQ(small.w1().col(1), p.w1().col(2));
  EXPECT_EQ(small.w2()(2, 1), p.w2()(5, 2));
}

TEST(VariantConversion, ShrinkRanksByIncomingTimesOutgoingNorm) {
  MlpShape shape{2, 3, 2};
  MlpParameters p(shape);
  p.w1() << 1, 5, 2,  //
      0, 0, 0;
  p.w2().setIdentity();
  p.w3() << 3, 3,  //
      0.1f, 0.1f,  //
      1, 1;
  // Scores: unit 0: 1 * |(1,0,0)| = 1; unit 1: 5 * 1 = 5; unit 2: 2 * 1 = 2.
  EXPECT_EQ(strongest_first_layer_units(p, 2), (std::vector<int>{1, 2}));
  EXPECT_EQ(strongest_first_layer_units(p, 1), (std::vector<int>{1}));
}

TEST(VariantConversion, GrowKeepsTrainedUnitsAndStaysClose) {
  MlpShape shape{20, 8, 4};
  MlpParameters small(shape);
  initialise_parameters(small, 5);
  const MlpParameters big = convert_hidden_width(small, 32, 9);
  EXPECT_EQ(big.shape(), (MlpShape{20, 32, 4}));
  EXPECT_EQ(big.w1().leftCols(8), small.w1());
  EXPECT_EQ(big.w2().topLeftCorner(8, 8), small.w2());
  EXPECT_EQ(big.w3().topRows(8), small.w3());
  EXPECT_EQ(big.b3(), small.b3());
  EXPECT_GT(big.w1().rightCols(24).norm(), 0.0f);  // new units are initialised, not dead
  const RowMatrix x = random_inputs(16, 20, 3);
  const RowMatrix before = probabilities(small, x);
  const RowMatrix after = probabilities(big, x);
  EXPECT_LT((before - after).cwiseAbs().maxCoeff(), 1e-3f);
}

TEST(VariantConversion, ShrinkAfterGrowRecoversTheOriginal) {
  MlpShape shape{12, 6, 3};
  MlpParameters small(shape);
  initialise_parameters(small, 21);
  const MlpParameters back = convert_hidden_width(convert_hidden_width(small, 24, 4), 6, 0);
  ASSERT_EQ(back.shape(), shape);
  EXPECT_TRUE(std::equal(back.values().begin(), back.values().end(), small.values().begin()));
}

TEST(VariantConversion, SameWidthIsACopy) {
  MlpShape shape{4, 4, 2};
  MlpParameters p(shape);
  initialise_parameters(p, 1);
  const MlpParameters q = convert_hidden_width(p, 4, 99);
  EXPECT_TRUE(std::equal(p.values().begin(), p.values().end(), q.values().begin()));
}

}  // namespace
}  // namespace depl::worker
