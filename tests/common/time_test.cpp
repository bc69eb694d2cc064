#include "depl/common/time.hpp"

#include <gtest/gtest.h>

namespace depl {
namespace {

using namespace std::chrono_literals;
using std::chrono::sys_days;

TEST(Rfc3339, FormatsUtcWithWholeSecondsOrMicroseconds) {
  const auto t = sys_days(std::chrono::year(2026) / 11 / 22) + 5h + 4min + 3s + 123456789ns;
  const auto at = std::chrono::time_point_cast<std::chrono::system_clock::duration>(t);
  EXPECT_EQ(format_rfc3339(at), "2026-11-22T05:04:03Z");
  EXPECT_EQ(format_rfc3339_micro(at), "2026-11-22T05:04:03.123456Z");
  EXPECT_EQ(format_rfc3339(sys_days(std::chrono::year(1999) / 12 / 31) + 23h + 59min + 59s),
            "1999-12-31T23:59:59Z");
}

TEST(Rfc3339, FormatsUnixSecondsOverTheYearsRfc3339CanWrite) {
  EXPECT_EQ(format_rfc3339_unix(0, 0, false), "1970-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339_unix(1795323843, 123456789, false), "2026-11-22T05:04:03Z");
  EXPECT_EQ(format_rfc3339_unix(1795323843, 123456789, true), "2026-11-22T05:04:03.123456Z");
  EXPECT_EQ(format_rfc3339_unix(-1, 999999999, true), "1969-12-31T23:59:59.999999Z");
  // Past what a system_clock time_point holds (about 1678-2262), within what RFC 3339 writes.
  EXPECT_EQ(format_rfc3339_unix(-62167219200, 0, false), "0000-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339_unix(253402300799, 0, false), "9999-12-31T23:59:59Z");
  EXPECT_EQ(format_rfc3339_unix(-62135596800, 0, false), "0001-01-01T00:00:00Z");
  // The same instant as the time_point formatter gives, where both apply.
  const auto at = sys_days(std::chrono::year(2001) / 2 / 3) + 4h + 5min + 6s;
  EXPECT_EQ(format_rfc3339_unix(at.time_since_epoch().count(), 0, false), format_rfc3339(at));
  EXPECT_EQ(format_rfc3339_unix(-62167219201, 0, false), std::nullopt);
  EXPECT_EQ(format_rfc3339_unix(253402300800, 0, false), std::nullopt);
  EXPECT_EQ(format_rfc3339_unix(INT64_MAX, 0, false), std::nullopt);
  EXPECT_EQ(format_rfc3339_unix(INT64_MIN, 0, false), std::nullopt);
  EXPECT_EQ(format_rfc3339_unix(0, -1, false), std::nullopt);
  EXPECT_EQ(format_rfc3339_unix(0, 1000000000, true), std::nullopt);
}

TEST(Rfc3339, ParsesZuluOffsetsAndFractions) {
  const auto base = sys_days(std::chrono::year(2026) / 1 / 1);
  EXPECT_EQ(parse_rfc3339("2026-01-01T00:00:00Z"), base);
  EXPECT_EQ(parse_rfc3339("2026-01-01t00:00:00z"), base);
  EXPECT_EQ(parse_rfc3339("2026-01-01T01:00:00+01:00"), base);
  EXPECT_EQ(parse_rfc3339("2025-12-31T23:30:00-00:30"), base);
  EXPECT_EQ(parse_rfc3339("2026-01-01T00:00:00.5Z"), base + 500ms);
  EXPECT_FALSE(parse_rfc3339("2026-02-30T00:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2026-01-01 00:00:00"));
  EXPECT_FALSE(parse_rfc3339("2026-01-01T00:00:00"));
  EXPECT_FALSE(parse_rfc3339("2026-01-01T00:00:00.Z"));
  EXPECT_FALSE(parse_rfc3339("2026-01-01T00:00:00Zjunk"));
  EXPECT_FALSE(parse_rfc3339(""));
}

TEST(Rfc3339, WhatIsFormattedParsesBack) {
  const auto t = sys_days(std::chrono::year(2031) / 2 / 28) + 13h + 7s;
  EXPECT_EQ(parse_rfc3339(format_rfc3339(t)), t);
  EXPECT_EQ(parse_rfc3339(format_rfc3339_micro(t + 250us)), t + 250us);
}

}  // namespace
}  // namespace depl
