#include "depl/common/significant.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace depl {
namespace {

TEST(FormatSignificant, KeepsTheDigitsAskedForInFixedNotation) {
  EXPECT_EQ(format_significant(0.444352511658695, 4), "0.4444");
  EXPECT_EQ(format_significant(1.2440797475555556, 3), "1.24");
  EXPECT_EQ(format_significant(0.000123456, 4), "0.0001235");
  EXPECT_EQ(format_significant(1234.6, 3), "1235");  // no exponent; integer digits kept
  EXPECT_EQ(format_significant(0.99996, 4), "1.000");
  EXPECT_EQ(format_significant(9.9996, 4), "10.00");
  EXPECT_EQ(format_significant(-0.0123456, 3), "-0.0123");
  EXPECT_EQ(format_significant(0, 4), "0");
  EXPECT_EQ(format_significant(0.9, 4), "0.9000");
}

TEST(FormatSignificant, NonFiniteValuesPrintAsThemselves) {
  EXPECT_EQ(format_significant(std::numeric_limits<double>::infinity(), 4), "inf");
  EXPECT_EQ(format_significant(std::numeric_limits<double>::quiet_NaN(), 4), "nan");
}

}  // namespace
}  // namespace depl
