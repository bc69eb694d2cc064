#include "depl/worker/shards.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace depl::worker {
namespace {

ImageTable table_of(int rows) {
  ImageTable t;
  t.count = rows;
  t.pixels = 1;
  for (int i = 0; i < rows; ++i) {
    t.images.push_back(static_cast<std::uint8_t>(i % 256));
    t.labels.push_back(static_cast<std::uint8_t>(i % 10));
  }
  return t;
}

TEST(Shards, EqualShardsAreDisjointAndNamed) {
  auto layout = equal_shards(6, 60000);
  ASSERT_TRUE(layout);
  ASSERT_EQ(layout->shards.size(), 6u);
  EXPECT_EQ(layout->shards[0].name, "shard0");
  EXPECT_EQ(layout->shards[5].first, 50000);
  EXPECT_EQ(layout->shards[5].count, 10000);
  EXPECT_FALSE(equal_shards(0, 10));
  EXPECT_FALSE(equal_shards(11, 10));
}

TEST(Shards, SelectionFollowsTheGivenOrder) {
  const ImageTable t = table_of(60);
  auto layout = equal_shards(3, 60);
  auto set = select_shards(t, *layout, {"shard2", "shard0"}, 10);
  ASSERT_TRUE(set) << set.error().message;
  ASSERT_EQ(set->size(), 40);
  EXPECT_EQ(set->rows.front(), 40);
  EXPECT_EQ(set->rows[20], 0);
  EXPECT_EQ(set->labels[1], 1);  // row 41: no noise declared, true label
}

TEST(Shards, UnknownOrRepeatedShardsAreErrors) {
  const ImageTable t = table_of(60);
  auto layout = equal_shards(3, 60);
  auto unknown = select_shards(t, *layout, {"shard7"}, 10);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'shard7'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("shard0, shard1, shard2"), std::string::npos);
  EXPECT_FALSE(select_shards(t, *layout, {"shard1", "shard1"}, 10));
  EXPECT_FALSE(select_shards(t, *layout, {}, 10));
}

TEST(Shards, LabelNoiseReplacesExactlyTheDeclaredFraction) {
  const ImageTable t = table_of(2000);
  auto layout = equal_shards(2, 2000);
  ASSERT_TRUE(apply_label_noise(*layout, "shard1=0.3"));
  auto set = select_shards(t, *layout, {"shard0", "shard1"}, 10);
  ASSERT_TRUE(set);
  int changed_clean = 0;
  int changed_noisy = 0;
  for (int i = 0; i < set->size(); ++i) {
    const bool changed = set->labels[static_cast<std::size_t>(i)] !=
                         t.labels[static_cast<std::size_t>(set->rows[static_cast<std::size_t>(i)])];
    (i < 1000 ? changed_clean : changed_noisy) += changed ? 1 : 0;
    EXPECT_LT(set->labels[static_cast<std::size_t>(i)], 10);
  }
  EXPECT_EQ(changed_clean, 0);
  EXPECT_EQ(changed_noisy, 300);
}

TEST(Shards, LabelNoiseIsDeterministicAndIndependentOfSelection) {
  const ImageTable t = table_of(2000);
  auto layout = equal_shards(2, 2000);
  ASSERT_TRUE(apply_label_noise(*layout, "shard0=0.5, shard1=0.5"));
  auto a = select_shards(t, *layout, {"shard1"}, 10);
  auto b = select_shards(t, *layout, {"shard0", "shard1"}, 10);
  ASSERT_TRUE(a && b);
  // The same shard gets the same noisy labels whichever other shards are selected.
  EXPECT_TRUE(std::equal(a->labels.begin(), a->labels.end(), b->labels.begin() + 1000));
  // Another noise seed is another dataset.
  layout->noise_seed += 1;
  auto c = select_shards(t, *layout, {"shard1"}, 10);
  EXPECT_NE(a->labels, c->labels);
}

TEST(Shards, LabelNoiseSpecErrorsNameTheProblem) {
  auto layout = equal_shards(2, 100);
  auto unknown = apply_label_noise(*layout, "dirty=0.2");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'dirty'"), std::string::npos);
  auto range = apply_label_noise(*layout, "shard0=1.5");
  ASSERT_FALSE(range);
  EXPECT_NE(range.error().message.find("'1.5'"), std::string::npos);
  EXPECT_FALSE(apply_label_noise(*layout, "shard0"));
}

TEST(Shards, ShardsFileDeclaresNamedShardsWithNoise) {
  testing::TempDir dir;
  {
    std::ofstream out(dir.file("shards.json"));
    out << R"({"noiseSeed": 3, "shards": [{"name": "clean-a", "samples": 30},
             {"name": "noisy-b", "samples": 20, "labelNoise": 0.5}]})";
  }
  auto layout = shard_layout_from_spec(dir.file("shards.json"), 100);
  ASSERT_TRUE(layout) << layout.error().message;
  EXPECT_EQ(layout->noise_seed, 3u);
  ASSERT_EQ(layout->shards.size(), 2u);
  EXPECT_EQ(layout->shards[1].first, 30);
  EXPECT_DOUBLE_EQ(layout->shards[1].label_noise, 0.5);
  EXPECT_EQ(*rows_needed(*layout, {"noisy-b"}), 50);
}

// kubectl-depl profile --in-cluster passes its layout as an argument: the file's text inline.
TEST(Shards, InlineShardsJsonIsTheFileItself) {
  auto layout = shard_layout_from_spec(R"({"shards":[{"name":"profile","samples":40}]})", 100);
  ASSERT_TRUE(layout) << layout.error().message;
  ASSERT_EQ(layout->shards.size(), 1u);
  EXPECT_EQ(layout->shards[0].name, "profile");
  EXPECT_EQ(layout->shards[0].count, 40);
  auto bad = shard_layout_from_spec(R"({"shards":[{"name":"a","samples":400}]})", 100);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("inline shards JSON"), std::string::npos)
      << bad.error().message;
}

TEST(Shards, ShardsFileErrorsNameTheField) {
  auto too_big = parse_shards_json(
      R"({"shards":[{"name":"a","samples":80},{"name":"b","samples":30}]})", 100, "f.json");
  ASSERT_FALSE(too_big);
  EXPECT_NE(too_big.error().message.find("'b' ends at row 110"), std::string::npos)
      << too_big.error().message;
  auto no_samples = parse_shards_json(R"({"shards":[{"name":"a"}]})", 100, "f.json");
  ASSERT_FALSE(no_samples);
  EXPECT_NE(no_samples.error().message.find("f.json: shards[0].samples"), std::string::npos);
  auto noise =
      parse_shards_json(R"({"shards":[{"name":"a","samples":5,"labelNoise":2}]})", 100, "f.json");
  ASSERT_FALSE(noise);
  EXPECT_NE(noise.error().message.find("labelNoise"), std::string::npos);
  EXPECT_FALSE(parse_shards_json("{", 100, "f.json"));
  EXPECT_FALSE(parse_shards_json(
      R"({"shards":[{"name":"a","samples":5},{"name":"a","samples":5}]})", 100, "f.json"));
  auto neither = shard_layout_from_spec("/nonexistent/shards.json", 100);
  ASSERT_FALSE(neither);
  EXPECT_NE(neither.error().message.find("neither a shard count"), std::string::npos);
}

}  // namespace
}  // namespace depl::worker
