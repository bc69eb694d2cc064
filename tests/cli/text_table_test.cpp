#include "depl/cli/text_table.hpp"

#include <gtest/gtest.h>

namespace depl::cli {
namespace {

TEST(TextTable, AlignsColumnsAndTrimsTrailingSpace) {
  TextTable t({"NAME", "N", "NOTE"});
  t.align(1, TextTable::Align::Right);
  t.add_row({"a", "5", "x"});
  t.add_row({"longer", "1234", ""});
  EXPECT_EQ(t.render(2),
            "  NAME        N   NOTE\n"
            "  a           5   x\n"
            "  longer   1234\n");
}

TEST(TextTable, CountsUtf8CharactersNotBytes) {
  EXPECT_EQ(display_width("0.41 ± 0.01"), 11u);
  TextTable t({"A", "B"});
  t.add_row({"±", "x"});
  EXPECT_EQ(t.render(), "A   B\n±   x\n");
}

TEST(TextTable, MissingCellsAreBlank) {
  TextTable t({"A", "B"});
  t.add_row({"1"});
  EXPECT_EQ(t.render(), "A   B\n1\n");
}

}  // namespace
}  // namespace depl::cli
