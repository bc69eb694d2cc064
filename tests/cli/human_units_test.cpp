// Human units for the table output: durations, money, counts, probabilities.
#include "depl/cli/human_units.hpp"

#include <gtest/gtest.h>
#include <cmath>
#include <limits>

namespace depl::cli {
namespace {

TEST(FormatDuration, SecondsMinutesHoursDays) {
  EXPECT_EQ(format_duration(0), "0.0s");
  EXPECT_EQ(format_duration(4.24), "4.2s");
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(65), "1m 05s");
  EXPECT_EQ(format_duration(12 * 60 + 5.4), "12m 05s");
  EXPECT_EQ(format_duration(3600 + 12 * 60 + 29), "1h 12m");
  EXPECT_EQ(format_duration(3600 + 12 * 60 + 31), "1h 13m");
  EXPECT_EQ(format_duration(2 * 86400 + 3 * 3600 + 100), "2d 03h");
  EXPECT_EQ(format_duration(-65), "-1m 05s");
}

TEST(FormatDuration, RoundingCarriesIntoTheNextUnit) {
  EXPECT_EQ(format_duration(59.7), "1m 00s");
  EXPECT_EQ(format_duration(3599.6), "1h 00m");
  EXPECT_EQ(format_duration(3600 * 24 - 10), "1d 00h");
  EXPECT_EQ(format_duration(9.96), "10s");
}

TEST(FormatDuration, NonFinite) {
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_duration(std::nan("")), "nan");
}

TEST(FormatMoney, SeparatorsAndSignificantDigits) {
  EXPECT_EQ(format_money(0), "0.00");
  EXPECT_EQ(format_money(1234.5), "1,234.50");
  EXPECT_EQ(format_money(1234567.891), "1,234,567.89");
  EXPECT_EQ(format_money(12.345), "12.35");  // 12.345 is stored a hair above .345
  EXPECT_EQ(format_money(0.0924), "0.0924");
  EXPECT_EQ(format_money(0.5), "0.500");
  EXPECT_EQ(format_money(0.00123456), "0.00123");
  EXPECT_EQ(format_money(0.999), "1.00");
  EXPECT_EQ(format_money(-2.5), "-2.50");
}

TEST(FormatCount, ThousandsSeparators) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(20000), "20,000");
  EXPECT_EQ(format_count(-1234567), "-1,234,567");
}

TEST(FormatProbability, NeverRoundsToACertainty) {
  EXPECT_EQ(format_probability(0.91234), "0.9123");
  EXPECT_EQ(format_probability(0.999999), "> 0.9999");
  EXPECT_EQ(format_probability(1e-7), "< 0.0001");
  EXPECT_EQ(format_probability(1.0), "1");
  EXPECT_EQ(format_probability(0.0), "0");
}

}  // namespace
}  // namespace depl::cli
