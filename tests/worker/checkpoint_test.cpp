#include "depl/worker/checkpoint.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace depl::worker {
namespace {

Checkpoint sample_checkpoint() {
  Checkpoint c;
  c.variant = "quarter";
  c.width = 0.25;
  c.epoch = 7;
  c.parameters = MlpParameters(MlpShape{9, 4, 3});
  initialise_parameters(c.parameters, 3);
  c.velocity.assign(c.parameters.values().size(), 0.5f);
  return c;
}

void flip_byte(const std::string& path, std::streamoff from_end) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-from_end, std::ios::end);
  char b = 0;
  f.read(&b, 1);
  f.seekp(-from_end, std::ios::end);
  b = static_cast<char>(b ^ 0x40);
  f.write(&b, 1);
}

TEST(Checkpoint, RoundTripsEveryField) {
  testing::TempDir dir;
  const Checkpoint c = sample_checkpoint();
  const std::string path = checkpoint_path(dir.file("nested/ckpt"));
  ASSERT_TRUE(write_checkpoint(path, c));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  auto back = read_checkpoint(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->variant, "quarter");
  EXPECT_DOUBLE_EQ(back->width, 0.25);
  EXPECT_EQ(back->epoch, 7);
  EXPECT_EQ(back->parameters.shape(), c.parameters.shape());
  EXPECT_TRUE(std::equal(back->parameters.values().begin(), back->parameters.values().end(),
                         c.parameters.values().begin()));
  EXPECT_EQ(back->velocity, c.velocity);
}

TEST(Checkpoint, KeepsThePositionWithinAnInterruptedEpoch) {
  testing::TempDir dir;
  Checkpoint c = sample_checkpoint();
  c.step = 300;
  c.train_loss_sum = 123.25;
  ASSERT_TRUE(write_checkpoint(dir.file("c"), c));
  auto back = read_checkpoint(dir.file("c"));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->epoch, 7);
  EXPECT_EQ(back->step, 300);
  EXPECT_DOUBLE_EQ(back->train_loss_sum, 123.25);
}

// A version 1 file (written before the position existed) reads as a whole epoch.
TEST(Checkpoint, ReadsVersionOneWithoutAPosition) {
  testing::TempDir dir;
  Checkpoint c = sample_checkpoint();
  c.step = 300;
  ASSERT_TRUE(write_checkpoint(dir.file("c"), c));
  {
    std::fstream f(dir.file("c"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    const char version[4] = {1, 0, 0, 0};
    f.write(version, 4);
  }
  auto back = read_checkpoint(dir.file("c"));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->epoch, 7);
  EXPECT_EQ(back->step, 0);
}

TEST(Checkpoint, VelocityMayBeAbsent) {
  testing::TempDir dir;
  Checkpoint c = sample_checkpoint();
  c.velocity.clear();
  ASSERT_TRUE(write_checkpoint(dir.file("c"), c));
  auto back = read_checkpoint(dir.file("c"));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->velocity.empty());
}

TEST(Checkpoint, CorruptPayloadIsDetected) {
  testing::TempDir dir;
  ASSERT_TRUE(write_checkpoint(dir.file("c"), sample_checkpoint()));
  flip_byte(dir.file("c"), 10);
  auto back = read_checkpoint(dir.file("c"));
  ASSERT_FALSE(back);
  EXPECT_NE(back.error().message.find("CRC-32 mismatch"), std::string::npos);
  EXPECT_NE(back.error().message.find(dir.file("c")), std::string::npos);
}

TEST(Checkpoint, TruncatedFileIsDetected) {
  testing::TempDir dir;
  ASSERT_TRUE(write_checkpoint(dir.file("c"), sample_checkpoint()));
  std::filesystem::resize_file(dir.file("c"), std::filesystem::file_size(dir.file("c")) - 4);
  auto back = read_checkpoint(dir.file("c"));
  ASSERT_FALSE(back);
  EXPECT_NE(back.error().message.find("truncated"), std::string::npos) << back.error().message;
}

TEST(Checkpoint, ForeignOrFutureFilesAreRejected) {
  testing::TempDir dir;
  {
    std::ofstream out(dir.file("junk"));
    out << "this is not a checkpoint at all";
  }
  auto junk = read_checkpoint(dir.file("junk"));
  ASSERT_FALSE(junk);
  EXPECT_NE(junk.error().message.find("bad magic"), std::string::npos);

  ASSERT_TRUE(write_checkpoint(dir.file("v"), sample_checkpoint()));
  {
    std::fstream f(dir.file("v"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    const char version[4] = {9, 0, 0, 0};
    f.write(version, 4);
  }
  auto future = read_checkpoint(dir.file("v"));
  ASSERT_FALSE(future);
  EXPECT_NE(future.error().message.find("version 9"), std::string::npos);

  auto missing = read_checkpoint(dir.file("absent"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos);
}

TEST(Checkpoint, HeaderThatDisagreesWithTheShapeIsRejected) {
  testing::TempDir dir;
  ASSERT_TRUE(write_checkpoint(dir.file("c"), sample_checkpoint()));
  std::ifstream in(dir.file("c"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const auto at = bytes.find("\"hidden\":4");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 9] = '5';
  std::ofstream(dir.file("c"), std::ios::binary) << bytes;
  auto back = read_checkpoint(dir.file("c"));
  ASSERT_FALSE(back);
  EXPECT_NE(back.error().message.find("parameterCount"), std::string::npos) << back.error().message;
}

}  // namespace
}  // namespace depl::worker
