// Column-aligned plain-text tables in the style of `kubectl get`: upper-case headers, columns
// separated by three spaces, numbers right-aligned. Used by every table the CLI prints.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace depl::cli {

class TextTable {
 public:
  enum class Align { Left, Right };

  explicit TextTable(std::vector<std::string> headers);
  // Alignment of column `column` (default Left).
  void align(std::size_t column, Align alignment);
  // A row with as many cells as there are headers (missing cells are blank, extra ones dropped).
  void add_row(std::vector<std::string> cells);
  // The table, each line indented by `indent` spaces and ending with '\n'.
  std::string render(int indent = 0) const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> alignments_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of UTF-8 text (code points; the CLI prints no wide characters).
std::size_t display_width(std::string_view text);

}  // namespace depl::cli
