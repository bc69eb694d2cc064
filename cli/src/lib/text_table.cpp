#include "depl/cli/text_table.hpp"

#include <algorithm>

namespace depl::cli {

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++width;  // count lead bytes, not continuation bytes
  }
  return width;
}

TextTable::TextTable(std::vector<std::string> headers)
    : headers_(std::move(headers)), alignments_(headers_.size(), Align::Left) {}

void TextTable::align(std::size_t column, Align alignment) {
  if (column < alignments_.size()) alignments_[column] = alignment;
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(int indent) const {
  std::vector<std::size_t> widths(headers_.size(), 0);
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = display_width(headers_[c]);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line(static_cast<std::size_t>(std::max(indent, 0)), ' ');
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(widths[c] - display_width(cells[c]), ' ');
      const bool last = c + 1 == cells.size();
      if (alignments_[c] == Align::Right) {
        line += pad + cells[c];
      } else {
        line += cells[c];
        if (!last) line += pad;
      }
      if (!last) line += "   ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  };
  emit(headers_);
  for (const auto& row : rows_) emit(row);
  return out;
}

}  // namespace depl::cli
