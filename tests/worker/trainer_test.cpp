#include "depl/worker/trainer.hpp"

#include <gtest/gtest.h>

#include "depl/worker/fashion_mnist.hpp"
#include "test_support.hpp"

namespace depl::worker {
namespace {

using testing::small_test_table;
using testing::small_train_table;

MlpParameters fresh(int hidden, std::uint64_t seed) {
  MlpParameters p(MlpShape{784, hidden, kFashionMnistClasses});
  initialise_parameters(p, seed);
  return p;
}

TEST(Trainer, AShortRunLowersTheValidationLoss) {
  DEPL_REQUIRE_FASHION_MNIST();
  const SampleSet train = leading_rows(small_train_table(), 1000);
  const SampleSet validation = leading_rows(small_test_table(), 500);
  auto single = make_single_rank_all_reduce();
  Trainer trainer(fresh(64, 1), {64, {0.05f, 0.9f}, 1}, *single);
  const Evaluation before = trainer.evaluate(validation);
  double last_train = 1e9;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    auto loss = trainer.train_epoch(train, epoch);
    ASSERT_TRUE(loss) << loss.error().message;
    last_train = *loss;
  }
  const Evaluation after = trainer.evaluate(validation);
  EXPECT_GT(before.loss, 2.0);  // about log(10) for an untrained net
  EXPECT_LT(after.loss, 0.75 * before.loss);
  EXPECT_LT(last_train, 1.0);
  EXPECT_GT(after.accuracy, 0.6);
}

TEST(Trainer, ResumingFromParametersAndVelocityContinuesExactly) {
  DEPL_REQUIRE_FASHION_MNIST();
  const SampleSet train = leading_rows(small_train_table(), 300);
  auto single = make_single_rank_all_reduce();
  const TrainingOptions options{50, {0.05f, 0.9f}, 4};

  Trainer straight(fresh(32, 2), options, *single);
  for (int e = 1; e <= 3; ++e) ASSERT_TRUE(straight.train_epoch(train, e));

  Trainer first(fresh(32, 2), options, *single);
  for (int e = 1; e <= 2; ++e) ASSERT_TRUE(first.train_epoch(train, e));
  Trainer resumed(first.parameters(), options, *single);
  std::copy(first.optimizer().velocity().begin(), first.optimizer().velocity().end(),
            resumed.optimizer().velocity().begin());
  ASSERT_TRUE(resumed.train_epoch(train, 3));

  const auto a = straight.parameters().values();
  const auto b = resumed.parameters().values();
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
}

TEST(Trainer, TheSeedChangesTheShuffle) {
  DEPL_REQUIRE_FASHION_MNIST();
  const SampleSet train = leading_rows(small_train_table(), 200);
  auto single = make_single_rank_all_reduce();
  Trainer a(fresh(16, 1), {20, {0.05f, 0.9f}, 1}, *single);
  Trainer b(fresh(16, 1), {20, {0.05f, 0.9f}, 2}, *single);
  ASSERT_TRUE(a.train_epoch(train, 1));
  ASSERT_TRUE(b.train_epoch(train, 1));
  const auto pa = a.parameters().values();
  const auto pb = b.parameters().values();
  EXPECT_FALSE(std::equal(pa.begin(), pa.end(), pb.begin()));
}

}  // namespace
}  // namespace depl::worker
