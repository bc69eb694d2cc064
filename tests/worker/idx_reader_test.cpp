#include "depl/worker/idx_reader.hpp"

#include <gtest/gtest.h>

#include "depl/worker/fashion_mnist.hpp"
#include "test_support.hpp"

namespace depl::worker {
namespace {

using testing::idx_bytes;
using testing::TempDir;
using testing::write_bytes;

// Three 2x2 images with pixel values 0..11 and labels 2, 0, 9.
void write_tiny_set(const TempDir& dir, const std::string& prefix, bool gzip) {
  std::vector<std::uint8_t> pixels(12);
  for (int i = 0; i < 12; ++i) pixels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  write_bytes(dir.file(prefix + "-images-idx3-ubyte" + (gzip ? ".gz" : "")),
              idx_bytes(0x08, {3, 2, 2}, pixels), gzip);
  write_bytes(dir.file(prefix + "-labels-idx1-ubyte" + (gzip ? ".gz" : "")),
              idx_bytes(0x08, {3}, {2, 0, 9}), gzip);
}

TEST(IdxReader, ReadsPlainAndGzipFilesAlike) {
  for (bool gzip : {false, true}) {
    TempDir dir;
    write_tiny_set(dir, "t10k", gzip);
    auto table = load_fashion_mnist(dir.path(), DataSplit::Test);
    ASSERT_TRUE(table) << table.error().message;
    EXPECT_EQ(table->count, 3);
    EXPECT_EQ(table->pixels, 4);
    EXPECT_EQ(table->labels, (std::vector<std::uint8_t>{2, 0, 9}));
    EXPECT_EQ(table->image(2)[3], 11);
  }
}

TEST(IdxReader, MaxItemsReadsOnlyALeadingSubset) {
  TempDir dir;
  write_tiny_set(dir, "train", true);
  auto table = load_fashion_mnist(dir.path(), DataSplit::Train, 2);
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_EQ(table->count, 2);
  EXPECT_EQ(table->images.size(), 8u);
  auto array = read_idx_file(dir.file("train-images-idx3-ubyte.gz"), 1);
  ASSERT_TRUE(array);
  EXPECT_EQ(array->dimensions, (std::vector<std::uint32_t>{3, 2, 2}));  // as declared
  EXPECT_EQ(array->data.size(), 4u);
}

TEST(IdxReader, RejectsABadMagicNumber) {
  TempDir dir;
  write_bytes(dir.file("x"), {0x1f, 0x00, 0x08, 0x01, 0, 0, 0, 1, 7}, false);
  auto array = read_idx_file(dir.file("x"));
  ASSERT_FALSE(array);
  EXPECT_NE(array.error().message.find("not an IDX file"), std::string::npos);
  EXPECT_NE(array.error().message.find(dir.file("x")), std::string::npos);
}

TEST(IdxReader, RejectsElementTypesOtherThanUnsignedByte) {
  TempDir dir;
  write_bytes(dir.file("x"), idx_bytes(0x0D, {1}, {0, 0, 0, 0}), true);
  auto array = read_idx_file(dir.file("x"));
  ASSERT_FALSE(array);
  EXPECT_NE(array.error().message.find("0x0d"), std::string::npos) << array.error().message;
}

TEST(IdxReader, RejectsTruncatedData) {
  TempDir dir;
  write_bytes(dir.file("x.gz"), idx_bytes(0x08, {3, 2, 2}, {1, 2, 3, 4, 5}), true);
  auto array = read_idx_file(dir.file("x.gz"));
  ASSERT_FALSE(array);
  EXPECT_NE(array.error().message.find("truncated"), std::string::npos) << array.error().message;
  write_bytes(dir.file("y"), {0, 0, 8, 3, 0, 0}, false);
  auto header = read_idx_file(dir.file("y"));
  ASSERT_FALSE(header);
  EXPECT_NE(header.error().message.find("truncated IDX header"), std::string::npos);
}

TEST(IdxReader, RejectsAMissingFile) {
  auto array = read_idx_file("/nonexistent/depl/file.gz");
  ASSERT_FALSE(array);
  EXPECT_NE(array.error().message.find("/nonexistent/depl/file.gz"), std::string::npos);
  auto table = load_fashion_mnist("/nonexistent/depl", DataSplit::Train);
  ASSERT_FALSE(table);
  EXPECT_NE(table.error().message.find("dataset-fashion-mnist"), std::string::npos);
}

TEST(IdxReader, RejectsImagesAndLabelsThatDisagree) {
  TempDir dir;
  write_bytes(dir.file("i"), idx_bytes(0x08, {2, 1, 1}, {1, 2}), false);
  write_bytes(dir.file("l"), idx_bytes(0x08, {3}, {1, 2, 3}), false);
  auto table = read_labeled_images(dir.file("i"), dir.file("l"), 10);
  ASSERT_FALSE(table);
  EXPECT_NE(table.error().message.find("2 images"), std::string::npos) << table.error().message;

  write_bytes(dir.file("l2"), idx_bytes(0x08, {2}, {1, 10}), false);
  auto bad_label = read_labeled_images(dir.file("i"), dir.file("l2"), 10);
  ASSERT_FALSE(bad_label);
  EXPECT_NE(bad_label.error().message.find("label 10"), std::string::npos);

  auto swapped = read_labeled_images(dir.file("l"), dir.file("i"), 10);
  ASSERT_FALSE(swapped);
  EXPECT_NE(swapped.error().message.find("3 dimensions"), std::string::npos);
}

TEST(IdxReader, ReadsTheInstalledFashionMnist) {
  DEPL_REQUIRE_FASHION_MNIST();
  auto test = load_fashion_mnist(kDefaultFashionMnistDir, DataSplit::Test, 500);
  ASSERT_TRUE(test) << test.error().message;
  EXPECT_EQ(test->count, 500);
  EXPECT_EQ(test->pixels, 784);
  // The first test item of Fashion-MNIST is an ankle boot (class 9).
  EXPECT_EQ(test->labels[0], 9);
}

}  // namespace
}  // namespace depl::worker
