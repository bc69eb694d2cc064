#include "depl/common/quantity.hpp"

#include <gtest/gtest.h>

namespace depl {
namespace {

TEST(Quantity, PlainAndDecimalSuffixes) {
  EXPECT_DOUBLE_EQ(*parse_quantity("42"), 42);
  EXPECT_DOUBLE_EQ(*parse_quantity("1.25G"), 1.25e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("500m"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_quantity("2k"), 2000);
  EXPECT_DOUBLE_EQ(*parse_quantity("+3M"), 3e6);
  EXPECT_DOUBLE_EQ(*parse_quantity("-1"), -1);
}

TEST(Quantity, BinarySuffixes) {
  EXPECT_DOUBLE_EQ(*parse_quantity("40Gi"), 40.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*parse_quantity("1Ki"), 1024);
  EXPECT_DOUBLE_EQ(*parse_quantity("1.5Mi"), 1.5 * 1024 * 1024);
}

TEST(Quantity, Exponents) {
  EXPECT_DOUBLE_EQ(*parse_quantity("1e3"), 1000);
  EXPECT_DOUBLE_EQ(*parse_quantity("12E-2"), 0.12);
}

TEST(Quantity, RejectsGarbageWithAReason) {
  for (const char* bad : {"", "Gi", "1.2.3", "10GB", "abc", "1e", "1e999", "--1", "1 Gi"}) {
    auto q = parse_quantity(bad);
    ASSERT_FALSE(q.has_value()) << bad;
    EXPECT_NE(q.error().message.find("quantity"), std::string::npos) << q.error().message;
  }
}

TEST(Quantity, FormatsBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(40.0 * 1024 * 1024 * 1024), "40 GiB");
}

}  // namespace
}  // namespace depl
